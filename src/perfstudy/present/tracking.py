"""MLflow logging: one experiment per study, a parent run per study, a child run per arm.

Idempotent by design: runs are found again by their tags (and the ids are kept in
mlflow_run.json), per-step metrics carry the step's own wall-clock timestamp, so logging
the same results twice adds nothing. An arm retrained with other results replaces its
old run (the old one is deleted and named in the new one's `perfstudy.replaces` tag).
Runs belong to one results folder (its `perfstudy.instance` id): two folders logging the
same study to one shared store each keep their own runs. Writers to one SQLite file take
turns (a lock file beside it); a server store needs no lock.
MlflowClient is used throughout, never the fluent API, so an inherited MLFLOW_RUN_ID
cannot redirect a child run (mlflow issue 15713).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import urllib.parse
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from perfstudy.common.thresholds import pct
from perfstudy.decide.advisor import gil_share
from perfstudy.decide.diagnosis import verdict_label
from perfstudy.run.summary import RunSummary

TAG = "perfstudy."
DIGEST_CHARS = 36  # MLflow stores a dataset digest in 36 characters; the whole sha256 is a tag
MAX_PARAMS_PER_CALL = 100
MAX_METRICS_PER_CALL = 1000
STEP_METRICS = ("step_ms", "gap_ms", "fwd_bwd_ms", "tail_ms", "loss", "images_per_s")


class TrackingError(RuntimeError):
    """The tracking store cannot be used; the message names the URI and the fix."""


def default_uri(results: str | Path) -> str:
    """The study's own SQLite store: sqlite:///<results>/mlflow/mlflow.db (absolute)."""
    return f"sqlite:///{(Path(results) / 'mlflow' / 'mlflow.db').resolve()}"


def resolve_uri(cfg_uri: str | None, results: str | Path) -> str:
    """$MLFLOW_TRACKING_URI, else the config's tracking.uri, else the study's SQLite file."""
    return os.environ.get("MLFLOW_TRACKING_URI") or cfg_uri or default_uri(results)


def sqlite_file(uri: str) -> Path | None:
    """The database file of a sqlite:/// store; None for any other store."""
    return Path(urllib.parse.urlparse(uri).path) if uri.startswith("sqlite:///") else None


def cluster_store_problem(uri: str, executor: str) -> str | None:
    """Why a tracking store cannot serve jobs that run on cluster nodes (None if it can)."""
    path = sqlite_file(uri)
    if path is None:
        return None
    return (f"The tracking store is the SQLite file /{str(path).lstrip('/')}, and the {executor} executor runs jobs "
            "on other nodes, where a SQLite file on shared storage is not safe to write "
            "concurrently (its locks do not hold over NFS); start an `mlflow server` backed by a "
            "database and set MLFLOW_TRACKING_URI=http://<host>:<port> (README: cluster), or run "
            "locally.")


def artifact_root(uri: str) -> str | None:
    """Artifact folder beside a SQLite store (<results>/mlflow/artifacts for the study's own);
    None for a server, which decides where artifacts go."""
    db = sqlite_file(uri)
    return (db.parent / "artifacts").resolve().as_uri() if db else None


def client_for(uri: str):
    """An MlflowClient on `uri`, checked to answer; TrackingError if it does not."""
    from mlflow.tracking import MlflowClient

    parsed, db = urllib.parse.urlparse(uri), sqlite_file(uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    if parsed.scheme in ("http", "https"):
        # MLflow's REST client retries for minutes; a refused socket answers at once.
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            socket.create_connection((parsed.hostname, port), timeout=5).close()
        except OSError as exc:
            raise TrackingError(
                f"The MLflow tracking server {uri} cannot be reached ({exc.strerror or exc}); "
                "start it or fix MLFLOW_TRACKING_URI / tracking.uri, then run snakemake again "
                "(finished training is kept).") from None
    client = MlflowClient(tracking_uri=uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001 - any failure here means: store unreachable
        raise TrackingError(
            f"The MLflow tracking store {uri} cannot be reached ({type(exc).__name__}); start "
            "the server or fix MLFLOW_TRACKING_URI / tracking.uri, then run snakemake again "
            "(finished training is kept).") from None
    return client


@contextlib.contextmanager
def store_lock(uri: str):
    """Hold the store while writing: an exclusive lock file beside a SQLite store.

    SQLite has one writer at a time and MLflow creates its schema on first use, so two
    studies logging to one file at once would meet "database is locked" or a half-made
    schema; with the lock they take turns (a few seconds each). Servers need no lock.
    """
    db = sqlite_file(uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def study_instance(folder: str | Path) -> str:
    """This results folder's id for a study (made once, kept in <folder>/instance_id).

    Runs are found again by it, so another folder logging the same study to the same
    store never updates, replaces or deletes this folder's runs.
    """
    from perfstudy.common.io import write_text_atomic

    path = Path(folder) / "instance_id"
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    instance = uuid.uuid4().hex[:16]
    write_text_atomic(path, instance + "\n")
    return instance


EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}


def ui_hint(uri: str, experiment_id: str | None) -> str:
    """Where MLflow's UI shows the study's runs: the experiment's runs page in the Model
    training view (MLflow 3's UI otherwise lands on its GenAI overview)."""
    page = (f"/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
            if experiment_id else "")
    if uri.startswith(("http://", "https://")):
        return f"MLflow: {uri.rstrip('/')}{page}"
    return (f"MLflow: mlflow ui --backend-store-uri {uri} --port 5000, then open "
            f"http://127.0.0.1:5000{page}")


def ensure_experiment(client, name: str, uri: str) -> str:
    """Id of the named experiment, created (artifacts beside a SQLite store) if missing; marked
    as model training, so MLflow 3's UI opens it on its runs (not the GenAI overview)."""
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        try:
            experiment_id = client.create_experiment(name, artifact_location=artifact_root(uri),
                                                     tags=EXPERIMENT_KIND)
        except Exception:  # noqa: BLE001 - another study created it meanwhile (shared server)
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                raise
        else:
            return experiment_id
    if experiment.lifecycle_stage == "deleted":
        client.restore_experiment(experiment.experiment_id)
    for key, value in EXPERIMENT_KIND.items():
        if experiment.tags.get(key) != value:  # an experiment made before, or by another tool
            client.set_experiment_tag(experiment.experiment_id, key, value)
    return experiment.experiment_id


def _find_runs(client, experiment_id: str, tags: dict[str, str]):
    query = " and ".join(f"tags.`{key}` = '{value}'" for key, value in tags.items())
    return client.search_runs([experiment_id], filter_string=query, max_results=50,
                              order_by=["attributes.start_time ASC"])


def ensure_study_run(client, experiment_id: str, study: str, instance: str,
                     base_tags: dict[str, str], identity: dict[str, str] | None = None) -> str:
    """The study's parent run for one results folder (found by tags, created once, SCHEDULED).

    identity: more tags it is found by (the claims' and configs' hashes): other ones get a new
    parent run, the old one is kept as history."""
    keys = {f"{TAG}study": study, f"{TAG}role": "study", f"{TAG}instance": instance, **(identity or {})}
    runs = _find_runs(client, experiment_id, keys)
    if runs:
        return runs[0].info.run_id
    for empty in _find_runs(client, experiment_id, {f"{TAG}study": study, f"{TAG}role": "study",
                                                    f"{TAG}instance": instance}):
        if empty.info.status == "SCHEDULED":  # this folder's parent that never got a scorecard
            client.delete_run(empty.info.run_id)  # (e.g. a failed run of other configs): no history
    run = client.create_run(experiment_id, run_name=study, tags={**base_tags, **keys})
    # SCHEDULED until track_study logs the report: a study that stops before then (bad
    # input, a failed arm) must not leave a run that claims to be RUNNING.
    client.update_run(run.info.run_id, status="SCHEDULED")
    return run.info.run_id


def fingerprint(*paths: str | Path) -> str:
    """sha256 over files' bytes: tells a retrained arm from the same results logged again."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def _chunks(items: list, size: int):
    for start in range(0, len(items), size):
        yield items[start:start + size]


def log_params(client, run_id: str, params: dict[str, Any]) -> None:
    """Log params in as few calls as MLflow allows (100 per call; usually one)."""
    from mlflow.entities import Param

    entries = [Param(key, str(value)[:6000]) for key, value in sorted(params.items())]
    for chunk in _chunks(entries, MAX_PARAMS_PER_CALL):
        client.log_batch(run_id, params=chunk)


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


def run_description(summary: RunSummary, diagnosis: dict[str, Any] | None) -> str:
    """The arm run's description (MLflow's note): verdict and recommendation first."""
    numbers = (f"Steady step {summary.steady_step_ms:.0f} ms, the step waits for data "
               f"{pct(summary.gap_share, 1)} of the time, {summary.images_per_s:.1f} "
               f"images/s ({summary.steps_measured} measured steps).")
    if not diagnosis:
        return numbers
    return (f"**{verdict_label(diagnosis['bound'])}.** {diagnosis['headline']}\n\n"
            f"**Recommendation:** {diagnosis['recommendation']['sentence']}\n\n{numbers}")


def scorecard_tags(card: dict[str, Any]) -> dict[str, str]:
    """The study's claims as parent-run tags (one per claim) and its description (the table)."""
    from perfstudy.decide.claims import markdown

    tags = {f"{TAG}claims": card["headline"],
            "mlflow.note.content": (markdown(card) if card["claims"] else card["headline"])
            + "\n\nThe whole report: the artifact report.html."}
    for claim in card["claims"]:
        tags[f"{TAG}claim.{claim['id']}"] = (f"{claim['result']}: {claim['measured_text']} "
                                            f"({claim['check']})" if claim["result"] != "not scored"
                                            else f"not scored: {claim['detail']}")
        if claim.get("history"):  # across the study's recorded runs on this machine kind
            tags[f"{TAG}claim_history.{claim['id']}"] = claim["history"]["text"]
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
    for part in ("step_ms", "gap_ms", "fwd_bwd_ms", "tail_ms"):
        for stat, value in asdict(getattr(summary, part)).items():
            flat[f"{part}_{stat}"] = value
    for key, value in asdict(summary.calibration).items():
        if isinstance(value, (int, float)):  # not the operators' probe (a list; in summary.json)
            flat[f"calibration_{key}"] = value
    for probe in summary.calibration.operators:
        share = gil_share(probe.get("gil"))  # the operator's measured GIL time (beside a holder)
        if share is not None:
            name = probe["config_key"].replace("pipeline.", "").replace(".", "_")
            flat[f"probe_{name}_gil_ms"] = probe["gil"]["gil_ms_per_batch"]
            flat[f"probe_{name}_gil_share"] = share
    return [Metric(key, float(value), stamp_ms, 0) for key, value in flat.items()]


def log_metrics(client, run_id: str, metrics: list) -> None:
    """Log metrics in batches of MLflow's maximum size."""
    for chunk in _chunks(metrics, MAX_METRICS_PER_CALL):
        client.log_batch(run_id, metrics=chunk)


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
        **({f"{TAG}autotune_map_workers": str(summary.autotune.get("map_workers"))}
           if summary.autotune else {}),
        **prepared_tags(summary),
    }


def prepared_tags(summary: RunSummary) -> dict[str, str]:
    """What a prepared arm trained on: the format, the bound, its source's identity."""
    info = summary.dataset.prepared
    if not info:
        return {f"{TAG}data": "source"}
    return {f"{TAG}data": "prepared",
            f"{TAG}prepared.format": str(info.get("format")),
            f"{TAG}prepared.rule": str(info.get("rule"))[:250],
            f"{TAG}prepared.source_dataset_sha256": str(info["source_manifest"]["dataset_sha256"]),
            f"{TAG}prepared.megapixels": f"{info['before']['mean_megapixels']:.3f} -> "
                                         f"{info['after']['mean_megapixels']:.4f}"}


def _op_key(row) -> str:
    """MLflow-safe metric name of a pipeline operator: op<id>_<type> (labels hold brackets)."""
    return f"op{int(row.op_id)}_{row.op_type}"


def diagnosis_metrics(diagnosis: dict[str, Any], ops: pd.DataFrame | None,
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
    flat = {"gap_share": diagnosis["input_bound"]["gap_share"],
            "compute_ms": diagnosis["compute_ms"],
            "host_busy_pct": diagnosis["cpu"].get("host_busy_pct"),
            "process_cpu_pct": diagnosis["cpu"].get("process_pct"),
            "steady_vs_cpu_floor": diagnosis["cpu"]["steady_vs_cpu_floor"],
            "recommended_workers": diagnosis["recommendation"].get("workers"),
            "predicted_step_ms": diagnosis["recommendation"].get("predicted_step_ms"),
            "predicted_now_ms": diagnosis["recommendation"].get("predicted_now_ms"),
            "iterator_wait_median_ms": diagnosis["iterator_wait"].get("median_ms"),
            "timeline_step_rel_diff": diagnosis["cross_check"].get("step_ms_median_rel_diff")}
    metrics += [Metric(f"diagnosis/{k}", float(v), stamp_ms, 0) for k, v in flat.items()
                if v is not None]
    advice = diagnosis.get("advisor")
    if advice:  # the what-if curve as a history: step = worker count (MLflow plots it)
        metrics += [Metric("advisor/predicted_step_ms", float(row["step_ms"]), stamp_ms,
                           int(row["workers"])) for row in advice["curve"]]
        metrics += [Metric("advisor/predicted_best_ms", float(advice["predicted_best_ms"]), stamp_ms, 0),
                    Metric("advisor/own_setting_error", float(advice["now_error"]), stamp_ms, 0)]
        if advice.get("pick_is_recommendation", True):  # no second setting beside no verdict
            metrics.append(Metric("advisor/pick_workers", float(advice["pick_workers"]), stamp_ms, 0))
    metrics += verification_metrics(diagnosis.get("recommendation") or {}, stamp_ms)
    return metrics


def verification_metrics(rec: dict[str, Any], stamp_ms: int) -> list:
    """The verification windows as histories (step = the window's rank, 0: the run's own
    setting): measured and predicted step and the model's error; the verified gain."""
    from mlflow.entities import Metric

    checked = rec.get("verification") or {}
    out = []
    for rank, row in enumerate(checked.get("rows", [])):
        out += [Metric("verify/measured_step_ms", float(row["measured_ms"]), stamp_ms, rank),
                Metric("verify/predicted_step_ms", float(row["predicted_ms"]), stamp_ms, rank),
                Metric("verify/model_error", float(row["error"]), stamp_ms, rank)]
    if rec.get("verified"):
        out += [Metric("verify/measured_gain", float(rec.get("measured_gain", 0.0)), stamp_ms, 0),
                Metric("verify/noise_bar", float(checked["bar"]), stamp_ms, 0)]
    return out


def diagnosis_tags(diagnosis: dict[str, Any]) -> dict[str, str]:
    """Verdict, culprit and recommendation as tags (searchable, shown in run comparison)."""
    culprit = diagnosis.get("culprit") or {}
    return {
        f"{TAG}verdict": verdict_label(diagnosis["bound"]),
        f"{TAG}action": diagnosis["recommendation"]["action"],
        f"{TAG}input_bound": diagnosis["input_bound"]["band"],
        f"{TAG}culprit": culprit.get("label", "none"),
        f"{TAG}recommendation": diagnosis["recommendation"]["sentence"],
        f"{TAG}headline": diagnosis["headline"],
        f"{TAG}timeline_agrees": str(diagnosis["cross_check"].get("agrees")),
        f"{TAG}verified": str(bool(diagnosis["recommendation"].get("verified"))),
        **({f"{TAG}advisor": diagnosis["advisor"]["sentence"]} if diagnosis.get("advisor") else {}),
        **({f"{TAG}advisor_pick_workers": str(diagnosis["advisor"]["pick_workers"])}
           if (diagnosis.get("advisor") or {}).get("pick_is_recommendation", False) else {}),
        **peer_tags(diagnosis.get("peers") or {}),
    }


def peer_tags(readings: dict[str, Any]) -> dict[str, str]:
    """The peer tools' operator and advice on this run (perfstudy.peer.<tool>.*)."""
    out = {}
    for tool in ("msanalyzer", "autotune"):
        reading = readings.get(tool)
        if reading:
            out[f"{TAG}peer.{tool}.operator"] = str(reading.get("operator") or "none")
            out[f"{TAG}peer.{tool}.advice"] = str(reading.get("advice") or "")
    return out


def log_arm(client, experiment_id: str, parent_run_id: str, *, study: str, arm: str,
            instance: str, params: dict[str, Any], summary: RunSummary, steps: pd.DataFrame,
            artifacts: list[Path], results_fingerprint: str, extra_metrics: list = (),
            extra_tags: dict[str, str] | None = None,
            artifact_dirs: dict[str, Path] | None = None) -> dict[str, Any]:
    """Create or update the arm's child run; returns {'run_id', 'created', 'replaced'}.

    artifact_dirs: artifact path -> local folder, logged whole (e.g. the raw profile).
    """
    tags = {**arm_tags(summary, study, arm, instance), **(extra_tags or {})}
    run_name = tags[f"{TAG}run"]  # an arm's repeats are separate runs, found by their run name
    existing = [r for r in _find_runs(client, experiment_id, {f"{TAG}study": study, f"{TAG}arm": arm,
                                                              f"{TAG}role": "arm", f"{TAG}instance": instance})
                if r.data.tags.get(f"{TAG}run", arm) == run_name]
    same = [r for r in existing if r.data.tags.get(f"{TAG}results") == results_fingerprint]
    keep = same[0].info.run_id if same else None
    stale = [r for r in existing if r.info.run_id != keep]
    replaced = []
    for run in stale:  # another training's results, or a twin: keep exactly one run per arm
        client.delete_run(run.info.run_id)
        replaced.append(run.info.run_id)
    start_ms, end_ms = training_window_ms(summary, steps)
    if same:
        run_id = same[0].info.run_id
    else:
        run_id = client.create_run(experiment_id, run_name=run_name, start_time=start_ms, tags={
            **tags, "mlflow.parentRunId": parent_run_id, f"{TAG}results": results_fingerprint,
            **({f"{TAG}replaces": ",".join(replaced)} if replaced else {})}).info.run_id
    client.update_run(run_id, status="RUNNING")
    try:
        client.log_batch(run_id, tags=[_tag(k, v) for k, v in tags.items()])
        log_params(client, run_id, params)
        log_dataset(client, run_id, summary)
        log_metrics(client, run_id, step_metrics(steps) + summary_metrics(summary, run_end_ms(steps))
                    + list(extra_metrics))
        for path in artifacts:
            client.log_artifact(run_id, str(path))
        for target, folder in (artifact_dirs or {}).items():
            client.log_artifacts(run_id, str(folder), target)
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status="FINISHED", end_time=end_ms)
    return {"run_id": run_id, "created": not same, "replaced": replaced}


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


def log_dataset(client, run_id: str, summary: RunSummary) -> None:
    """Log the arm's dataset input once (a re-run of the tracking rule adds no second one)."""
    found = dataset_input(summary)
    if found is None:
        return
    for attempt in (1, 2):
        logged = client.get_run(run_id).inputs.dataset_inputs or []
        if any(d.dataset.digest == found.dataset.digest and d.dataset.name == found.dataset.name for d in logged):
            return
        try:
            client.log_inputs(run_id, datasets=[found])
            return
        except Exception:  # noqa: BLE001 - two arms' jobs created the same dataset at once (a
            if attempt == 2:  # server's unique key); the second try finds it made and links it
                raise


def _tag(key: str, value: str):
    from mlflow.entities import RunTag

    return RunTag(key, value)


def log_study(client, parent_run_id: str, *, metrics: dict[str, float], tags: dict[str, str],
              artifacts: list[tuple[Path, str | None]], stamp_ms: int) -> None:
    """Aggregates, tags and the report onto the study's parent run.

    artifacts: (file, artifact folder or None). stamp_ms should come from the results
    (e.g. the last arm's end), so logging the same results again adds no metric history.
    """
    from mlflow.entities import Metric

    stamp = stamp_ms
    client.update_run(parent_run_id, status="RUNNING")
    try:
        client.log_batch(parent_run_id, tags=[_tag(k, v) for k, v in tags.items()],
                         metrics=[Metric(k, float(v), stamp, 0) for k, v in metrics.items()])
        for path, folder in artifacts:
            client.log_artifact(parent_run_id, str(path), folder)
    except BaseException:
        client.set_terminated(parent_run_id, status="FAILED")
        raise
    client.set_terminated(parent_run_id, status="FINISHED")
