"""The decode remedy, proved: each prepared arm against the arm that trained on its source at the
same operator settings, the prediction made before it ran, and what the preparation cost.

A prepared arm (summary dataset.prepared) pairs with the arm of the same study that read the
prepared dataset's source with the same settings of every sized operator (baseline <->
prepared, tuned <-> prepared_tuned). The prediction is the paired arm's diagnosis's
`prepared_prediction` at the prepared arm's settings (made from that arm's measured decode
cost per megapixel, before the prepared arm ran).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.decide.fixes import prepared_step_at
from perfstudy.decide.paired import prediction_error
from perfstudy.measure import rounds as rounds_mod
from perfstudy.measure.rounds import Comparison
from perfstudy.run.verify_record import AgainstSource

CHANGES = ("what changes for training: each random crop is cut from the source downsized to the "
           "bounded resolution (never fewer pixels than the network's input; resampled with "
           "Lanczos and re-encoded as JPEG, PSNR {psnr:.1f} dB or better against a resize of the "
           "full decode), so a large crop is resized from fewer source pixels")
SAME = ("what does not: the images, their labels and their order under the same seed (rows "
        "written in ImageFolderDataset's order, read with its sampler's permutation), the "
        "transforms, batch, network, optimizer and seed")


def _prepared(arm) -> dict[str, Any] | None:
    return arm.summary.dataset.prepared


def _settings(arm) -> dict[str, Any]:
    settings = dict(arm.summary.operator_settings or {})
    settings.setdefault("pipeline.num_parallel_workers",
                        arm.summary.num_parallel_workers.effective)
    return settings


def pair(arm, arms: list) -> Any | None:
    """The arm that read this prepared arm's source at the same operator settings."""
    info = _prepared(arm)
    if not info:
        return None
    source_sha = (info.get("source_manifest") or {}).get("dataset_sha256")
    for other in arms:
        if (other is not arm and not _prepared(other)
                and other.summary.dataset_sha256 == source_sha
                and _settings(other) == _settings(arm)):
            return other
    return None


def paired_gain(arm) -> Comparison | None:
    """The source's step over the prepared one, paired by round in the prepared arm's own run
    (perfstudy.run.remedy_rounds); None where it did not measure its source, or no round paired."""
    found = arm.summary.against_source
    if found is None or found.rounds is None:
        return None
    c = rounds_mod.compare(found.rounds, AgainstSource.PREPARED, AgainstSource.SOURCE,
                           GAIN_THAT_MATTERS)
    return c if c.ratio is not None and c.low is not None and c.high is not None else None


def evidence(arms: list) -> pd.DataFrame:
    """One row per prepared arm: measured against its source arm, predicted, cost, payback."""
    rows = []
    for arm in arms:
        info = _prepared(arm)
        if not info:
            continue
        source = pair(arm, arms)
        s = arm.summary
        cost = info["preparation"]
        row = {"arm": arm.name, "source_arm": source.name if source else None,
               "steady_step_ms": s.steady_step_ms, "images_per_s": s.images_per_s,
               "gap_share": s.gap_share,
               "preparation_wall_s": cost["wall_s"], "preparation_cpu_s": cost["cpu_s"],
               "bytes_before": info["before"]["bytes"], "bytes_after": info["after"]["record_bytes"],
               "megapixels_before": info["before"]["mean_megapixels"],
               "megapixels_after": info["after"]["mean_megapixels"],
               "psnr_min_db": info["psnr_db"]["min"], "steps_trained": len(arm.steps)}
        if source is not None:
            base = source.summary
            saving_ms = base.steady_step_ms - s.steady_step_ms
            predicted = prepared_step_at(source.diagnosis.recommendation.prepared_prediction
                                         if source.diagnosis else None, _settings(arm))
            per_epoch = max(1, s.dataset.num_images // s.batch_size)
            payback = cost["wall_s"] * 1e3 / saving_ms if saving_ms > 0 else math.inf
            row.update(source_step_ms=base.steady_step_ms,
                       source_images_per_s=base.images_per_s,
                       speedup=s.images_per_s / base.images_per_s,
                       predicted_step_ms=predicted,
                       prediction_error=(predicted / s.steady_step_ms - 1) if predicted else None,
                       payback_steps=payback, payback_epochs=payback / per_epoch)
        row.update(_paired_columns(arm, row.get("predicted_step_ms"), row.get("source_step_ms")))
        rows.append(row)
    return pd.DataFrame(rows)


def _paired_columns(arm, predicted_ms: float | None, source_ms: float | None) -> dict[str, Any]:
    """The gain paired by round and the prediction's error read against it: the prediction
    relative to the source's step it was made from (predicted / source step), against the
    paired ratio (prepared / source), so neither side compares two runs' windows."""
    c = paired_gain(arm)
    if c is None:
        return {}
    out = {"paired_speedup": c.ratio, "paired_low": c.low, "paired_high": c.high,
           "paired_rounds": c.rounds}
    if predicted_ms and source_ms:
        error, low, high = prediction_error(predicted_ms / source_ms, c.ratio, c.low, c.high)
        out.update(paired_error=error, paired_error_low=low, paired_error_high=high)
    return out


def lines(table: pd.DataFrame, arms: list) -> list[str]:
    """The report's sentences: the preparation's cost once, then per prepared arm the gain, the
    prediction and the payback; then what the preparation changes for training and what not."""
    if table.empty:
        return []
    by_name = {a.name: a for a in arms}
    first = table.iloc[0]
    info = _prepared(by_name[first["arm"]])
    out = [f"Preparation, once ({', '.join(table['arm'])} read the same record): "
           f"{first['preparation_wall_s']:.1f} s wall, {first['preparation_cpu_s']:.1f} s CPU on "
           f"{info['preparation']['workers']} worker(s); {first['bytes_before'] / 1e6:,.1f} MB of "
           f"JPEGs -> a {first['bytes_after'] / 1e6:,.2f} MB MindRecord; "
           f"{first['megapixels_before']:.2f} -> {first['megapixels_after']:.4f} megapixels per "
           f"image, {info['rule']}."]
    for row in table.itertuples(index=False):
        if row.source_arm is None:
            out.append(f"{row.arm}: {row.steady_step_ms:.0f} ms per step, {row.images_per_s:.1f} "
                       "images/s; no arm of this study read its source at the same settings, so "
                       "there is nothing to compare it with.")
            continue
        text = (f"{row.arm} vs {row.source_arm} (same settings, the source JPEGs): "
                f"{row.images_per_s:.1f} against {row.source_images_per_s:.1f} images/s, "
                f"{row.speedup:.1f}x ({row.steady_step_ms:.0f} vs {row.source_step_ms:.0f} ms per "
                f"step), waiting for data {pct(row.gap_share, 1)} of the step")
        if _given(row, "paired_speedup"):
            text += (f"; paired by round in {row.arm}'s run (the source read at its settings "
                     f"in {row.paired_rounds:.0f} interleaved rounds): {row.paired_speedup:.1f}x "
                     f"({row.paired_low:.1f}-{row.paired_high:.1f}, 95 %)")
        if row.predicted_step_ms is not None and row.predicted_step_ms == row.predicted_step_ms:
            text += (f"; predicted from {row.source_arm}'s profile before it ran: "
                     f"{row.predicted_step_ms:.0f} ms ({pct(row.prediction_error, signed=True)}"
                     + (f"; against the paired ratio {pct(row.paired_error, signed=True)}, "
                        f"{pct(row.paired_error_low, signed=True)} to "
                        f"{pct(row.paired_error_high, signed=True)}"
                        if _given(row, "paired_error") else "") + ")")
        if math.isfinite(row.payback_steps):
            steps = math.ceil(row.payback_steps)
            within = ("within" if steps <= row.steps_trained else "beyond")
            text += (f"; the preparation pays back after {steps} steps ({row.payback_epochs:.1f} "
                     f"epochs), {within} this arm's own {row.steps_trained} steps.")
        else:
            text += "; the preparation never pays back here (the prepared arm is not faster)."
        out.append(text)
    psnr = float(table["psnr_min_db"].min())
    out += ["W" + CHANGES.format(psnr=psnr)[1:] + ".", "W" + SAME[1:] + "."]
    return out


def _given(row, column: str) -> bool:
    value = getattr(row, column, None)
    return value is not None and value == value  # NaN where another prepared arm was not paired


def quote(arm, table: pd.DataFrame) -> str:
    """For an arm whose culprit decodes: what its prepared counterpart measured (or '')."""
    if not arm.diagnosis:
        return ""
    answer = arm.diagnosis.recommendation
    named = answer.culprit_kind == "decode" or any(
        str(r).startswith("decode less") for r in answer.remedies)
    if table.empty or not named:
        return ""
    rows = table[table["source_arm"] == arm.name]
    if rows.empty:
        return ""
    row = rows.iloc[0]
    return (f" Measured: the same data prepared at a bounded resolution ({row['arm']}) ran "
            f"{row['steady_step_ms']:.0f} ms per step, {row['speedup']:.1f}x this arm's images/s.")
