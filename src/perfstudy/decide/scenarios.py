"""The diagnosis benchmark's score (study `scenarios`): each diagnosed run against its sweep.

Per scenario: the profiled run's answer (decision.decide: culprit, setting, predicted step)
set against the measured sweep of the scenario's key (profiler off, one run per setting):
* culprit right: where the sweep moves the step by >= 10 %, the culprit must be the swept
  operator; where it does not, the answer must not claim a worker change helps;
* the recommended setting's measured step against the sweep's best (target: within 10 %);
* "no setting helps" said where some setting measured >= 10 % faster than the run's own;
* the model's predicted step at every swept setting against the measured one (target 15 %);
* whether the answer was verified (perfstudy.decide.verification), the step it promises (the
  measured one when verified) against the sweep's at that setting, and the model's own
  prediction there (its error, apart from the pick);
* held-out scenarios (kept out of any fitting of the model) are marked;
* MindSpore's own analyzer on the same profile, scored the same way: its culprit, and its
  advice where the sweep measured it (prefetch_size is not swept: unscored, said so).
"""

from __future__ import annotations

import pandas as pd

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, PREDICTION_TARGET, pct
from perfstudy.decide.advisor import predict
from perfstudy.decide.recommendation import Recommendation
from perfstudy.run.settings import MP

WRONG_NO_HELP = "wrong 'no setting helps'"
# MindSpore's own analyzer on the same profile (perfstudy.decide.peers), scored like ours
ANALYZER_CULPRIT = "MindSpore analyzer: culprit"
ANALYZER_RIGHT = "its culprit right"
ANALYZER_ADVICE = "its advice"
ANALYZER_WITHIN = f"its advice within {pct(GAIN_THAT_MATTERS)}"
PICK_WITHIN = f"pick within {pct(GAIN_THAT_MATTERS)}"
PREDICTIONS_WITHIN = f"predictions within {pct(PREDICTION_TARGET)}"
AUTOTUNE_WITHIN = f"AutoTune within {pct(GAIN_THAT_MATTERS)}"


def _setting(arm, key: str) -> tuple[int, bool]:
    settings = arm.summary.operator_settings or {}
    return int(settings.get(key, 1)), bool(settings.get(key + MP, False))


def _label(setting: tuple[int, bool]) -> str:
    return f"{setting[0]}{' (processes)' if setting[1] else ''}"


def _medians(runs: list) -> dict[str, float]:
    """Each arm's median steady step over its repeats (one run: its own)."""
    steps: dict[str, list[float]] = {}
    for run in runs:
        steps.setdefault(run.summary.arm, []).append(run.summary.steady_step_ms)
    return {arm: float(pd.Series(values).median()) for arm, values in steps.items()}


def score(runs: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per diagnosed scenario, one row per predicted-vs-measured swept setting).
    Each diagnosed run is an arm's first repeat; each swept setting's step is the median of its
    arm's repeats (`--config repeats=3` makes the sweep trustworthy on a noisy host)."""
    medians = _medians(runs)
    arms = [r for r in runs if r.summary.repeat == 1]
    rows, points = [], []
    for diagnosed in [a for a in arms if (a.summary.scenario or {}).get("role") == "diagnosed"]:
        spec = diagnosed.summary.scenario
        key = spec["key"]
        sweep = {_setting(a, key): a for a in arms
                 if (a.summary.scenario or {}).get("role") == "truth"
                 and a.summary.scenario["name"] == spec["truth"]}
        answer = diagnosed.diagnosis.recommendation if diagnosed.diagnosis else None
        advice = (diagnosed.diagnosis.advisor if diagnosed.diagnosis else None)
        if not sweep or not answer or advice is None:
            continue
        measured = {s: medians[a.summary.arm] for s, a in sweep.items()}
        repeats = min(sum(1 for r in runs if r.summary.arm == a.summary.arm)
                      for a in sweep.values())
        best_setting = min(measured, key=measured.get)
        best = measured[best_setting]
        moves = max(measured.values()) / best - 1 >= GAIN_THAT_MATTERS
        action = answer.action
        if moves:
            right = answer.culprit_key == key
        else:
            right = action != "set_workers" or key not in {k.removesuffix(MP) for k in answer.changes}
        rec = answer.settings or {}
        picked = (int(rec.get(key, 1)), bool(rec.get(key + MP, False)))
        own = _setting(diagnosed, key)
        picked_ms = measured.get(picked)
        own_ms = measured.get(own)
        errors = []
        for setting, arm in sorted(sweep.items()):
            predicted = predict(advice, arm.summary.operator_settings or {})["step_ms"]
            error = (predicted - measured[setting]) / measured[setting]
            errors.append(abs(error))
            points.append({"scenario": spec["name"], "setting": f"{key}={_label(setting)}",
                           "measured step (ms)": round(measured[setting]),
                           "predicted step (ms)": round(predicted), "error": f"{pct(error, 1, signed=True)}"})
        wrong_no_help = action == "cannot_help" and own_ms is not None and best < own_ms / (1 + GAIN_THAT_MATTERS)
        promised = _promise(answer)
        predicted_pick = predict(advice, rec)["step_ms"] if rec else None
        rows.append({
            "scenario": spec["name"], "held out": "yes" if spec.get("held_out") else "no",
            "swept": key, "runs per setting": repeats,
            "verdict": diagnosed.diagnosis.bound,
            "culprit named": answer.culprit_label or "none",
            "culprit right": "yes" if right else "NO",
            "recommended": _label(picked) if action == "set_workers" else f"keep ({_label(own)})",
            "its measured step (ms)": "" if picked_ms is None else round(picked_ms),
            "sweep's best (ms)": f"{round(best)} at {_label(best_setting)}",
            "pick vs best": "" if picked_ms is None else f"{pct((picked_ms / best - 1), 1, signed=True)}",
            "verified": "yes" if answer.verified else "no",
            "promised (ms)": "" if promised is None else round(promised),
            "promise vs sweep": "" if promised is None or picked_ms is None
            else f"{pct((promised / picked_ms - 1), 1, signed=True)}",
            "model at pick vs sweep": "" if predicted_pick is None or picked_ms is None
            else f"{pct((predicted_pick / picked_ms - 1), 1, signed=True)}",
            PICK_WITHIN: "not swept" if picked_ms is None
            else within_best(picked_ms, best),
            WRONG_NO_HELP: "NO" if wrong_no_help else "no",
            "worst prediction error": f"{pct(max(errors), 1)}",
            PREDICTIONS_WITHIN: "yes" if max(errors) <= PREDICTION_TARGET else "NO",
            **peer_columns(((diagnosed.diagnosis.peers or {}).get("msanalyzer") if diagnosed.diagnosis else None),
                           key, moves, measured, best),
            **autotune_columns(next((a for a in arms if (a.summary.scenario or {}).get("role") == "peer"
                                     and a.summary.scenario["name"] == spec["name"]), None),
                               medians, best),
        })
    return pd.DataFrame(rows), pd.DataFrame(points)


UNSCORED_PREFETCH = "unscored (prefetch_size is not swept)"


def within_best(step: float, best: float) -> str:
    """"yes" when a measured step is within GAIN_THAT_MATTERS of the best, else "NO"."""
    return "yes" if step <= best * (1 + GAIN_THAT_MATTERS) else "NO"


def peer_columns(reading: dict | None, key: str, moves: bool, measured: dict, best: float) -> dict[str, str]:
    """MindSpore's analyzer scored like ours: its culprit (right when it names the swept
    operator where the sweep moves the step; where it does not, right unless it sends the user
    to that operator), and its advice followed, where the sweep measured it."""
    if reading is None:
        return {ANALYZER_CULPRIT: "not run", ANALYZER_RIGHT: "", ANALYZER_ADVICE: "", ANALYZER_WITHIN: ""}
    if reading.get("error"):
        return {ANALYZER_CULPRIT: "did not run", ANALYZER_RIGHT: "", ANALYZER_ADVICE: reading["error"],
                ANALYZER_WITHIN: "unscored"}
    names_key = reading.get("key") == key
    right = names_key if moves else not (names_key and reading.get("knob"))
    within = UNSCORED_PREFETCH if reading.get("knob") == "prefetch_size" else "unscored"
    settings = reading.get("settings") or {}
    if names_key and key in settings:
        at = measured.get((int(settings[key]), False))
        within = "not swept" if at is None else within_best(at, best)
    return {ANALYZER_CULPRIT: reading.get("operator") or "none", ANALYZER_RIGHT: "yes" if right else "NO",
            ANALYZER_ADVICE: reading.get("advice") or "", ANALYZER_WITHIN: within}


def autotune_columns(arm, medians: dict[str, float], best: float) -> dict[str, str]:
    """The scenario run with MindSpore's AutoTune (study `autotune: true`): the setting it
    settled on and its measured step (median of its repeats) against the sweep's best."""
    if arm is None:
        return {}
    reading = ((arm.diagnosis.peers or {}).get("autotune") if arm.diagnosis else None) or {}
    step = medians.get(arm.summary.arm)
    return {"AutoTune settled on": reading.get("advice") or "no setting saved",
            "AutoTune step (ms)": "" if step is None else round(step),
            AUTOTUNE_WITHIN: "" if step is None else within_best(step, best)}


def _promise(answer: Recommendation) -> float | None:
    """The step the answer promises: for a change, the verified (measured) one, else the model's;
    for keeping the setting, the run's own measured step."""
    if answer.action != "set_workers":
        return answer.measured_step_ms
    return answer.verified_step_ms if answer.verified else answer.predicted_step_ms


def summary_line(table: pd.DataFrame) -> str:
    """One sentence: how many scenarios met each goal."""
    if table.empty:
        return ""
    n = len(table)
    return (f"{n} scenario(s): culprit right in {(table['culprit right'] == 'yes').sum()}, recommended "
            f"setting within {pct(GAIN_THAT_MATTERS)} of the sweep's best in {(table[PICK_WITHIN] == 'yes').sum()}, "
            f"a wrong 'no setting helps' in {(table[WRONG_NO_HELP] == 'NO').sum()}, "
            f"the answer verified by measurement in {(table['verified'] == 'yes').sum()}, "
            f"every prediction within {pct(PREDICTION_TARGET)} in {(table[PREDICTIONS_WITHIN] == 'yes').sum()}"
            + (f"; MindSpore's own analyzer named the right culprit in "
               f"{(table[ANALYZER_RIGHT] == 'yes').sum()} of {(table[ANALYZER_RIGHT] != '').sum()}"
               if ANALYZER_RIGHT in table and (table[ANALYZER_RIGHT] != "").any() else "")
            + (f"; AutoTune's setting within {pct(GAIN_THAT_MATTERS)} of the sweep's best in "
               f"{(table[AUTOTUNE_WITHIN] == 'yes').sum()} of {table[AUTOTUNE_WITHIN].notna().sum()}"
               if AUTOTUNE_WITHIN in table else "") + ".")
