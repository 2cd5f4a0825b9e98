"""Repeats of every arm (workflow/config.yaml `repeats`): spread across seeds and the speedup's interval.

Per arm, over its repeats' steady steps: median, olympic mean (the fastest and the slowest
dropped, as MLPerf and DESIGN.md do, from 3 repeats on), min, max and the relative spread.
The speedup of each arm over the baseline is the ratio of medians, with the 95 % interval of
the speedup paired by repeat (repeat k of the baseline with repeat k of the arm: the runs of
one round, measured close in time; Student-t on the per-round log ratios,
perfstudy.measure.intervals), so the host's drift between rounds falls out of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfstudy.common.thresholds import pct
from perfstudy.measure.intervals import ratio_interval

CONFIDENCE = 0.95


def olympic_mean(values: list[float]) -> float:
    """Mean without the fastest and the slowest (plain mean below 3 values)."""
    ordered = sorted(values)
    return float(np.mean(ordered[1:-1] if len(ordered) >= 3 else ordered))


def speedup_interval(baseline: list[float], arm: list[float]) -> tuple[float, float]:
    """The 95 % interval of the speedup baseline / arm paired by repeat (lists in repeat order:
    round k is baseline[k] with arm[k]); NaNs below 2 paired rounds."""
    pairs = list(zip(baseline, arm, strict=False))
    if len(pairs) < 2:
        return float("nan"), float("nan")
    found = ratio_interval([a for _, a in pairs], [b for b, _ in pairs], CONFIDENCE)
    return found.low, found.high


def by_arm(runs: list) -> dict[str, list]:
    """Runs grouped by their arm, in the order the arms first appear."""
    groups: dict[str, list] = {}
    for run in runs:
        groups.setdefault(run.summary.arm, []).append(run)
    return groups


def table(runs: list, baseline: str = "baseline") -> pd.DataFrame:
    """repeats.csv: one row per arm."""
    groups = by_arm(runs)
    steady = {arm: [r.summary.steady_step_ms for r in sorted(group, key=lambda r: r.summary.repeat)]
              for arm, group in groups.items()}
    base = steady.get(baseline) or next(iter(steady.values()))
    rows = []
    for arm, values in steady.items():
        low, high = speedup_interval(base, values)
        shares = [r.summary.gap_share for r in groups[arm]]
        rows.append({
            "arm": arm, "repeats": len(values), "seeds": " ".join(str(r.summary.seed) for r in groups[arm]),
            "steady_step_ms_median": float(np.median(values)),
            "steady_step_ms_olympic_mean": olympic_mean(values),
            "steady_step_ms_min": float(min(values)), "steady_step_ms_max": float(max(values)),
            "spread": (max(values) - min(values)) / float(np.median(values)),
            "gap_share_median": float(np.median(shares)),
            "gap_share_min": float(min(shares)), "gap_share_max": float(max(shares)),
            "speedup_median": float(np.median(base)) / float(np.median(values)),
            "speedup_ci_low": low, "speedup_ci_high": high,
        })
    return pd.DataFrame(rows)


def order_lines(runs: list) -> list[str]:
    """The rounds of repeats as they trained (by each run's start time): one line per round."""
    rounds: dict[int, list] = {}
    for run in runs:
        rounds.setdefault(run.summary.repeat, []).append(run)
    if len(rounds) < 2:
        return []
    lines = []
    for k in sorted(rounds):
        group = sorted(rounds[k], key=lambda r: r.summary.started_at or "")
        unknown = any(r.summary.started_at is None for r in group)
        lines.append(f"round {k}: " + " → ".join(r.summary.arm for r in group)
                     + (" (some start times were not recorded)" if unknown else ""))
    return lines


def report_table(frame: pd.DataFrame) -> pd.DataFrame:
    """repeats.csv as the report shows it."""
    def interval(row) -> str:
        if row.speedup_ci_low != row.speedup_ci_low:  # NaN: fewer than 2 repeats
            return "(needs 2+ repeats)"
        return f"{row.speedup_ci_low:.2f}x .. {row.speedup_ci_high:.2f}x"
    return pd.DataFrame([{
        "arm": row.arm, "repeats (seeds)": f"{row.repeats} ({row.seeds})",
        "median (ms)": f"{row.steady_step_ms_median:.0f}",
        "olympic mean (ms)": f"{row.steady_step_ms_olympic_mean:.0f}",
        "min .. max (ms)": f"{row.steady_step_ms_min:.0f} .. {row.steady_step_ms_max:.0f}",
        "spread": f"{pct(row.spread, 1)}",
        "gap share (median, min .. max)": (f"{pct(row.gap_share_median, 1)} "
                                           f"({100 * row.gap_share_min:.1f} .. {100 * row.gap_share_max:.1f})"),
        "speedup (median)": f"{row.speedup_median:.2f}x",
        f"{pct(CONFIDENCE)} interval (paired by repeat)": interval(row),
    } for row in frame.itertuples(index=False)])


def describe(changes: dict, diagnosis: dict) -> str:
    from perfstudy.decide.advisor import describe_changes

    return "set " + describe_changes(changes, diagnosis.advisor)


def _answer(diagnosis: dict) -> str:
    """A repeat's answer as a user would act on it: the settings it changes, or keep."""
    changes = diagnosis.recommendation.changes or {}
    return describe(changes, diagnosis) if changes else "keep the setting"


@dataclass(frozen=True)
class AcrossRepeats:
    """One arm's answer over its repeats, set against the run-to-run noise (answers.csv's row)."""

    arm: str
    repeats: int
    answers: dict[str, int]  # each answer given, and by how many repeats
    spread: float  # (max - min) / median of the arm's step across the repeats
    settled: bool
    sentence: str


def answers(runs: list, margin: float = 0.10) -> list[AcrossRepeats]:
    """Each diagnosed arm's answer over its repeats, set against the run-to-run noise: the
    answers' counts, the step's spread across the repeats, and `settled`: every repeat gave
    the same answer, and an answer that changes a setting measured a gain beyond both the
    margin (10 %) and the step's run-to-run spread. Arms with one repeat are left out."""
    out = []
    for arm, group in by_arm(runs).items():
        diagnosed = [r for r in group if r.diagnosis]
        if len(diagnosed) < 2:
            continue
        given = [_answer(r.diagnosis) for r in diagnosed]
        steps = [r.summary.steady_step_ms for r in group]
        spread = (max(steps) - min(steps)) / float(np.median(steps))
        gains = [r.diagnosis.recommendation.measured_gain for r in diagnosed
                 if r.diagnosis.recommendation.changes]
        gains = [g for g in gains if g is not None]
        counts = {a: given.count(a) for a in dict.fromkeys(given)}
        agree = len(counts) == 1
        clear = min(gains) > max(margin, spread) if gains else True
        if not agree:
            changes = [r.diagnosis.recommendation.changes or {} for r in diagnosed]
            common = {k: v for k, v in changes[0].items() if all(c.get(k) == v for c in changes[1:])}
            why = (f"the repeats disagree ({'; '.join(f'{a}: {n} of {len(given)}' for a, n in counts.items())}): "
                   "their verification windows do not tell these settings apart on this machine "
                   f"(the arm's step itself moved {pct(spread)} between repeats)")
            if common:
                why += (f"; every repeat agrees on {describe(common, diagnosed[0].diagnosis)}"
                        ", the rest is not settled")
        elif not clear:
            why = (f"every repeat says {given[0]}, but its smallest measured gain "
                   f"({pct(min(gains))}) is inside the step's run-to-run spread "
                   f"({pct(spread)}) or the {pct(margin)} margin")
        else:
            why = f"every repeat says {given[0]}"
        out.append(AcrossRepeats(arm=arm, repeats=len(given), answers=counts, spread=spread,
                                 settled=agree and clear, sentence=f"Across {len(given)} repeats: {why}."))
    return out
