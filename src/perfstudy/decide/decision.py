"""One answer per arm: the verdict, the culprit, the setting and its predicted step
(`Recommendation`, diagnosis.json's `recommendation`, made by `decide` only).

Everything that shows an arm's recommendation (diagnosis.json, the headline, the report,
MLflow tags, the study's parent run) presents what `decide` returns; nothing else decides.

* Validity first (perfstudy.decide.validity): on a window that is not a steady state no verdict
  is issued, and nothing else names a setting: the advisor's pick is then kept for information
  only (perfstudy.decide.diagnosis.label_advice).
* The setting comes from the what-if model (perfstudy.decide.advisor): the cheapest setting of every
  sized operator within 5 % of the best predicted step. "No setting helps" is said only when
  the model predicts less than 5 % gain at every setting up to the CPU count, with the
  numbers it rests on; a busy-CPU reading alone never decides it.
* The culprit is the operator the model finds slowest at the current setting (the one whose
  workers change the step); MindInsight's queue rule is kept as evidence beside it. When the
  CPUs bind (pipeline and network share them, nothing waits), the culprit is the operator
  whose own setting moves the predicted step the most, by >= 10 % (e.g. a decoding map: one
  worker fewer and the step waits for it again; its CPU is what a smaller source saves);
  none when no setting moves it, or when the network alone sets the pace.
* Remedies follow the culprit's kind (perfstudy.decide.remedies): decode (source size, with
  what a smaller source would give), Python (workers, processes, vectorising or a C++ op),
  waiting (workers), computing in C++ (more cores, a cheaper op), or none in the pipeline when
  the network binds.
* Where the training measured the settings in interleaved rounds, the rounds decide
  (perfstudy.decide.verify): the model's answer is then replaced by the measured one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perfstudy.common.records import doc
from perfstudy.common.thresholds import GAIN_THAT_MATTERS, WITHIN_BEST, pct
from perfstudy.decide.advisor import Advice, Swing, describe_changes, describe_settings, setting_changes, step_swing
from perfstudy.decide.remedies import PreparedPrediction, prepared_prediction, remedies
from perfstudy.decide.validity import Validity, validity
from perfstudy.decide.verify import FEW_ROUNDS, HELPS, INCONCLUSIVE, Checked, protocol_words, verdict
from perfstudy.decide.whatif import COMPUTES, Prediction, Stage, canonical, predict, stage_ms
from perfstudy.measure.decision_rules import CHOSEN
from perfstudy.run.settings import DECODE_OPS, MP, Settings
from perfstudy.run.summary import RunSummary

ACTIONS = ("set_workers", "cannot_help", "none", "inconclusive", "not_steady")


@dataclass(frozen=True)
class ModelAnswer:
    """What the what-if model alone would have answered, before any measurement."""

    action: str
    settings: Settings
    predicted_step_ms: float


@dataclass(frozen=True)
class Recommendation:
    """One answer per arm: the verdict, the culprit, the setting and its predicted step."""

    validity: Validity = doc("is the measured window a steady state (perfstudy.decide.validity)")
    measured_step_ms: float = doc("the run's steady step")
    predicted_now_ms: float = doc("the model's step at the run's own setting")
    source: str = doc("what the model was built from: profile | calibration")
    bound: str = doc("input | cpu | compute | not_steady")
    action: str = doc("set_workers | cannot_help | none | inconclusive | not_steady")
    settings: Settings = doc("the recommended operator settings (all sized keys)")
    predicted_step_ms: float = doc("the model's step at the recommended settings")
    sentence: str = doc("the answer in one paragraph")
    changes: Settings = doc("the settings that differ from the run's own", default_factory=dict)
    predicted_gain: float | None = doc("the model's gain at the recommended settings "
                                       "(None: no verdict)", default=None)
    culprit_key: str | None = doc("the config key of the culprit operator", default=None)
    culprit_label: str | None = doc("the culprit as the profile names it", default=None)
    culprit_kind: str | None = doc("decode | python | waits | computes", default=None)
    culprit_swing: Swing | None = doc("when the CPUs bind: how much the culprit's own "
                                               "setting moves the predicted step", default=None)
    queue_rule_culprit: str | None = doc("MindInsight's queue rule's operator, as evidence",
                                         default=None)
    workers: int | None = doc("the culprit's recommended workers (set_workers only)", default=None)
    remedies: list[str] = doc("what would help, by the culprit's kind", default_factory=list)
    prepared_prediction: PreparedPrediction | None = doc(
        "the step predicted on the source prepared at the bounded resolution", default=None)
    verified: bool = doc("the answer was decided by the verification windows", default=False)
    model_answer: ModelAnswer | None = doc("the model's own answer, before measurement",
                                           default=None)
    verification: Checked | None = doc("what the verification's interleaved rounds decided",
                                       default=None)
    verified_now_ms: float | None = doc("the run's own setting, measured", default=None)
    verified_step_ms: float | None = doc("the chosen setting, measured", default=None)
    measured_gain: float | None = doc("the chosen setting's measured gain over the run's own "
                                      "(1 / its paired ratio - 1)", default=None)


def cpu_culprit(advice: Advice, now_row: Prediction) -> tuple[Stage | None, Swing | None]:
    """(stage, its swing) when the CPUs bind at the current setting and one operator's own
    setting moves the predicted step by >= GAIN_THAT_MATTERS (the largest swing wins); else (None, None).
    The swing carries the stage's CPU per batch now, of the pipeline's."""
    if now_row.binding != "cpu" or not advice.stages:
        return None, None
    swings = [(step_swing(advice, stage), stage) for stage in advice.stages]
    swing, stage = max(swings, key=lambda pair: pair[0].swing)
    if swing.swing < GAIN_THAT_MATTERS:
        return None, None
    now = advice.now
    cpu = stage_ms(stage, int(now.get(stage.key, stage.workers_now)),
                   bool(now.get(stage.key + MP, False)), advice.cores)[1]
    return stage, replace(swing, cpu_ms_per_batch=cpu, pipeline_cpu_ms=now_row.pipeline_cpu_ms)


def _swing_words(swing: Swing, advice: Advice) -> str:
    """'Map #2 [...] takes 2100 of the pipeline's 2300 CPU-ms per batch, and its setting moves
    the step (pipeline.workers.map_2=1: predicted 4086 ms against 2724 ms)'."""
    return (f"{swing.label} takes {swing.cpu_ms_per_batch:.0f} of the pipeline's "
            f"{swing.pipeline_cpu_ms:.0f} CPU-ms per batch, and its setting moves the step "
            f"({describe_changes(setting_changes(swing.slowest, advice.now), advice)}"
            f": predicted {swing.slowest_ms:.0f} ms against {swing.fastest_ms:.0f} ms)")


def culprit_kind(stage: Stage | None) -> str | None:
    """decode | python | waits | computes for a stage of the model (None: no culprit)."""
    if stage is None:
        return None
    if any(op in DECODE_OPS for op in stage.operations):
        return "decode"
    if stage.kind == "waits" or stage.busy_per_worker < COMPUTES:
        return "waits"
    return "python" if stage.kind == "probed" else "computes"


def _what_binds(now_row: Prediction, advice: Advice, slowest: Stage) -> str:
    """Why no worker setting helps, by what binds the predicted step at every setting."""
    binding = now_row.binding
    if binding == "cpu":
        return (f"the CPUs are full: pipeline {now_row.pipeline_cpu_ms:.0f} + network "
                f"{advice.network_cpu_ms:.0f} CPU-ms per step on {advice.cores} CPUs "
                f"= {now_row.cpu_floor_ms:.0f} ms")
    if binding == "pipeline":
        return (f"{slowest.label} needs {now_row.slowest_stage_ms:.0f} ms per batch "
                "at every setting the model tried")
    if binding == "network":
        return f"the network needs {now_row.network_ms:.0f} ms per step"
    return (f"the pipeline's Python transforms need the training process's GIL "
            f"{now_row.gil_ms:.0f} ms per batch and the network's step "
            f"{advice.network_wall_ms:.0f} ms: they take turns")


@dataclass(frozen=True)
class ModelFindings:
    """What the model reads at the run's own setting, worked out once for every branch of the
    answer: the predictions now, at the pick and at the best, what binds, the culprit and what
    would help with it."""

    now: Prediction = doc("the prediction at the run's own setting")
    pick: Prediction = doc("the prediction at the model's pick")
    best: Prediction = doc("the fastest prediction")
    slowest: Stage = doc("the slowest stage now")
    input_side: bool = doc("the input side binds (a gap, or the pipeline or the GIL sets the pace)")
    culprit: Stage | None = doc("the culprit stage (None: none)")
    swing: Swing | None = doc("when the CPUs bind: how far the culprit's setting moves the step")
    kind: str | None = doc("the culprit's kind: decode | python | waits | computes")
    prepared: PreparedPrediction | None = doc("the step predicted on the prepared source")
    fixes: list[str] = doc("what would help with the culprit, by its kind")


def findings(summary: RunSummary, advice: Advice, band: str) -> ModelFindings:
    """The model's reading of a steady window (remedies and the prepared prediction, once)."""
    now_row = predict(advice, advice.now)
    best = min(advice.predictions, key=lambda r: r.step_ms)
    slowest = next(s for s in advice.stages if s.label == now_row.slowest_stage)
    input_side = band != "not" or now_row.binding in ("pipeline", "gil")
    culprit, swing = (slowest, None) if input_side else cpu_culprit(advice, now_row)
    kind = culprit_kind(culprit)
    prepared = prepared_prediction(advice, summary)
    return ModelFindings(now=now_row, pick=predict(advice, advice.pick), best=best, slowest=slowest,
                         input_side=input_side, culprit=culprit, swing=swing, kind=kind,
                         prepared=prepared,
                         fixes=remedies(kind, advice, culprit, summary, best, prepared))


def decide(summary: RunSummary, advice: Advice, band: str, compute_ms: float,
           queue_rule_culprit: str | None = None) -> Recommendation:
    """The arm's answer: verdict (bound), action, setting, predicted step, culprit, remedies.

    Args:
        summary: the run's summary; advice: the what-if model (perfstudy.decide.advisor.advise);
        band: the gap share's input-bound band; compute_ms: the network's measured step;
        queue_rule_culprit: the operator MindInsight's queue rule blames, kept as evidence.

    Returns:
        The Recommendation every later stage presents (typed: each field, on every branch).
    """
    check = validity(summary, compute_ms)
    if not check.steady:  # no verdict, and nothing else names a setting
        return Recommendation(
            validity=check, measured_step_ms=summary.steady_step_ms,
            predicted_now_ms=advice.predicted_now_ms, source=advice.source, bound="not_steady",
            action="not_steady", settings=advice.now, predicted_step_ms=advice.predicted_now_ms,
            sentence=check.sentence)
    found = findings(summary, advice, band)
    answer = _model_answer(summary, advice, found, check, queue_rule_culprit)
    checked = verdict(summary.verification)
    if checked is not None:  # the measurement decides
        return _measured_answer(answer, checked, advice, found)
    if summary.verification:
        return replace(answer, sentence=answer.sentence + " Not verified: " + (
            summary.verification.skipped or "the run's own setting was never steady in a round") + ".")
    return answer


def _model_answer(summary: RunSummary, advice: Advice, found: ModelFindings, check: Validity,
                  queue_rule_culprit: str | None) -> Recommendation:
    """The model's answer before any measurement: set a setting, none helps, or keep it."""
    now_row, pick, culprit = found.now, found.pick, found.culprit
    changes = {k: v for k, v in advice.pick.items() if advice.now.get(k) != v}
    gain = now_row.step_ms / pick.step_ms - 1
    if changes:
        action, bound = "set_workers", "input"
        sentence = (f"Set {describe_changes(changes, advice)}: predicted {pick.step_ms:.0f} ms per "
                    f"step against {now_row.step_ms:.0f} ms now ({1 + gain:.2f}x; measured now "
                    f"{summary.steady_step_ms:.0f} ms), within {pct(WITHIN_BEST)} of the best of every setting up to "
                    f"{advice.cores} workers; {culprit.label if culprit else 'the pipeline'} "
                    "is the slow operator")
        if found.kind == "python":
            sentence += f" ({found.fixes[0]})"
    elif found.input_side:
        action = "cannot_help"
        bound = {"cpu": "cpu", "pipeline": "input", "network": "compute", "gil": "input"}[now_row.binding]
        sentence = (f"No worker setting helps: the best of every setting up to {advice.cores} "
                    f"workers is predicted {pct(now_row.step_ms / found.best.step_ms - 1, 1)} "
                    f"faster than now ({found.best.step_ms:.0f} against {now_row.step_ms:.0f} ms; "
                    f"{pct(WITHIN_BEST)} is the bar), because "
                    f"{_what_binds(now_row, advice, found.slowest)}; what would: " + "; ".join(found.fixes))
    else:
        action = "none"
        bound = "cpu" if now_row.binding == "cpu" else "compute"
        # what would help the pipeline as a whole (no culprit of its own binds the step)
        anywhere = remedies(None, advice, None, summary, found.best, found.prepared)
        sentence = (f"Keep the pipeline as it is: the step waits for data "
                    f"{pct(summary.gap_share, 1)} of the time and no setting is predicted to "
                    f"be {pct(WITHIN_BEST)} faster"
                    + (f"; {_swing_words(found.swing, advice)}" if found.swing else "")
                    + "; what would help: " + "; ".join(anywhere))
    return Recommendation(
        validity=check, measured_step_ms=summary.steady_step_ms,
        predicted_now_ms=advice.predicted_now_ms, source=advice.source, bound=bound,
        action=action, changes=changes, settings=advice.pick, predicted_step_ms=pick.step_ms,
        predicted_gain=gain, culprit_key=culprit.key if culprit else None,
        culprit_label=culprit.label if culprit else None, culprit_kind=found.kind,
        culprit_swing=found.swing, queue_rule_culprit=queue_rule_culprit,
        workers=changes.get(culprit.key) if culprit and changes else None,
        remedies=found.fixes if action != "set_workers" else [],
        prepared_prediction=found.prepared, sentence=sentence + ".", verified=False,
        model_answer=ModelAnswer(action=action, settings=advice.pick, predicted_step_ms=pick.step_ms))


def _measured_answer(answer: Recommendation, checked: Checked, advice: Advice,
                     found: ModelFindings) -> Recommendation:
    """The answer the verification's rounds give (perfstudy.decide.verify): the chosen
    setting with its measured ratio and interval; no gain (measured); or inconclusive."""
    own, chosen = checked.own, checked.picked
    now_ms = own.measured_ms or answer.measured_step_ms  # no rounds here: the training's window
    measured = replace(answer, verified=True, verification=checked, verified_now_ms=now_ms,
                       verified_step_ms=chosen.measured_ms or _from_ratio(now_ms, chosen))
    if checked.outcome == HELPS:
        return _measured_gain(measured, checked, advice)
    readings = "; ".join(f"{m.label}: step {m.comparison.words()}" for m in checked.settings[1:]
                         if m.comparison)
    kept = dict(changes={}, settings=canonical(advice.now), predicted_step_ms=own.predicted_ms,
                predicted_gain=0.0, measured_gain=0.0, workers=None, remedies=found.fixes)
    if checked.outcome == INCONCLUSIVE:
        return replace(measured, action="inconclusive", sentence=_inconclusive_words(checked, readings),
                       **kept)
    model = answer.model_answer
    bound = answer.bound if answer.action != "set_workers" else (
        "input" if found.input_side else "compute")
    sentence = (f"No setting helps (measured): every candidate's interval rules out a gain of "
                f"{pct(checked.margin)}: {readings} ({protocol_words(checked)}; the model predicted "
                f"{own.predicted_ms:.0f} -> {model.predicted_step_ms:.0f} ms"
                + (f" for {describe_settings(model.settings, advice)}"
                   if model.action == "set_workers" else "") + ")")
    if found.fixes:
        sentence += "; what would: " + "; ".join(found.fixes)
    return replace(measured, bound=bound, action="cannot_help" if found.input_side else "none",
                   sentence=sentence + ".", **kept)


def _from_ratio(now_ms: float | None, chosen) -> float | None:
    """A setting settled by an earlier run's rounds (not measured here): the own setting's step
    here times its paired ratio there."""
    comp = chosen.comparison
    return now_ms * comp.ratio if now_ms and comp and comp.ratio else None


def _measured_gain(measured: Recommendation, checked: Checked, advice: Advice) -> Recommendation:
    """The setting the rounds chose: its measured gain and interval, and the operator it sets."""
    own, chosen = checked.own, checked.picked
    settings = canonical(chosen.settings)
    changes = setting_changes(settings, advice.now)
    culprit_key = next((k for k in changes if not k.endswith(MP)),
                       next(iter(changes)).removesuffix(MP))
    stage = next((s for s in advice.stages if s.key == culprit_key), None)
    comp = chosen.comparison
    gain, low, high = comp.interval.gain()
    sentence = (f"Set {describe_changes(changes, advice)}: measured {comp.words()} the current "
                f"setting's step, a gain of {pct(gain)} ({pct(low)} to {pct(high)}; a change "
                f"needs {CHOSEN.bar_words(checked.margin)}), "
                + (f"{chosen.measured_ms:.0f} against {own.measured_ms:.0f} ms; predicted "
                   f"{chosen.predicted_ms:.0f} ms ({pct(chosen.error, signed=True)}); "
                   if chosen.measured_ms and chosen.error is not None else
                   f"in {chosen.reused_from}'s rounds; predicted {chosen.predicted_ms:.0f} ms; ")
                + protocol_words(checked))
    if stage is not None:
        sentence += f"; {stage.label} is the slow operator"
    return replace(measured, bound="input", action="set_workers", changes=changes, settings=settings,
                   predicted_step_ms=chosen.predicted_ms, measured_gain=gain,
                   predicted_gain=own.predicted_ms / chosen.predicted_ms - 1,
                   culprit_key=culprit_key, culprit_label=stage.label if stage else culprit_key,
                   culprit_kind=culprit_kind(stage), workers=changes.get(culprit_key), remedies=[],
                   sentence=sentence + ".")


def _inconclusive_words(checked: Checked, readings: str) -> str:
    """Why the rounds did not decide, and whether a few more rounds would."""
    open_ = checked.open_candidate()
    needed = open_.comparison.rounds_needed if open_ else None
    return (f"Inconclusive (measured): {readings}; "
            + (f"{open_.label} shows neither {CHOSEN.bar_words(checked.margin)} nor an "
               f"interval short of a {pct(checked.margin)} gain" if open_
               else "no candidate paired with the current setting")
            + f", so the setting is kept ({protocol_words(checked)}). "
            + (f"More rounds decide it (about {needed} in all): raise verify.max_rounds and "
               "verify.stretch_share" if needed and needed <= FEW_ROUNDS else
               "Its estimate sits too close to the 10 % line (or its rounds disagree too "
               "much) for a few more rounds to settle it; a larger gain would be decided") + ".")
