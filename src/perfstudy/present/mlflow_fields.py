"""What a run's records become in MLflow: the summary, the steps, the diagnosis and the
scorecard flattened into metrics (fixed timestamps: logging twice adds nothing) and tags."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from perfstudy.common.thresholds import pct
from perfstudy.decide.decision import Recommendation
from perfstudy.decide.diagnosis import Diagnosis, verdict_label
from perfstudy.decide.peers import Readings
from perfstudy.decide.remedy_proof import RemedyEvidence
from perfstudy.decide.scorecard import Scorecard
from perfstudy.decide.whatif import gil_share
from perfstudy.present.mlflow_store import TAG
from perfstudy.run.summary import SPREADS, RunSummary

DIGEST_CHARS = 36  # MLflow stores a dataset digest in 36 characters; the whole sha256 is a tag


STEP_METRICS = ("step_ms", "gap_ms", "fwd_bwd_ms", "tail_ms", "loss", "images_per_s")


def step_metrics(steps: pd.DataFrame) -> list:
    """Per-step metrics with step= and the step's own timestamp (so re-logging dedupes)."""
    from mlflow.entities import Metric

    metrics = []
    for row in steps.itertuples(index=False):
        stamp = int(row.start_time_s * 1000)
        for key in STEP_METRICS:
            value = float(getattr(row, key))
            if value == value:  # NaN is skipped, not logged
                metrics.append(Metric(f"step/{key}", value, stamp, int(row.step)))
    return metrics


def training_window_ms(summary: RunSummary, steps: pd.DataFrame) -> tuple[int, int]:
    """When the arm's training ran (epoch ms): from its graph compile (when it compiled first)
    or its first step, to the end of its last step (profiled steps included): the MLflow run's
    start and end, so the UI's duration is the training's, not the logging's."""
    start = float(steps["start_time_s"].min()) - float(summary.precompile_s or 0.0)
    return int(start * 1000), run_end_ms(steps)


def run_description(summary: RunSummary, diagnosis: Diagnosis | None) -> str:
    """The arm run's description (MLflow's note): verdict and recommendation first."""
    numbers = (f"Steady step {summary.steady_step_ms:.0f} ms, the step waits for data "
               f"{pct(summary.gap_share, 1)} of the time, {summary.images_per_s:.1f} "
               f"images/s ({summary.steps_measured} measured steps).")
    if not diagnosis:
        return numbers
    return (f"**{verdict_label(diagnosis.bound)}.** {diagnosis.headline}\n\n"
            f"**Recommendation:** {diagnosis.recommendation.sentence}\n\n{numbers}")


def scorecard_markdown(card: Scorecard) -> str:
    """The scorecard as a Markdown table under its headline (the parent run's description)."""
    from perfstudy.present.document import md_table

    rows = pd.DataFrame([{"claim": f"{r.claim} ({r.arm})", "published": r.published_text,
                          "measured": r.measured_text, "check": r.check, "result": r.result,
                          "across runs": r.history.text if r.history else "-"} for r in card.claims])
    return f"**{card.headline}**\n\n" + md_table(rows)


def scorecard_tags(card: Scorecard) -> dict[str, str]:
    """The study's claims as parent-run tags (one per claim) and its description (the table)."""
    tags = {f"{TAG}claims": card.headline,
            "mlflow.note.content": (scorecard_markdown(card) if card.claims else card.headline)
            + "\n\nThe whole report: the artifact report.html."}
    for claim in card.claims:
        tags[f"{TAG}claim.{claim.id}"] = (f"{claim.result}: {claim.measured_text} ({claim.check})"
                                          if claim.result != "not scored"
                                          else f"not scored: {claim.detail}")
        if claim.history:  # across the study's recorded runs on this machine kind
            tags[f"{TAG}claim_history.{claim.id}"] = claim.history.text
    return tags


def run_end_ms(steps: pd.DataFrame) -> int:
    """Wall-clock end of the last step (ms): a timestamp fixed by the results themselves."""
    return int((steps["start_time_s"].iloc[-1] + steps["step_ms"].iloc[-1] / 1e3) * 1000)


def summary_metrics(summary: RunSummary, stamp_ms: int) -> list:
    """The summary's numbers as metrics at step 0 (fixed timestamp: idempotent)."""
    from mlflow.entities import Metric

    flat = {
        "steady_step_ms": summary.steady_step_ms,
        "gap_share": summary.gap_share,
        "images_per_s": summary.images_per_s,
        "steps_measured": summary.steps_measured,
        "steps_excluded": summary.steps_excluded,
        "first_step_ms": summary.first_step_ms,
        "floor_ms": summary.floor_ms,
        "steady_vs_floor": summary.steady_vs_floor,
        "workers_requested": summary.num_parallel_workers.requested or 0,
        "workers_effective": summary.num_parallel_workers.effective,
    }
    for part in SPREADS:
        for stat, value in asdict(getattr(summary, part)).items():
            flat[f"{part}_{stat}"] = value
    if summary.resources is not None:  # peak memory and CPU time of the training process
        flat.update({f"resources_{k}": v for k, v in asdict(summary.resources).items()})
    for key, value in asdict(summary.calibration).items():
        if isinstance(value, (int, float)):  # not the operators' probe (a list; in summary.json)
            flat[f"calibration_{key}"] = value
    for probe in summary.calibration.operators:
        share = gil_share(probe.gil)  # the operator's measured GIL time (beside a holder)
        if share is not None:
            name = probe.config_key.replace("pipeline.", "").replace(".", "_")
            flat[f"probe_{name}_gil_ms"] = probe.gil.gil_ms_per_batch
            flat[f"probe_{name}_gil_share"] = share
    return [Metric(key, float(value), stamp_ms, 0) for key, value in flat.items()] \
        + sweep_metrics(summary, stamp_ms)


# Snakemake's benchmark columns (psutil over the job's process tree) -> metric names
JOB_COLUMNS = {"s": "job_wall_s", "max_rss": "job_max_rss_mb", "max_pss": "job_max_pss_mb",
               "cpu_time": "job_cpu_time_s", "mean_load": "job_mean_load_pct"}


def job_metrics(benchmark: str | Path | None, stamp_ms: int) -> list:
    """The training job's whole process tree (workers included) as Snakemake measured it: its
    wall time, peak memory (MB) and CPU time; nothing when the file is missing or unreadable."""
    from mlflow.entities import Metric

    if not benchmark or not Path(benchmark).is_file():
        return []
    try:
        row = pd.read_csv(benchmark, sep="\t").iloc[-1]
    except (ValueError, IndexError, pd.errors.ParserError):
        return []
    return [Metric(name, float(row[col]), stamp_ms, 0) for col, name in JOB_COLUMNS.items()
            if col in row and pd.notna(pd.to_numeric(row[col], errors="coerce"))]


def sweep_metrics(summary: RunSummary, stamp_ms: int) -> list:
    """A truth run's sweep as histories (step = the setting's index in the sweep, its label in
    the tags): each setting's median step, its ratio to the fastest with the interval, and
    the rounds behind them."""
    from mlflow.entities import Metric

    if summary.sweep is None:
        return []
    out = [Metric("sweep/rounds", float(len(summary.sweep.rounds.orders)), stamp_ms, 0)]
    for index, placed in enumerate(summary.sweep.placed()):
        if placed.step is not None:
            out.append(Metric("sweep/step_ms", placed.step.median, stamp_ms, index))
        versus = placed.vs_fastest
        if versus is not None and math.isfinite(versus.low):
            out += [Metric("sweep/vs_fastest", versus.ratio, stamp_ms, index),
                    Metric("sweep/vs_fastest_low", versus.low, stamp_ms, index),
                    Metric("sweep/vs_fastest_high", versus.high, stamp_ms, index)]
    return out


def sweep_tags(summary: RunSummary) -> dict[str, str]:
    """Each swept setting's place against the best (holds / does not hold / undecided)."""
    if summary.sweep is None:
        return {}
    return {f"{TAG}sweep.{index}": f"{summary.sweep.key}={point.label}: {placed.near.value}"
            for index, (point, placed) in enumerate(zip(summary.sweep.points, summary.sweep.placed(),
                                                        strict=True))}


def source_tags(commit: str | None = None, name: str = "scripts/train.py") -> dict[str, str]:
    """MLflow's own system tags, so the UI's Source, Version and User columns fill: the program
    that made the run (relative to the checkout), the commit (this checkout's when None)."""
    import getpass

    from perfstudy.common.provenance import git_origin, git_state

    commit = commit or str(git_state()["git_sha"])
    origin = git_origin()
    tags = {"mlflow.source.name": name, "mlflow.source.type": "LOCAL",
            "mlflow.source.git.commit": commit}
    if "branch" in origin:
        tags["mlflow.source.git.branch"] = origin["branch"]
    if "repo_url" in origin:
        tags["mlflow.source.git.repoURL"] = origin["repo_url"]
    try:
        tags["mlflow.user"] = getpass.getuser()
    except (KeyError, OSError):  # a container user without a passwd entry
        pass
    return tags


def arm_tags(summary: RunSummary, study: str, arm: str, instance: str) -> dict[str, str]:
    """Tags that say what the run is and what it was made with."""
    env = summary.environment
    return {
        f"{TAG}study": study,
        f"{TAG}arm": arm,
        f"{TAG}role": "arm",
        f"{TAG}instance": instance,
        f"{TAG}run": summary.run,
        f"{TAG}repeat": str(summary.repeat),
        **source_tags(str(summary.git_sha)),
        "seed": str(summary.seed),
        "git_sha": str(summary.git_sha),
        "git_dirty": str(summary.git_dirty),
        "config_hash": str(summary.config_hash),
        "dataset_sha256": str(summary.dataset_sha256),
        "mindspore_version": str(summary.mindspore_version),
        "cpu_count": str(env.get("cpu_count")),
        "cpu_model": str(env.get("cpu_model")),
        "host": str(env.get("host")),
        **({f"{TAG}scheduler_job_id": str(env["scheduler"]["job_id"])}
           if env.get("scheduler") else {}),
        "size": str(summary.size),
        "workers_requested": str(summary.num_parallel_workers.requested),
        "workers_effective": str(summary.num_parallel_workers.effective),
        **({f"{TAG}autotune_map_workers": str(summary.autotune.map_workers)}
           if summary.autotune else {}),
        **prepared_tags(summary),
        **sweep_tags(summary),
    }


def prepared_tags(summary: RunSummary) -> dict[str, str]:
    """What a prepared arm trained on: the format, the bound, its source's identity."""
    info = summary.dataset.prepared
    if not info:
        return {f"{TAG}data": "source"}
    return {f"{TAG}data": "prepared",
            f"{TAG}prepared.format": info.format,
            f"{TAG}prepared.rule": info.rule[:250],
            f"{TAG}prepared.source_dataset_sha256": info.source_manifest.dataset_sha256,
            f"{TAG}prepared.megapixels": f"{info.before.mean_megapixels:.3f} -> "
                                         f"{info.after.mean_megapixels:.4f}"}


def remedy_metrics(r: RemedyEvidence) -> dict[str, float]:
    """The study run's metrics of one prepared arm (prepared/<arm>/...): its step, the
    preparation's cost, the gain over its source arm, the prediction, the payback and the gain
    paired by round in its own run; what was not measured is left out."""
    values = {"steady_step_ms": r.steady_step_ms, "preparation_wall_s": r.cost.wall_s,
              "preparation_cpu_s": r.cost.cpu_s, "bytes_before": r.cost.bytes_before,
              "bytes_after": r.cost.bytes_after}
    if r.source is not None:
        values.update(speedup=r.source.speedup, predicted_step_ms=r.source.predicted_step_ms,
                      prediction_error=r.source.prediction_error,
                      payback_steps=r.source.payback_steps, payback_epochs=r.source.payback_epochs)
    if r.paired is not None:
        values.update(paired_speedup=r.paired.speedup, paired_low=r.paired.low,
                      paired_high=r.paired.high, paired_rounds=r.paired.rounds,
                      paired_error=r.paired.error)
    return {f"prepared/{r.arm}/{k}": float(v) for k, v in values.items()
            if v is not None and math.isfinite(v)}


def _op_key(row) -> str:
    """MLflow-safe metric name of a pipeline operator: op<id>_<type> (labels hold brackets)."""
    return f"op{int(row.op_id)}_{row.op_type}"


def diagnosis_metrics(diagnosis: Diagnosis, ops: pd.DataFrame | None,
                      queues: pd.DataFrame | None, stamp_ms: int) -> list:
    """Per-operator queue usage / empty ratio / CPU %, the queue-size series as history,
    and the diagnosis's numbers (fixed timestamps, so logging again adds nothing)."""
    from mlflow.entities import Metric

    metrics = []
    if ops is not None:
        for row in ops.itertuples(index=False):
            for stat in ("queue_usage", "empty_ratio", "full_ratio", "cpu_pct", "cpu_pct_per_worker"):
                value = getattr(row, stat)
                if value == value and value is not None:  # NaN: the op has no queue / CPU data
                    metrics.append(Metric(f"pipeline/{_op_key(row)}/{stat}", float(value), stamp_ms, 0))
    if queues is not None and len(queues):
        first = queues["time_s"].min()
        for row in queues.itertuples(index=False):
            metrics.append(Metric(f"queue/{_op_key(row)}_size", float(row.size),
                                  int(row.time_s * 1000), int(round((row.time_s - first) * 1000))))
    flat = {"gap_share": diagnosis.input_bound.gap_share,
            "compute_ms": diagnosis.compute_ms,
            "host_busy_pct": diagnosis.cpu.host_busy_pct,
            "process_cpu_pct": diagnosis.cpu.process_pct,
            "steady_vs_cpu_floor": diagnosis.cpu.steady_vs_cpu_floor,
            "recommended_workers": diagnosis.recommendation.workers,
            "predicted_step_ms": diagnosis.recommendation.predicted_step_ms,
            "predicted_now_ms": diagnosis.recommendation.predicted_now_ms,
            "iterator_wait_median_ms": diagnosis.iterator_wait.median_ms if diagnosis.iterator_wait else None,
            "timeline_step_rel_diff": (diagnosis.cross_check.step_ms_median_rel_diff
                                       if diagnosis.cross_check else None)}
    metrics += [Metric(f"diagnosis/{k}", float(v), stamp_ms, 0) for k, v in flat.items()
                if v is not None]
    advice = diagnosis.advisor
    if advice:  # the what-if curve as a history: step = worker count (MLflow plots it)
        metrics += [Metric("advisor/predicted_step_ms", float(row.step_ms), stamp_ms,
                           int(row.workers)) for row in advice.curve]
        metrics += [Metric("advisor/predicted_best_ms", float(advice.predicted_best_ms), stamp_ms, 0),
                    Metric("advisor/own_setting_error", float(advice.now_error), stamp_ms, 0)]
        if advice.pick_is_recommendation:  # no second setting beside the recommended one
            metrics.append(Metric("advisor/pick_workers", float(advice.pick_workers), stamp_ms, 0))
    metrics += verification_metrics(diagnosis.recommendation, stamp_ms)
    return metrics


def verification_metrics(rec: Recommendation, stamp_ms: int) -> list:
    """The verification as histories (step = the setting's index, 0: the run's own): measured
    and predicted step, the model's error, each candidate's paired ratio and its interval; the
    verified gain and the rounds behind it."""
    from mlflow.entities import Metric

    checked = rec.verification
    out = []
    for rank, row in enumerate(checked.settings if checked else []):
        if row.measured_ms:
            out += [Metric("verify/measured_step_ms", float(row.measured_ms), stamp_ms, rank),
                    Metric("verify/predicted_step_ms", float(row.predicted_ms), stamp_ms, rank),
                    Metric("verify/model_error", float(row.error), stamp_ms, rank)]
        comp = row.comparison
        if comp and comp.ratio is not None and comp.low is not None:
            out += [Metric("verify/ratio", float(comp.ratio), stamp_ms, rank),
                    Metric("verify/ratio_low", float(comp.low), stamp_ms, rank),
                    Metric("verify/ratio_high", float(comp.high), stamp_ms, rank)]
    if checked:
        out.append(Metric("verify/rounds", float(checked.rounds), stamp_ms, 0))
        out.append(Metric("verify/windows_dropped", float(len(checked.dropped)), stamp_ms, 0))
    if rec.verified and rec.measured_gain is not None:
        out.append(Metric("verify/measured_gain", float(rec.measured_gain), stamp_ms, 0))
    return out


def diagnosis_tags(diagnosis: Diagnosis) -> dict[str, str]:
    """Verdict, culprit and recommendation as tags (searchable, shown in run comparison)."""
    return {
        f"{TAG}verdict": verdict_label(diagnosis.bound),
        f"{TAG}action": diagnosis.recommendation.action,
        f"{TAG}input_bound": diagnosis.input_bound.band,
        f"{TAG}culprit": diagnosis.culprit.label if diagnosis.culprit else "none",
        f"{TAG}recommendation": diagnosis.recommendation.sentence,
        f"{TAG}headline": diagnosis.headline,
        f"{TAG}timeline_agrees": str(diagnosis.cross_check.agrees if diagnosis.cross_check else None),
        f"{TAG}verified": str(bool(diagnosis.recommendation.verified)),
        **({f"{TAG}advisor": diagnosis.advisor.sentence} if diagnosis.advisor else {}),
        **({f"{TAG}advisor_pick_workers": str(diagnosis.advisor.pick_workers)}
           if diagnosis.advisor and diagnosis.advisor.pick_is_recommendation else {}),
        **peer_tags(diagnosis.peers),
    }


def peer_tags(readings: Readings | None) -> dict[str, str]:
    """The peer tools' operator and advice on this run (perfstudy.peer.<tool>.*)."""
    out = {}
    for tool in ("msanalyzer", "autotune"):
        reading = getattr(readings, tool) if readings else None
        if reading:
            out[f"{TAG}peer.{tool}.operator"] = str(reading.operator or "none")
            out[f"{TAG}peer.{tool}.advice"] = reading.advice
    return out


def dataset_input(summary: RunSummary):
    """The arm's training data as an MLflow dataset input: name (its folder's), digest (the
    dataset's sha256, cut to what MLflow stores; the whole one is an input tag), source (its
    folder), context "train"; None for a summary without a dataset hash."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    digest = summary.dataset_sha256
    if not digest:
        return None
    root = summary.dataset.root or ""
    name = Path(root).name or "dataset"
    dataset = MetaDataset(resolve_dataset_source(str(root)), name=name, digest=str(digest)[:DIGEST_CHARS])
    return DatasetInput(dataset=dataset._to_mlflow_entity(),
                        tags=[InputTag(key="mlflow.data.context", value="train"),
                              InputTag(key=f"{TAG}dataset_sha256", value=str(digest))])
