"""The report's verification sections: each arm's settings measured in interleaved rounds
(predicted against measured, the paired ratio to the run's own setting with its interval, the
outcome), what the rounds cost, and the model's accuracy by operator kind across a benchmark."""

from __future__ import annotations

import pandas as pd

from perfstudy.common.thresholds import PREDICTION_TARGET, pct
from perfstudy.decide.verify import accuracy_rows, cost_sentence, operator_kind


def windows_table(arms: list) -> pd.DataFrame:
    """One row per verified setting of every arm."""
    rows = []
    for arm in arms:
        checked = arm.diagnosis.recommendation.verification if arm.diagnosis else None
        if checked is None:
            continue
        advice = arm.diagnosis.advisor
        for index, m in enumerate(checked.settings):
            comp = m.comparison
            rows.append({
                "arm": arm.name, "setting": m.label,
                "role": _role(m),
                "kind": operator_kind(advice, m.settings) if advice else "",
                "predicted (ms)": round(m.predicted_ms),
                "measured (ms)": "" if m.measured_ms is None else round(m.measured_ms),
                "error": "" if m.error is None else pct(m.error, 1, signed=True),
                **_band(advice, m.predicted_ms, m.measured_ms),
                "rounds": m.windows, "steps": m.steps,
                "step / current (95 %)": "reference" if comp is None else comp.words(),
                "outcome": "" if comp is None else comp.outcome,
                "recommended": "yes" if index == checked.chosen and index else ""})
    return pd.DataFrame(rows)


def _band(advice, predicted_ms: float, measured_ms: float | None) -> dict[str, str]:
    """The model's band around a prediction and whether it holds the measured step ('' where
    no band shipped or an end is open)."""
    low, high = advice.interval(predicted_ms) if advice else (None, None)
    if low is None or high is None:
        return {"model's band (ms)": "", "band holds it": ""}
    held = "" if measured_ms is None else "yes" if low <= measured_ms <= high else "NO"
    return {"model's band (ms)": f"{low:.0f}-{high:.0f}", "band holds it": held}


def cost_lines(arms: list) -> list[str]:
    """Each arm's verification cost, in words."""
    lines = []
    for arm in arms:
        verification = arm.summary.verification
        text = cost_sentence(verification)
        if text:
            lines.append(f"{arm.name}: {text}")
        elif verification is not None and verification.plan and verification.reused:
            lines.append(f"{arm.name}: no rounds (0 s): earlier runs' rounds settled, or left out "
                         f"of this run's reach, every candidate "
                         f"({', '.join(f'{r.label} in {r.source_run}' for r in verification.reused)}).")
        elif verification is not None and verification.skipped:
            lines.append(f"{arm.name}: not verified: {verification.skipped}.")
    return lines


def accuracy_by_kind(arms: list) -> pd.DataFrame:
    """The model's predicted-vs-measured error over every verified setting, by the kind of
    operator the setting is about; held-out scenarios' settings counted apart."""
    rows = []
    for arm in arms:
        advice = (arm.diagnosis.advisor if arm.diagnosis else None)
        if not advice:
            continue
        held_out = arm.summary.scenario is not None and arm.summary.scenario.held_out
        for row in accuracy_rows(arm.diagnosis.recommendation.verification):
            rows.append({"kind": operator_kind(advice, row.settings), "held_out": held_out,
                         "error": abs(row.error)})
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    out = []
    for (kind, held_out), group in frame.groupby(["kind", "held_out"]):
        out.append({"operator kind": kind, "held out": "yes" if held_out else "no",
                    "settings": len(group), "mean absolute error": f"{pct(group['error'].mean(), 1)}",
                    "worst absolute error": f"{pct(group['error'].max(), 1)}",
                    f"within {pct(PREDICTION_TARGET)}":
                        f"{(group['error'] <= PREDICTION_TARGET).sum()} of {len(group)}"})
    return pd.DataFrame(out)


def _role(m) -> str:
    """The row's role, with where its comparison's rounds come from when not this run alone."""
    if m.reused_from:
        how = "out of reach in" if m.out_of_reach else "settled by"
        return f"{m.role}, {how} {m.reused_from}'s rounds"
    if m.pooled_with:
        return f"{m.role}, pooled with {' and '.join(m.pooled_with)}'s rounds"
    return m.role
