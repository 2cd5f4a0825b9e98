"""The report's side-by-side of the tools users have: per analysed arm, the operator and the
knob each tool names (ours, MindSpore's MindData analyzer), and where the study runs AutoTune,
the setting it settled on and the step it measured."""

from __future__ import annotations

import pandas as pd

from perfstudy.decide.peers import ANALYZER


def table(arms: list) -> pd.DataFrame:
    """One row per analysed arm."""
    rows = []
    baseline = next((a for a in arms if a.name == "baseline"), None)
    for arm in arms:
        readings = (arm.diagnosis or {}).get("peers")
        if not readings:
            continue
        ours, analyzer = readings["ours"], readings.get("msanalyzer")
        row = {"arm": arm.name, "ours: operator": ours.get("operator") or "none",
               "ours: advice": ours.get("advice"),
               f"{ANALYZER}: operator": "profiler off" if analyzer is None else analyzer.get("operator") or "none",
               f"{ANALYZER}: advice": "" if analyzer is None else analyzer.get("advice")}
        tuned = readings.get("autotune")
        if tuned is not None:
            speed = ""
            if baseline is not None and tuned.get("step_ms") and baseline.summary.get("steady_step_ms"):
                speed = f" ({baseline.summary['steady_step_ms'] / tuned['step_ms']:.2f}x the baseline)"
            row["AutoTune: settled on, measured"] = (
                f"{tuned['advice']}; {tuned['step_ms']:.0f} ms{speed}" if tuned.get("step_ms") else tuned["advice"])
        rows.append(row)
    frame = pd.DataFrame(rows)
    if "AutoTune: settled on, measured" in frame:
        frame["AutoTune: settled on, measured"] = frame["AutoTune: settled on, measured"].fillna("")
    return frame
