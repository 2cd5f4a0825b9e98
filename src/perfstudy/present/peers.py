"""The report's side-by-side of the tools users have: per analysed arm, the operator and the
knob each tool names (ours, MindSpore's MindData analyzer), and where the study runs AutoTune,
the setting it settled on and the step it measured; in a study with a sweep of fixed
settings, each tool scored against it."""

from __future__ import annotations

import pandas as pd

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.decide import arms as arms_mod
from perfstudy.decide.peers import ANALYZER
from perfstudy.decide.scenarios import UNSCORED_PREFETCH
from perfstudy.run.settings import PRIMARY_KEY


def within_best(step: float, best: float) -> str:
    """"yes" when a measured arm's step is within GAIN_THAT_MATTERS of the best arm's, else
    "NO" (separate runs: a point comparison, not a decided one)."""
    return "yes" if step <= best * (1 + GAIN_THAT_MATTERS) else "NO"


def table(arms: list) -> pd.DataFrame:
    """One row per analysed arm."""
    rows = []
    baseline = next((a for a in arms if a.name == "baseline"), None)
    for arm in arms:
        readings = (arm.diagnosis.peers if arm.diagnosis else None)
        if not readings:
            continue
        ours, analyzer = readings.ours, readings.msanalyzer
        row = {"arm": arm.name, "ours: operator": ours.operator or "none",
               "ours: advice": ours.advice,
               f"{ANALYZER}: operator": "profiler off" if analyzer is None else analyzer.operator or "none",
               f"{ANALYZER}: advice": "" if analyzer is None else analyzer.advice}
        tuned = readings.autotune
        if tuned is not None:
            speed = ""
            if baseline is not None and tuned.step_ms and baseline.summary.steady_step_ms:
                speed = f" ({baseline.summary.steady_step_ms / tuned.step_ms:.2f}x the baseline)"
            row["AutoTune: settled on, measured"] = (
                f"{tuned.advice}; {tuned.step_ms:.0f} ms{speed}" if tuned.step_ms else tuned.advice)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if "AutoTune: settled on, measured" in frame:
        frame["AutoTune: settled on, measured"] = frame["AutoTune: settled on, measured"].fillna("")
    return frame


def against_sweep(arms: list) -> pd.DataFrame:
    """A study with fixed-worker arms of the source arm's pipeline (the sweep study): each tool
    scored like the scenario benchmark: its culprit (right when it names the swept map's
    workers, the step moving >= 10 % across the arms), and its advice followed, within 10 % of
    the fastest fixed arm where an arm ran it (prefetch_size: unscored, said so)."""
    source = arms_mod.source_arm(arms)
    if source is None:
        return pd.DataFrame()
    fixed = arms_mod.fixed_arms(arms, source)
    steps = {arms_mod.arm_workers(a): a.summary.steady_step_ms for a in fixed}
    if len(steps) < 2:
        return pd.DataFrame()
    best = min(steps.values())
    moves = max(steps.values()) / best - 1 >= GAIN_THAT_MATTERS
    readings = source.diagnosis.peers
    rows = []
    for reading in (readings.ours, readings.msanalyzer) if readings else ():
        if not reading:
            continue
        names = reading.key == PRIMARY_KEY
        settings = reading.settings or {}
        ran = steps.get(int(settings[PRIMARY_KEY])) if PRIMARY_KEY in settings else None
        if reading.knob == "prefetch_size":
            within = UNSCORED_PREFETCH
        elif reading.knob is None:
            within = within_best(steps.get(arms_mod.arm_workers(source), best), best)
        else:
            within = "not swept" if ran is None else within_best(ran, best)
        rows.append({"tool": reading.tool, "culprit": reading.operator or "none",
                     "culprit right": "yes" if (names if moves else not names) else "NO",
                     "advice": reading.advice, "its measured step (ms)": "" if ran is None else round(ran),
                     f"within {pct(GAIN_THAT_MATTERS)} of the best": within})
    for arm in arms:
        tuned = arm.diagnosis.peers.autotune if arm.diagnosis and arm.diagnosis.peers else None
        if tuned and tuned.step_ms:
            rows.append({"tool": f"{tuned.tool} ({arm.name})", "culprit": tuned.operator,
                         "culprit right": "yes" if ((tuned.settings or {}).get(PRIMARY_KEY, 1) > 1) == moves
                         else "NO", "advice": tuned.advice, "its measured step (ms)": round(tuned.step_ms),
                         f"within {pct(GAIN_THAT_MATTERS)} of the best": within_best(tuned.step_ms, best)})
    return pd.DataFrame(rows)
