"""One answer per arm: the verdict, the culprit, the setting and its predicted step.

Everything that shows an arm's recommendation (diagnosis.json, the headline, the report,
MLflow tags, the study's parent run) presents what `decide` returns; nothing else decides.

* Validity first: a steady step clearly below the input floor (the pipeline alone) cannot be
  a steady state; the window was served from batches buffered before it. Then no verdict is
  issued, and the answer says how many steps would drain the buffer (buffered batches / the
  deficit per step), and nothing else names a setting: the advisor's pick is then kept for
  information only (perfstudy.diagnosis.label_advice).
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
* Remedies follow the culprit's kind: decode (source size, with what a smaller source
  would give), Python (workers, processes, vectorising or a C++ op), waiting (workers),
  computing in C++ (more cores, a cheaper op), or none in the pipeline when the network binds.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from perfstudy.common.records import from_dict
from perfstudy.common.thresholds import GAIN_THAT_MATTERS, NOT_STEADY, WITHIN_BEST, pct
from perfstudy.decide.advice import Advice, Prediction, Stage, Swing
from perfstudy.decide.advisor import COMPUTES, canonical, describe_settings, predict, stage_ms, step_swing
from perfstudy.decide.fixes import prepared_prediction, remedies
from perfstudy.decide.recommendation import OperatorEvidence, Recommendation, Validity
from perfstudy.decide.verification import FEW_ROUNDS, HELPS, INCONCLUSIVE, Checked, protocol_words, verdict
from perfstudy.run.settings import ADDRESSED, DECODE_OPS, MP, Settings
from perfstudy.run.summary import RunSummary


def buffered_at_window(summary: RunSummary, floor_ms: float) -> tuple[float, str]:
    """Batches buffered when the measured window began, and how that was estimated.

    The slowest stage completes a batch every `floor_ms` (the pipeline alone) from the
    pipeline's launch; the steps before the window took `before_window_ms` and consumed one
    batch each, so the rest waited in the queues. It is an upper bound (the queues may have
    filled first; the training slows the stage a little): the advice it gives errs on more
    steps. The queues' declared capacity is no bound at all (MindSpore's workers hold more
    than their queues: docs/lab-notes.md#queue-capacity), so it is not used."""
    before, first = summary.before_window_ms, summary.first_measured_step
    if floor_ms <= 0:
        return 0.0, "no pipeline-alone reading"
    return max(0.0, before / floor_ms - first), (
        f"{before:.0f} ms of {first} steps before the window at {floor_ms:.0f} ms per batch, "
        f"less the {first} batches they consumed")


def validity(summary: RunSummary, compute_ms: float) -> Validity:
    """Is the measured window a steady state? If not, how many steps would be.

    Judged against the input floor (the pipeline alone, timed over several batches). The
    compute floor is not used: the measured steps time the network themselves, and a few
    network-alone steps are too noisy to judge by (docs/lab-notes.md#calibration-noise).
    Steps to a steady window: the batches buffered at the window's start drain at
    1 - compute/floor of a batch per step; the drain rule (perfstudy.measure.steptrace) then needs the
    drained steps to be at most half of the run, and at least 10 steady steps after them. A run
    that already had those steps is steady whatever the ratio: its floor reading is the one off
    (docs/lab-notes.md#window-outlasts-buffer).
    """
    floors = {"input": summary.input_floor_ms}
    floors = {k: v for k, v in floors.items() if v}
    if not floors:
        return Validity(steady=True)
    which = max(floors, key=floors.get)
    ratio = summary.steady_step_ms / floors[which]
    if ratio >= NOT_STEADY:
        return Validity(steady=True, steady_vs_floor=ratio, floor=which)
    buffered, basis = buffered_at_window(summary, floors[which])
    deficit = floors[which] - compute_ms  # what each step takes out of the buffer, in ms
    # nothing buffered drains in 0 steps (not "unknown"): then only the window's length decides,
    # and a long enough one is steady whatever a pipeline-alone reading taken beside other work says
    drain = math.ceil(buffered * floors[which] / deficit) if deficit > 0 else None
    first = summary.first_measured_step
    steps = None if drain is None else max(2 * (first + drain), first + drain + 10)
    if steps is not None and steps <= first + summary.steps_measured:
        # the run already had the steps a steady window needs: no buffer can have served the
        # window, so the pipeline-alone reading (a few batches) is the one off, not the window
        return Validity(steady=True, steady_vs_floor=ratio, floor=which, floor_suspect=True,
                        sentence=(f"The measured step ({summary.steady_step_ms:.0f} ms) is {ratio:.2f}x "
                             f"the pipeline alone ({floors[which]:.0f} ms), but at most {buffered:.1f} "
                             f"batches were buffered before the window ({basis}), which ~{drain} steps "
                             f"drain, and the run measured {summary.steps_measured} steps after "
                             f"{first}: the window is steady and the pipeline-alone reading is the one off"))
    sentence = (f"Not a steady state: the measured step ({summary.steady_step_ms:.0f} ms) is "
                f"{ratio:.2f}x the {which} floor ({floors[which]:.0f} ms, the "
                + ("pipeline" if which == "input" else "network") + " alone), so the "
                f"{summary.steps_measured} measured steps were served from batches buffered "
                "before them")
    if steps is not None:
        sentence += (f"; about {buffered:.1f} batches were buffered ({basis}) and each step drains "
                     f"{deficit:.0f} ms of the {floors[which]:.0f} ms a batch takes, so the buffer "
                     f"lasts ~{drain} steps: run trainer.steps >= {steps} for a steady window")
    else:
        sentence += "; run more trainer.steps for a steady window"
    return Validity(steady=False, steady_vs_floor=ratio, floor=which, floor_ms=floors[which],
                    buffered_batches=buffered, buffered_basis=basis, drain_steps=drain,
                    steps_needed=steps, sentence=sentence + "; no verdict is issued on this window.")


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


def decide(summary: RunSummary, advice: Advice, band: str, compute_ms: float,
           queue_culprit: OperatorEvidence | None = None) -> Recommendation:
    """The arm's answer: verdict (bound), action, setting, predicted step, culprit, remedies.

    Args:
        summary: the run's summary; advice: the what-if model (perfstudy.decide.advisor.advise);
        band: the gap share's input-bound band; compute_ms: the network's measured step;
        queue_culprit: MindInsight's queue rule's operator, kept as evidence.

    Returns:
        The Recommendation every later stage presents (typed: each field, on every branch).
    """
    answer, input_side, fixes = _model_answer(summary, advice, band, compute_ms, queue_culprit)
    checked = None if answer["action"] == "not_steady" else verdict(summary.verification)
    if checked is not None:  # the measurement decides
        answer = _verified(answer, checked, advice, input_side, fixes)
    elif summary.verification and answer["action"] != "not_steady":
        answer["sentence"] += (" Not verified: " + (summary.verification.skipped
                               or "the run's own setting was never steady in a round") + ".")
    return from_dict(Recommendation, answer, "the decision")


def _model_answer(summary: RunSummary, advice: Advice, band: str, compute_ms: float,
                  queue_culprit: OperatorEvidence | None) -> tuple[dict[str, Any], bool, list[str]]:
    """(the model's answer before any measurement, input-side binding?, the culprit's remedies)."""
    check = validity(summary, compute_ms)
    measured = summary.steady_step_ms
    base = {"validity": check, "measured_step_ms": measured,
            "predicted_now_ms": advice.predicted_now_ms, "source": advice.source}
    if not check.steady:  # no verdict, and nothing else names a setting
        return {**base, "bound": "not_steady", "action": "not_steady", "settings": advice.now,
                "predicted_step_ms": advice.predicted_now_ms, "sentence": check.sentence}, False, []
    now = advice.now
    now_row = predict(advice, now)
    pick = predict(advice, advice.pick)
    best = min(advice.predictions, key=lambda r: r.step_ms)
    slowest = next(s for s in advice.stages if s.label == now_row.slowest_stage)
    input_side = band != "not" or now_row.binding in ("pipeline", "gil")
    culprit, swing = (slowest, None) if input_side else cpu_culprit(advice, now_row)
    kind = culprit_kind(culprit)
    changes = {k: v for k, v in advice.pick.items() if now.get(k) != v}
    gain = now_row.step_ms / pick.step_ms - 1
    binding_words = {"cpu": "cpu", "pipeline": "input", "network": "compute", "gil": "input"}
    if changes:
        action, bound = "set_workers", "input"
        sentence = (f"Set {describe_changes(changes, advice)}: predicted {pick.step_ms:.0f} ms per "
                    f"step against {now_row.step_ms:.0f} ms now ({1 + gain:.2f}x; measured now "
                    f"{measured:.0f} ms), within {pct(WITHIN_BEST)} of the best of every setting up to "
                    f"{advice.cores} workers; {culprit.label if culprit else 'the pipeline'} "
                    "is the slow operator")
        if kind == "python":
            sentence += f" ({remedies(kind, advice, culprit, summary, best)[0]})"
    elif input_side:
        action = "cannot_help"
        bound = binding_words[now_row.binding]
        sentence = (f"No worker setting helps: the best of every setting up to {advice.cores} "
                    f"workers is predicted {pct(now_row.step_ms / best.step_ms - 1, 1)} "
                    f"faster than now ({best.step_ms:.0f} against {now_row.step_ms:.0f} ms; "
                    f"{pct(WITHIN_BEST)} is the bar), because {_what_binds(now_row, advice, slowest)}; "
                    "what would: "
                    + "; ".join(remedies(kind, advice, culprit, summary, best)))
    else:
        action = "none"
        bound = "cpu" if now_row.binding == "cpu" else "compute"
        sentence = (f"Keep the pipeline as it is: the step waits for data "
                    f"{pct(summary.gap_share, 1)} of the time and no setting is predicted to "
                    f"be {pct(WITHIN_BEST)} faster" + (f"; {_swing_words(swing, advice)}" if swing else "")
                    + "; what would help: " + "; ".join(remedies(None, advice, None, summary, best)))
    answer = {**base, "bound": bound, "action": action, "changes": changes,
              "settings": advice.pick, "predicted_step_ms": pick.step_ms,
              "predicted_gain": gain, "culprit_key": culprit.key if culprit else None,
              "culprit_label": culprit.label if culprit else None, "culprit_kind": kind,
              "culprit_swing": swing,
              "queue_rule_culprit": queue_culprit.label if queue_culprit else None,
              "workers": changes.get(culprit.key) if culprit and changes else None,
              "remedies": remedies(kind, advice, culprit, summary, best) if action != "set_workers" else [],
              "prepared_prediction": prepared_prediction(advice, summary),
              "sentence": sentence + ".", "verified": False,
              "model_answer": {"action": action, "settings": advice.pick,
                               "predicted_step_ms": pick.step_ms}}
    return answer, input_side, remedies(kind, advice, culprit, summary, best)


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


def _verified(answer: dict[str, Any], checked: Checked, advice: Advice,
              input_side: bool, fixes: list[str]) -> dict[str, Any]:
    """The answer the verification's rounds give (perfstudy.decide.verification): the chosen
    setting with its measured ratio and interval; no gain (measured); or inconclusive."""
    own, chosen = checked.own, checked.picked
    how = protocol_words(checked)
    base = {**answer, "verified": True, "verification": checked, "verified_now_ms": own.measured_ms,
            "verified_step_ms": chosen.measured_ms}
    if checked.outcome == HELPS:
        settings = canonical(chosen.settings)
        changes = setting_changes(settings, advice.now)
        culprit_key = next((k for k in changes if not k.endswith(MP)),
                           next(iter(changes)).removesuffix(MP))
        stage = next((s for s in advice.stages if s.key == culprit_key), None)
        comp = chosen.comparison
        gain, low, high = comp.interval.gain()
        sentence = (f"Set {describe_changes(changes, advice)}: measured {comp.words()} the current "
                    f"setting's step, a gain of {pct(gain)} ({pct(low)} to {pct(high)}; a change "
                    f"must clear {pct(checked.margin)} over the whole interval), "
                    f"{chosen.measured_ms:.0f} against {own.measured_ms:.0f} ms; predicted "
                    f"{chosen.predicted_ms:.0f} ms ({pct(chosen.error, signed=True)}); {how}")
        if stage is not None:
            sentence += f"; {stage.label} is the slow operator"
        return {**base, "bound": "input", "action": "set_workers", "changes": changes,
                "settings": settings, "predicted_step_ms": chosen.predicted_ms,
                "measured_gain": gain, "predicted_gain": own.predicted_ms / chosen.predicted_ms - 1,
                "culprit_key": culprit_key, "culprit_label": stage.label if stage else culprit_key,
                "culprit_kind": culprit_kind(stage),
                "workers": changes.get(culprit_key), "remedies": [], "sentence": sentence + "."}
    readings = "; ".join(f"{m.label}: step {m.comparison.words()}" for m in checked.settings[1:]
                         if m.comparison)
    if checked.outcome == INCONCLUSIVE:
        open_ = checked.open_candidate()
        needed = open_.comparison.rounds_needed if open_ else None
        sentence = (f"Inconclusive (measured): {readings}; "
                    + (f"{open_.label}'s interval holds both a gain of {pct(checked.margin)} and "
                       "less" if open_ else "no candidate paired with the current setting")
                    + f", so the setting is kept ({how}). "
                    + (f"More rounds decide it (about {needed} in all): raise verify.max_rounds and "
                       "verify.stretch_share" if needed and needed <= FEW_ROUNDS else
                       "Its estimate sits too close to the 10 % line (or its rounds disagree too "
                       "much) for a few more rounds to settle it; a larger gain would be decided"))
        return {**base, "action": "inconclusive", "changes": {}, "settings": canonical(advice.now),
                "predicted_step_ms": own.predicted_ms, "predicted_gain": 0.0,
                "measured_gain": 0.0, "workers": None, "remedies": fixes,
                "sentence": sentence + "."}
    action = "cannot_help" if input_side else "none"
    bound = answer["bound"] if answer["action"] != "set_workers" else (
        "input" if input_side else "compute")
    sentence = (f"No setting helps (measured): every candidate's interval rules out a gain of "
                f"{pct(checked.margin)}: {readings} ({how}; the model predicted "
                f"{own.predicted_ms:.0f} -> {answer['model_answer']['predicted_step_ms']:.0f} ms"
                + (f" for {describe_settings(answer['model_answer']['settings'], advice)}"
                   if answer["model_answer"]["action"] == "set_workers" else "") + ")")
    if fixes:
        sentence += "; what would: " + "; ".join(fixes)
    return {**base, "bound": bound, "action": action, "changes": {},
            "settings": canonical(advice.now), "predicted_step_ms": own.predicted_ms,
            "predicted_gain": 0.0, "measured_gain": 0.0, "workers": None, "remedies": fixes,
            "sentence": sentence + "."}


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
