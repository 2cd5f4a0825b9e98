"""The report's verification sections: each arm's windows (predicted against measured, and
what they cost), and the model's accuracy by operator kind across a benchmark's arms."""

from __future__ import annotations

import pandas as pd

from perfstudy.common.thresholds import PREDICTION_TARGET, pct
from perfstudy.decide.advisor import canonical
from perfstudy.decide.verification import accuracy_rows, cost_sentence, operator_kind


def windows_table(arms: list) -> pd.DataFrame:
    """One row per verification window of every arm."""
    rows = []
    for arm in arms:
        verification = arm.summary.verification or {}
        advice = (arm.diagnosis.advisor if arm.diagnosis else None)
        chosen = arm.diagnosis.recommendation.settings if arm.diagnosis else None
        for w in verification.get("windows", []):
            measured = w.get("step_ms")
            rows.append({
                "arm": arm.name, "setting": w["label"], "role": w["role"],
                "kind": operator_kind(advice, w["settings"]) if advice else "",
                "predicted (ms)": round(w["predicted_ms"]),
                "measured (ms)": "" if measured is None else round(measured),
                "± (se)": "" if measured is None else pct(w["rse"], 1),
                "steps": w.get("steps_measured", ""),
                "error": "" if measured is None
                else pct((w["predicted_ms"] - measured) / measured, 1, signed=True),
                "steady": w.get("skipped") or ("the run's window" if w.get("main_window")
                                               else "yes" if w.get("steady") else "no"),
                "recommended": "yes" if chosen is not None and canonical(w["settings"]) == canonical(chosen) else ""})
    return pd.DataFrame(rows)


def cost_lines(arms: list) -> list[str]:
    """Each arm's verification cost, in words."""
    lines = []
    for arm in arms:
        text = cost_sentence(arm.summary.verification)
        if text:
            lines.append(f"{arm.name}: {text}")
        elif (arm.summary.verification or {}).get("skipped"):
            lines.append(f"{arm.name}: not verified: {arm.summary.verification['skipped']}.")
    return lines


def accuracy_by_kind(arms: list) -> pd.DataFrame:
    """The model's predicted-vs-measured error over every verification window, by the kind of
    operator the window's setting is about; held-out scenarios' windows counted apart."""
    rows = []
    for arm in arms:
        advice = (arm.diagnosis.advisor if arm.diagnosis else None)
        if not advice:
            continue
        held_out = bool((arm.summary.scenario or {}).get("held_out"))
        for row in accuracy_rows(arm.summary.verification):
            rows.append({"kind": operator_kind(advice, row["settings"]), "held_out": held_out,
                         "error": abs(row["error"])})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    out = []
    for (kind, held_out), group in frame.groupby(["kind", "held_out"]):
        out.append({"operator kind": kind, "held out": "yes" if held_out else "no",
                    "windows": len(group), "mean |error|": f"{pct(group['error'].mean(), 1)}",
                    "worst |error|": f"{pct(group['error'].max(), 1)}",
                    f"within {pct(PREDICTION_TARGET)}":
                        f"{(group['error'] <= PREDICTION_TARGET).sum()} of {len(group)}"})
    return pd.DataFrame(out)
