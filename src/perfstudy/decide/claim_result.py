"""A claim's result and the study's scorecard (scorecard.json): typed records.

`ClaimResult` is made by perfstudy.decide.claims.score (each claim judged over the repeats),
its `history` by perfstudy.decide.scorecard.with_history; `Scorecard` is written by
scorecard.write and read back by read_scorecard only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfstudy.common.records import doc, read_record, write_record

FILE = "scorecard.json"
RESULTS = ("holds", "does not hold", "inconclusive", "not scored")


@dataclass(frozen=True)
class ClaimHistory:
    """A claim's line across the study's recorded runs on this machine kind."""

    runs: int = doc("recorded runs, this one included")
    held: int = doc("runs in which it held")
    text: str = doc("the line as the report and MLflow show it")
    fragile: bool = doc("its verdict changed, or its margin to the bound is inside the spread")
    why: str | None = doc("why it is fragile", default=None)
    values: list[float] | None = doc("its value in each run (numeric claims)", default=None)
    spread: float | None = doc("max - min across the runs (or its interval's width)", default=None)
    margin: float | None = doc("distance of this run's value to the nearest bound", default=None)


@dataclass(frozen=True)
class ClaimResult:
    """One claim, checked against the measured arms."""

    id: str = doc("the claim's id (the claims file's)")
    claim: str = doc("the claim in words")
    source: str = doc("article | study")
    metric: str = doc("the measured quantity (perfstudy.decide.claims.METRICS)")
    arm: str = doc("the arm measured")
    against: str | None = doc("the arm compared with (speedups)")
    check: str = doc("the bound, as text ('>= 1.05x')")
    published: Any = doc("the paper's value")
    published_text: str = doc("the paper's value, formatted")
    note: str = doc("the claims file's note")
    measured: Any = doc("the value (the median over repeats); None: not scored")
    measured_text: str = doc("the value as the report shows it (with its interval or range)")
    detail: str | None = doc("how it was measured, or why it could not be")
    passed: bool | None = doc("holds: True; does not hold: False; inconclusive or not scored: None")
    result: str = doc("holds | does not hold | inconclusive | not scored")
    repeats: int = doc("the repeats it was measured on")
    values: list[Any] | None = doc("its value on each repeat (repeats > 1)", default=None)
    interval: list[float] | None = doc("low, high over the repeats (numeric claims)", default=None)
    interval_kind: str | None = doc("what the interval is: 'range' (min-max, below 6 repeats) "
                                    "or 'order-statistic' with its exact coverage",
                                    default=None)
    history: ClaimHistory | None = doc("its line across the recorded runs", default=None)


@dataclass(frozen=True)
class Scorecard:
    """The study's claims, scored (scorecard.json): shown first in the report."""

    SCHEMA_VERSION = 2  # 2: interval_kind is "range" below 6 repeats, else "order-statistic <coverage>"
    KIND = "scorecard (scorecard.json)"
    RERUN = "make the report again with this code (snakemake --cores all --forcerun report)"

    title: str = doc("the claims file's title")
    reference: str = doc("what the claims come from")
    claims: list[ClaimResult] = doc("each claim's result, in the file's order")
    scored: int = doc("claims that hold or do not hold")
    held: int = doc("claims that hold")
    inconclusive: int = doc("claims the repeats cannot decide")
    not_scored: int = doc("claims this study cannot measure")
    repeats: int = doc("repeats of the study")
    headline: str = doc("the report's first sentence")
    history: dict[str, Any] | None = doc("where the history comes from: runs, machine kind, "
                                         "other machines, error", default=None)
    fragile: list[str] = doc("ids of the fragile claims", default_factory=list)


def read_scorecard(folder: str | Path) -> Scorecard:
    """Read `folder`/scorecard.json (refused, in one sentence, if another schema version)."""
    return read_record(Path(folder) / FILE, Scorecard)


def write_scorecard(folder: str | Path, card: Scorecard) -> Path:
    """Write `folder`/scorecard.json."""
    return write_record(Path(folder) / FILE, card)


__all__ = ["ClaimHistory", "ClaimResult", "Scorecard", "read_scorecard", "write_scorecard"]
