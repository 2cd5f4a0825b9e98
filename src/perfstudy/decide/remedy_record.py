"""The decode remedy's evidence as typed records (the report's prepared.json; prepared.csv is the
same rows for a spreadsheet). Made by perfstudy.decide.remedy.evidence, read by the claims, the
report's sentences and scripts/track_study.py (MLflow), never by string columns.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from perfstudy.common.records import doc, read_record, write_record

FILE = "prepared.json"


@dataclass(frozen=True)
class Cost:
    """What the preparation took and made (once, for every arm that reads the record)."""

    wall_s: float = doc("the preparation's wall time")
    cpu_s: float = doc("its CPU time")
    workers: int = doc("the processes it used")
    bytes_before: int = doc("the source JPEGs' bytes")
    bytes_after: int = doc("the prepared copy's bytes (its MindRecord or ImageFolder files)")
    megapixels_before: float = doc("mean megapixels per source image")
    megapixels_after: float = doc("mean megapixels per prepared image")
    psnr_min_db: float = doc("the lowest PSNR of a prepared image against a resize of the full decode")
    rule: str = doc("the bound on the resolution, in words")
    format: str = doc("mindrecord | imagefolder", default="mindrecord")


@dataclass(frozen=True)
class PairedGain:
    """The source's step over the prepared one, paired by round in the prepared arm's run
    (perfstudy.run.remedy_rounds), and the prediction's error read against it."""

    speedup: float = doc("source step / prepared step, the geometric mean over the rounds")
    low: float = doc("its interval's lower end")
    high: float = doc("its interval's upper end")
    rounds: int = doc("the interleaved rounds behind it")
    level: float = doc("the interval's confidence level")
    error: float | None = doc("predicted ratio x paired speedup - 1 (None: no prediction)",
                              default=None)
    error_low: float | None = doc("the error's interval, lower end", default=None)
    error_high: float | None = doc("the error's interval, upper end", default=None)


@dataclass(frozen=True)
class SourcePair:
    """The arm that trained on the prepared record's source at the same operator settings."""

    arm: str = doc("its name")
    step_ms: float = doc("its steady step")
    images_per_s: float = doc("its images per second")
    speedup: float = doc("the prepared arm's images/s over it (two arms' windows, not paired)")
    predicted_step_ms: float | None = doc("its diagnosis's prediction of the prepared step, made "
                                          "before the prepared arm ran")
    prediction_error: float | None = doc("predicted / measured prepared step - 1 (two windows)")
    payback_steps: float | None = doc("preparation wall time / the saving per step (None: the "
                                      "prepared arm is not faster, it never pays back)")
    payback_epochs: float | None = doc("the same in epochs of this dataset")


@dataclass(frozen=True)
class RemedyEvidence:
    """One prepared arm: measured, against its source, predicted, and what it cost."""

    arm: str = doc("the prepared arm")
    steady_step_ms: float = doc("its steady step")
    images_per_s: float = doc("its images per second")
    gap_share: float = doc("its share of the step spent waiting for data")
    steps_trained: int = doc("its training steps")
    cost: Cost = doc("the preparation's cost")
    source: SourcePair | None = doc("the arm on the source at the same settings (None: none ran)",
                                    default=None)
    paired: PairedGain | None = doc("against its source in its own run (None: not measured)",
                                    default=None)


@dataclass(frozen=True)
class Remedies:
    """Every prepared arm of a study (prepared.json)."""

    SCHEMA_VERSION = 1
    KIND = "remedy evidence file (prepared.json)"
    RERUN = "make the report again (snakemake --forcerun report)"

    arms: list[RemedyEvidence] = doc("one per prepared arm, in the study's order")

    def of(self, arm: str) -> RemedyEvidence | None:
        return next((r for r in self.arms if r.arm == arm), None)

    def from_source(self, arm: str) -> RemedyEvidence | None:
        """The prepared arm whose source arm is `arm`."""
        return next((r for r in self.arms if r.source and r.source.arm == arm), None)


def frame(remedies: Remedies) -> pd.DataFrame:
    """The rows as a table (prepared.csv): nested records flattened as source_*, paired_*."""
    rows = []
    for r in remedies.arms:
        row = {k: v for k, v in asdict(r).items() if k not in ("cost", "source", "paired")}
        for prefix, part in (("preparation_", r.cost), ("source_", r.source), ("paired_", r.paired)):
            if part is not None:
                row.update({prefix + k: v for k, v in asdict(part).items()})
        rows.append(row)
    return pd.DataFrame(rows)


def write_remedies(folder: str | Path, remedies: Remedies) -> Path:
    return write_record(Path(folder) / FILE, remedies)


def read_remedies(folder: str | Path) -> Remedies:
    """`folder`/prepared.json, or no arms where the study had no prepared arm."""
    path = Path(folder) / FILE
    return read_record(path, Remedies) if path.is_file() else Remedies(arms=[])


__all__ = ["Cost", "PairedGain", "RemedyEvidence", "Remedies", "SourcePair", "frame",
           "read_remedies", "write_remedies"]
