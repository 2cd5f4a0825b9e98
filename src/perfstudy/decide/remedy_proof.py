"""The decode remedy, proved: each prepared arm against the arm that trained on its source at the
same operator settings, the prediction made before it ran, and what the preparation cost.

A prepared arm (summary dataset.prepared) pairs with the arm of the same study that read the
prepared dataset's source with the same settings of every sized operator (baseline <->
prepared, tuned <-> prepared_tuned). The prediction is the paired arm's diagnosis's
`prepared_prediction` at the prepared arm's settings (made from that arm's measured decode
cost per megapixel, before the prepared arm ran).

Its evidence is typed (`Remedies`: the report's prepared.json; prepared.csv is the same rows
for a spreadsheet), made by `evidence`, read by the claims, the report's sentences and
scripts/track_study.py (MLflow), never by string columns.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from perfstudy.common.records import doc, read_record, write_record
from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.data.prepared_record import PreparedFacts
from perfstudy.decide.paired import prediction_error
from perfstudy.decide.remedies import prepared_step_at
from perfstudy.measure import rounds as rounds_mod
from perfstudy.measure.rounds import Comparison
from perfstudy.run.settings import Settings
from perfstudy.run.verify_record import AgainstSource

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



CHANGES = ("what changes for training: each random crop is cut from the source downsized to the "
           "bounded resolution (never fewer pixels than the network's input; resampled with "
           "Lanczos and re-encoded as JPEG, PSNR {psnr:.1f} dB or better against a resize of the "
           "full decode), so a large crop is resized from fewer source pixels")
SAME = ("what does not: the images, their labels and their order under the same seed (rows "
        "written in ImageFolderDataset's order, read with its sampler's permutation), the "
        "transforms, batch, network, optimizer and seed")


def _prepared(arm) -> PreparedFacts | None:
    return arm.summary.dataset.prepared


def _settings(arm) -> Settings:
    settings = dict(arm.summary.operator_settings or {})
    settings.setdefault("pipeline.num_parallel_workers",
                        arm.summary.num_parallel_workers.effective)
    return settings


def _training(arm) -> tuple:
    """What must be the same for two arms to differ only in their data: the factories (model,
    pipeline, loss, optimizer, precision, labels), the batch and the input size."""
    s = arm.summary
    return s.factories, s.batch_size, s.image_size


def pair(arm, arms: list) -> Any | None:
    """The arm that read this prepared arm's source with the same training at the same operator
    settings (a study with two models pairs each prepared arm with its own model's)."""
    info = _prepared(arm)
    if not info:
        return None
    source_sha = info.source_manifest.dataset_sha256
    for other in arms:
        if (other is not arm and not _prepared(other)
                and other.summary.dataset_sha256 == source_sha
                and _settings(other) == _settings(arm) and _training(other) == _training(arm)):
            return other
    return None


def prediction_bounds(source_run: str | Path, bound: float) -> list[float]:
    """The paired gains (source step over prepared step) at which a claim that the source's
    prediction of the prepared step is within `bound` turns: the prediction, relative to the
    source's step it was made from, met within +-bound, is a gain between (1 - bound) and
    (1 + bound) over that relative step (perfstudy.decide.paired.prediction_error, inverted).
    Read from the source run's diagnosis and summary, at the source run's own operator settings
    (a prepared run is paired with a source run at the same ones); [] where it made no
    prediction there or its records are missing."""
    from perfstudy.decide.diagnosis import read_diagnosis
    from perfstudy.run.summary import read_summary

    folder = Path(source_run)
    if not (folder / "diagnosis.json").is_file() or not (folder / "summary.json").is_file():
        return []
    summary = read_summary(folder)
    diagnosis = read_diagnosis(folder)
    settings = dict(summary.operator_settings or {})
    settings.setdefault("pipeline.num_parallel_workers", summary.num_parallel_workers.effective)
    predicted = prepared_step_at(diagnosis.recommendation.prepared_prediction, settings)
    if not predicted:
        return []
    gain = summary.steady_step_ms / predicted
    return [gain * (1 - bound), gain * (1 + bound)]


def paired_gain(arm) -> Comparison | None:
    """The source's step over the prepared one, paired by round in the prepared arm's own run
    (perfstudy.run.remedy_rounds); None where it did not measure its source, or no round paired."""
    found = arm.summary.against_source
    if found is None or found.rounds is None:
        return None
    c = rounds_mod.compare(found.rounds, AgainstSource.PREPARED, AgainstSource.SOURCE,
                           GAIN_THAT_MATTERS)
    return c if c.ratio is not None and c.low is not None and c.high is not None else None


def evidence(arms: list) -> Remedies:
    """One record per prepared arm: measured, against its source arm, predicted, cost, payback."""
    rows = []
    for arm in arms:
        info = _prepared(arm)
        if not info:
            continue
        s, source = arm.summary, _source(arm, pair(arm, arms))
        rows.append(RemedyEvidence(
            arm=arm.name, steady_step_ms=s.steady_step_ms, images_per_s=s.images_per_s,
            gap_share=s.gap_share, steps_trained=len(arm.steps), cost=_cost(info),
            source=source, paired=_paired(arm, source)))
    return Remedies(arms=rows)


def _cost(info: PreparedFacts) -> Cost:
    cost = info.preparation
    return Cost(wall_s=cost.wall_s, cpu_s=cost.cpu_s, workers=cost.workers,
                bytes_before=info.before.bytes, bytes_after=info.after.record_bytes,
                megapixels_before=info.before.mean_megapixels,
                megapixels_after=info.after.mean_megapixels,
                psnr_min_db=info.psnr_db.min, rule=info.rule, format=info.format)


def _source(arm, source) -> SourcePair | None:
    if source is None:
        return None
    s, base = arm.summary, source.summary
    saving_ms = base.steady_step_ms - s.steady_step_ms
    predicted = prepared_step_at(source.diagnosis.recommendation.prepared_prediction
                                 if source.diagnosis else None, _settings(arm))
    per_epoch = max(1, s.dataset.num_images // s.batch_size)
    payback = _prepared(arm).preparation.wall_s * 1e3 / saving_ms if saving_ms > 0 else None
    return SourcePair(arm=source.name, step_ms=base.steady_step_ms,
                      images_per_s=base.images_per_s,
                      speedup=s.images_per_s / base.images_per_s,
                      predicted_step_ms=predicted,
                      prediction_error=(predicted / s.steady_step_ms - 1) if predicted else None,
                      payback_steps=payback,
                      payback_epochs=payback / per_epoch if payback is not None else None)


def _paired(arm, source: SourcePair | None) -> PairedGain | None:
    """The gain paired by round and the prediction's error read against it: the prediction
    relative to the source's step it was made from (predicted / source step), against the
    paired ratio (prepared / source), so neither side compares two runs' windows."""
    c = paired_gain(arm)
    if c is None:
        return None
    error = low = high = None
    if source is not None and source.predicted_step_ms:
        error, low, high = prediction_error(source.predicted_step_ms / source.step_ms,
                                            c.ratio, c.low, c.high)
    return PairedGain(speedup=c.ratio, low=c.low, high=c.high, rounds=c.rounds, level=c.level,
                      error=error, error_low=low, error_high=high)


def lines(remedies: Remedies) -> list[str]:
    """The report's sentences: the preparation's cost once, then per prepared arm the gain, the
    prediction and the payback; then what the preparation changes for training and what not."""
    if not remedies.arms:
        return []
    c = remedies.arms[0].cost
    made = "MindRecord" if c.format == "mindrecord" else "ImageFolder copy"
    out = [f"Preparation, once ({', '.join(r.arm for r in remedies.arms)} read the same {made}): "
           f"{c.wall_s:.1f} s wall, {c.cpu_s:.1f} s CPU on {c.workers} worker(s); "
           f"{c.bytes_before / 1e6:,.1f} MB of JPEGs -> a {c.bytes_after / 1e6:,.2f} MB "
           f"{made}; {c.megapixels_before:.2f} -> {c.megapixels_after:.4f} megapixels per "
           f"image, {c.rule}."]
    for r in remedies.arms:
        out.append(_line(r))
    psnr = min(r.cost.psnr_min_db for r in remedies.arms)
    out += ["W" + CHANGES.format(psnr=psnr)[1:] + ".", "W" + SAME[1:] + "."]
    return out


def _line(r: RemedyEvidence) -> str:
    src, p = r.source, r.paired
    if src is None:
        text = (f"{r.arm}: {r.steady_step_ms:.0f} ms per step, {r.images_per_s:.1f} images/s; no "
                "arm of this study read its source at the same settings, so there is nothing to "
                "compare it with")
        return text + (f"; against its source in its own run (paired by round, {p.rounds} "
                       f"rounds): {p.speedup:.1f}x ({p.low:.1f}-{p.high:.1f}, {pct(p.level)})."
                       if p else ".")
    text = (f"{r.arm} vs {src.arm} (same settings, the source JPEGs): {r.images_per_s:.1f} "
            f"against {src.images_per_s:.1f} images/s, {src.speedup:.1f}x ({r.steady_step_ms:.0f} "
            f"vs {src.step_ms:.0f} ms per step), waiting for data {pct(r.gap_share, 1)} of the step")
    if p is None:
        text += "; two runs minutes apart, not paired by round (verify.against_source)"
    else:
        text += (f"; paired by round in {r.arm}'s run (the source read at its settings in "
                 f"{p.rounds} interleaved rounds): {p.speedup:.1f}x ({p.low:.1f}-{p.high:.1f}, "
                 f"{pct(p.level)})")
    if src.predicted_step_ms is not None:
        text += (f"; predicted from {src.arm}'s profile before it ran: "
                 f"{src.predicted_step_ms:.0f} ms ({pct(src.prediction_error, signed=True)}"
                 + (f"; against the paired ratio {pct(p.error, signed=True)}, "
                    f"{pct(p.error_low, signed=True)} to {pct(p.error_high, signed=True)}"
                    if p is not None and p.error is not None else "") + ")")
    if src.payback_steps is not None:
        steps = math.ceil(src.payback_steps)
        within = "within" if steps <= r.steps_trained else "beyond"
        return text + (f"; the preparation pays back after {steps} steps "
                       f"({src.payback_epochs:.1f} epochs), {within} this arm's own "
                       f"{r.steps_trained} steps.")
    return text + "; the preparation never pays back here (the prepared arm is not faster)."


def quote(arm, remedies: Remedies) -> str:
    """For an arm whose culprit decodes: what its prepared counterpart measured (or '')."""
    if not arm.diagnosis:
        return ""
    answer = arm.diagnosis.recommendation
    named = answer.culprit_kind == "decode" or any(
        str(r).startswith("decode less") for r in answer.remedies)
    found = remedies.from_source(arm.name) if named else None
    if found is None:
        return ""
    return (f" Measured: the same data prepared at a bounded resolution ({found.arm}) ran "
            f"{found.steady_step_ms:.0f} ms per step, {found.source.speedup:.1f}x this arm's "
            "images/s.")
