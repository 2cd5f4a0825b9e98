"""The advisor: which setting of the pipeline's operators to try, from the what-if model
(perfstudy.decide.whatif) of ONE run: its prediction at every setting, the pick (the cheapest
setting within 5 % of the best predicted), how a setting is said, how far each operator's own setting moves the step,
and the advice in words (`Advice`, diagnosis.json's `advisor`). Frozen: the model is levelled
by making a new one, never by editing."""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, replace

import pandas as pd

from perfstudy.common.records import doc
from perfstudy.common.thresholds import WITHIN_BEST, pct
from perfstudy.decide.prediction_band import ErrorBand
from perfstudy.decide.whatif import (
    LEVEL_RANGE,
    Model,
    Prediction,
    Stage,
    candidates,
    canonical,
    current_settings,
    predict,
    rates,
    stage_options,
)
from perfstudy.run.settings import ADDRESSED, MP, Settings
from perfstudy.run.summary import RunSummary


@dataclass(frozen=True)
class Swing:
    """How far one operator's own setting moves the predicted step, the others kept as they run
    (perfstudy.decide.advisor.step_swing); the culprit's carries its CPU share."""

    label: str = doc("the operator, as the report names it")
    key: str = doc("the config key that sizes it")
    swing: float = doc("slowest / fastest predicted step - 1")
    slowest: Settings = doc("its setting with the slowest predicted step")
    slowest_ms: float = doc("that step (ms)")
    fastest: Settings = doc("its setting with the fastest predicted step")
    fastest_ms: float = doc("that step (ms)")
    cpu_ms_per_batch: float | None = doc("its CPU ms per batch at the current setting (the "
                                         "culprit's only)", default=None)
    pipeline_cpu_ms: float | None = doc("the whole pipeline's CPU ms per batch then",
                                        default=None)


@dataclass(frozen=True)
class CurvePoint:
    """The picked operator at one worker count (MLflow plots the curve)."""

    workers: int
    step_ms: float


@dataclass(frozen=True)
class Advice(Model):
    """diagnosis.json's `advisor`: the model, its prediction at every setting, and its pick."""

    now: Settings = doc("the run's own setting")
    predictions: list[Prediction] = doc("every setting predicted")
    pick: Settings = doc("the cheapest setting within 5 % of the best predicted")
    curve: list[CurvePoint] = doc("the picked operator's workers 1..CPUs, the others as picked")
    pick_key: str = doc("the picked operator's key")
    pick_workers: int | None = doc("its workers in the pick")
    predicted_best_ms: float = doc("the best predicted step")
    predicted_pick_ms: float = doc("the predicted step at the pick")
    predicted_now_ms: float = doc("the predicted step at the run's own setting")
    pick_binding: str = doc("what binds at the pick")
    now_binding: str = doc("what binds at the run's own setting")
    now_slowest_stage: str = doc("the slowest stage at the run's own setting")
    gain: float = doc("predicted now / pick - 1")
    now_error: float = doc("(predicted now - measured) / measured; measured: the median of the "
                           "run's window and its verification rounds' windows of its own setting")
    sentence: str = doc("the prediction in words")
    pick_is_recommendation: bool = doc("the pick is the answer's setting (else measurement "
                                       "overruled it, or no verdict was issued)", default=True)
    role: str = doc("what the model is to the answer", default="")
    band: ErrorBand | None = doc("the model's error band (perfstudy.decide.prediction_band: "
                                 "measured / predicted at its level, from recorded sweeps; "
                                 "None: no band shipped)", default=None)

    def interval(self, step_ms: float) -> tuple[float | None, float | None]:
        """Where the measured step at a setting predicted `step_ms` falls (the band's level);
        (None, None) without a band."""
        return self.band.step_interval(step_ms) if self.band else (None, None)

    @classmethod
    def of(cls, model: Model, **fields) -> Advice:
        """The advice on `model`: its fields, and the prediction's (`fields`)."""
        return cls(**{f.name: getattr(model, f.name) for f in dataclasses.fields(Model)}, **fields)


def _own_round_steps(summary: RunSummary) -> list[float]:
    """The verification rounds' steady windows of the run's own setting (plan[0])."""
    rounds = summary.verification.rounds if summary.verification else None
    return [v.window.step_ms for v in (rounds.kept() if rounds else [])
            if v.setting == 0 and v.window.step_ms]


def own_step_ms(summary: RunSummary) -> float:
    """The run's own setting's step: the median of its measured window and, once the
    verification ran, each of its rounds' windows of the own setting."""
    return statistics.median([summary.steady_step_ms, *_own_round_steps(summary)])


def step_swing(model: Model, stage: Stage) -> Swing:
    """How far one operator's own setting moves the predicted step, the others kept as they
    run: its slowest and fastest setting, and slowest / fastest - 1 (the `swing`)."""
    rows = [predict(model, option) for option in stage_options(model, stage)]
    slow = max(rows, key=lambda r: r.step_ms)
    fast = min(rows, key=lambda r: r.step_ms)
    return Swing(stage.label, stage.key, slow.step_ms / fast.step_ms - 1, slow.settings,
                 slow.step_ms, fast.settings, fast.step_ms)


def cost(settings: Settings, now: Settings) -> tuple:
    """What a setting costs, to find "the cheapest setting" (the smallest key wins): no change
    at all first, then the fewest workers, the fewest operators in processes, the fewest
    changed keys. The model's pick and the verification's choice both rank by it."""
    workers = sum(v for k, v in settings.items() if not k.endswith(MP))
    processes = sum(1 for k, v in settings.items() if k.endswith(MP) and v)
    changes = sum(1 for k in set(settings) | set(now) if settings.get(k) != now.get(k))
    return (changes > 0, workers, processes, changes)


def describe_settings(settings: Settings, model: Model) -> str:
    """'pipeline.extra_transform_workers=2 with python_multiprocessing' etc., sized keys only."""
    words = []
    for stage in model.stages:
        text = f"{stage.key}={settings.get(stage.key, stage.workers_now)}"
        if settings.get(stage.key + MP):
            text += " in processes (python_multiprocessing=True)"
        words.append(text)
    return ", ".join(words)


def advise(summary: RunSummary, ops: pd.DataFrame | None, band: ErrorBand | None = None) -> Advice:
    """diagnosis.json's `advisor`: the model, its prediction for every setting, the pick, and
    (given a `band`) the interval each prediction carries."""
    model = rates(summary, ops)
    now = current_settings(model)
    # The model gives the shape across settings; the run's own measured step gives the level
    # (what it leaves out, e.g. the cores' oversubscription, scales with the step): the median
    # of every measurement of it, its window and its verification rounds' windows, so that one
    # window's noise does not carry into every prediction.
    raw_row = predict(model, now)
    raw = raw_row.model_step_ms
    measured = own_step_ms(summary)
    level = measured / raw if raw > 0 else 1.0
    slowest = model.stage(raw_row.slowest_stage)
    if raw_row.binding == "pipeline" and slowest is not None and slowest.kind == "probed":
        # the step is set by an operator measured alone at this very setting: sharing the cores
        # with the network cannot make it faster, so a step below that is noise, not the model's
        level = max(level, 1.0)
    model = replace(model, level=min(max(level, LEVEL_RANGE[0]), LEVEL_RANGE[1]))
    table = [predict(model, s) for s in candidates(model)]
    best = min(table, key=lambda row: row.step_ms)
    now_row = predict(model, now)
    if now_row.step_ms <= best.step_ms * (1 + WITHIN_BEST):
        pick = now_row  # no setting is predicted to beat this one by 5 % or more
    else:
        within = [r for r in table if r.step_ms <= best.step_ms * (1 + WITHIN_BEST)]
        pick = min(within, key=lambda r: cost(r.settings, now))
    primary = next((s for s in model.stages if pick.settings.get(s.key) != now.get(s.key)
                    or pick.settings.get(s.key + MP) != now.get(s.key + MP)),
                   max(model.stages, key=lambda s: now_row.stages_ms[s.label]))
    # the curve MLflow plots: the picked operator's workers, the others as picked
    curve = [CurvePoint(w, predict(model, {**pick.settings, primary.key: w}).step_ms)
             for w in range(1, model.cores + 1)]
    return Advice.of(model, now=now, predictions=table, pick=pick.settings, curve=curve,
                     pick_key=primary.key, pick_workers=pick.settings.get(primary.key),
                     predicted_best_ms=best.step_ms, predicted_pick_ms=pick.step_ms,
                     predicted_now_ms=now_row.step_ms, pick_binding=pick.binding,
                     now_binding=now_row.binding, now_slowest_stage=now_row.slowest_stage,
                     gain=now_row.step_ms / pick.step_ms - 1,
                     now_error=(now_row.step_ms - measured) / measured,
                     sentence=advisor_sentence(model, now_row, pick, best, summary, band),
                     band=band)


def _step(row: Prediction, band: ErrorBand | None) -> str:
    """'842 ms' or, with a band, '842 ms (90 %: 771-946)'."""
    return band.words(row.step_ms) if band else f"{row.step_ms:.0f} ms"


def advisor_sentence(model: Model, now: Prediction, pick: Prediction, best: Prediction,
                     summary: RunSummary, band: ErrorBand | None = None) -> str:
    """The prediction in words, with the numbers it rests on."""
    pace = {"pipeline": f"{pick.slowest_stage} sets the pace ({pick.slowest_stage_ms:.0f} ms "
                        "per batch)",
            "network": f"the network's compute sets the pace ({pick.network_ms:.0f} ms per step "
                       f"on the cores the pipeline leaves; {model.network_wall_ms:.0f} ms alone)",
            "gil": (f"the GIL sets the pace (the pipeline's Python transforms need the training "
                    f"process's GIL {pick.gil_ms:.0f} ms per batch, the network's step "
                    f"{model.network_wall_ms:.0f} ms: they take turns)"),
            "cpu": (f"the CPUs set the pace (pipeline {pick.pipeline_cpu_ms:.0f} + network "
                    f"{model.network_cpu_ms:.0f} CPU-ms per step on {model.cores} CPUs = "
                    f"{pick.cpu_floor_ms:.0f} ms)")}[pick.binding]
    basis = "" if model.source == "profile" else f" (from the {model.source})"
    if abs(model.level - 1) > 0.05:  # say what the levelling did to the numbers
        basis += f" (model levelled x{model.level:.2f} on the measured step)"
    own = len(_own_round_steps(summary))
    said = f"{own_step_ms(summary):.0f} ms" + (f", the median of its window and {own} rounds"
                                               if own else "")
    head = f"Predicted from this run{basis}: now {_step(now, band)} per step (measured {said})"
    if pick is now or pick.settings == now.settings:
        return (f"{head}; no setting of {len(model.stages)} sized operator(s) up to "
                f"{model.cores} workers is predicted to be {pct(WITHIN_BEST)} faster (best {best.step_ms:.0f} "
                f"ms): {pace}.")
    return (f"{head}; {describe_settings(pick.settings, model)} gives {_step(pick, band)} "
            f"({now.step_ms / pick.step_ms:.2f}x), within {pct(WITHIN_BEST)} of the best predicted "
            f"({best.step_ms:.0f} ms); there {pace}.")


def setting_changes(settings: Settings, now: Settings) -> Settings:
    """What `settings` changes against `now`: changed keys, and processes switched off (False)."""
    settings, now = canonical(settings), canonical(now)
    changes = {k: v for k, v in settings.items() if now.get(k) != v}
    changes.update({k: False for k in now if k.endswith(MP) and k not in settings})
    return changes


def describe_changes(changes: Settings, advice: Advice | None) -> str:
    """The changed keys as a user would type them."""
    words = []
    for key, value in changes.items():
        if key.endswith(MP):
            continue
        text = f"{key}={value}"
        if changes.get(key + MP):
            text += f" with {processes_key(key)}=true"
        words.append(text)
    for key, value in changes.items():  # processes switched without a change of workers
        if key.endswith(MP) and key[: -len(MP)] not in changes:
            words.append(f"{processes_key(key[: -len(MP)])}={str(bool(value)).lower()}")
    return ", ".join(words) or (describe_settings(advice.pick, advice) if advice else "no change")


def processes_key(key: str) -> str:
    """The key that runs a sized operator's Python in processes: pipeline.processes.<address>
    for an address, the case study's <name>_multiprocessing for its own keys."""
    if key.startswith(ADDRESSED):
        return "pipeline.processes." + key.removeprefix(ADDRESSED)
    return f"{key.rsplit('_workers', 1)[0]}_multiprocessing"
