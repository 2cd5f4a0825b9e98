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

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from perfstudy.present import mlflow_fields, mlflow_store
from perfstudy.present.mlflow_store import TAG
from perfstudy.run.summary import RunSummary

MAX_PARAMS_PER_CALL = 100
MAX_METRICS_PER_CALL = 1000


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


def log_metrics(client, run_id: str, metrics: list) -> None:
    """Log metrics in batches of MLflow's maximum size."""
    for chunk in _chunks(metrics, MAX_METRICS_PER_CALL):
        client.log_batch(run_id, metrics=chunk)


@dataclass(frozen=True)
class ArmRun:
    """The arm's child run as log_arm left it (mlflow_run.json carries these fields)."""

    run_id: str
    created: bool  # a new run was made (else an existing one updated)
    replaced: list[str]  # runs deleted: another training's results, or twins
    adopted_live: bool  # the training's own live run was completed


def log_arm(client, experiment_id: str, parent_run_id: str, *, study: str, arm: str,
            instance: str, params: dict[str, Any], summary: RunSummary, steps: pd.DataFrame,
            artifacts: list[Path], results_fingerprint: str, extra_metrics: list = (),
            extra_tags: dict[str, str] | None = None,
            artifact_dirs: dict[str, Path] | None = None,
            named_artifacts: dict[str, Path] | None = None,
            live_run_id: str | None = None, live_through_step: int = -1) -> ArmRun:
    """Create or update the arm's child run (one per arm: twins and stale runs are deleted).

    artifact_dirs: artifact path -> local folder, logged whole (e.g. the raw profile).
    named_artifacts: artifact path (folder/name) -> local file, logged under that name.
    live_run_id: the run the training opened (perfstudy.present.live): completed here rather
    than a new one made, its steps through `live_through_step` already logged.
    """
    tags = {**mlflow_fields.arm_tags(summary, study, arm, instance), **(extra_tags or {})}
    start_ms, end_ms = mlflow_fields.training_window_ms(summary, steps)
    found, tags = _arm_run(client, experiment_id, parent_run_id, tags, results_fingerprint,
                           live_run_id, start_ms, {f"{TAG}study": study, f"{TAG}arm": arm,
                                                   f"{TAG}role": "arm", f"{TAG}instance": instance})
    run_id = found.run_id
    client.update_run(run_id, status="RUNNING")
    logged_live = live_through_step if run_id == live_run_id else -1
    try:
        client.log_batch(run_id, tags=[_tag(k, v) for k, v in tags.items()])
        log_params(client, run_id, params)
        log_dataset(client, run_id, summary)
        stamp = mlflow_fields.run_end_ms(steps)
        log_metrics(client, run_id, mlflow_fields.step_metrics(steps[steps["step"] > logged_live])
                    + mlflow_fields.summary_metrics(summary, stamp) + list(extra_metrics))
        for path in artifacts:
            client.log_artifact(run_id, str(path))
        for target, folder in (artifact_dirs or {}).items():
            client.log_artifacts(run_id, str(folder), target)
        for target, path in (named_artifacts or {}).items():
            _log_as(client, run_id, path, target)
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    if run_id == live_run_id:  # the live run ended with its training process (verification included)
        end_ms = max(end_ms, client.get_run(run_id).info.end_time or 0)
    client.set_terminated(run_id, status="FINISHED", end_time=end_ms)
    return found


def _arm_run(client, experiment_id: str, parent_run_id: str, tags: dict[str, str],
             results_fingerprint: str, live_run_id: str | None, start_ms: int,
             arm_tags: dict[str, str]) -> tuple[ArmRun, dict[str, str]]:
    """The arm's one run, found by its tags (the same results, or the training's live run) or
    made; every other run of the arm (`arm_tags`: study, arm, role, instance) deleted. Returns
    it and the tags it is to carry."""
    run_name = tags[f"{TAG}run"]  # an arm's repeats are separate runs, found by their run name
    existing = [r for r in mlflow_store.find_runs(client, experiment_id, arm_tags)
                if r.data.tags.get(f"{TAG}run", arm_tags[f"{TAG}arm"]) == run_name]
    same = [r for r in existing if r.data.tags.get(f"{TAG}results") == results_fingerprint]
    if not same and live_run_id:  # the training's own live run: completed, not twinned
        same = [r for r in existing if r.info.run_id == live_run_id]
    adopted = bool(same) and same[0].data.tags.get(f"{TAG}results") != results_fingerprint
    keep = same[0].info.run_id if same else None
    replaced = []
    for run in existing:  # another training's results, or a twin: keep exactly one run per arm
        if run.info.run_id != keep:
            client.delete_run(run.info.run_id)
            replaced.append(run.info.run_id)
    made = {"mlflow.parentRunId": parent_run_id, f"{TAG}results": results_fingerprint,
            **({f"{TAG}replaces": ",".join(replaced)} if replaced else {})}
    if same:
        run_id = same[0].info.run_id
    else:
        run_id = client.create_run(experiment_id, run_name=run_name, start_time=start_ms,
                                   tags={**tags, **made}).info.run_id
    if adopted:  # the live run gains what a new run would have been made with
        tags = {**tags, **made}
    return ArmRun(run_id=run_id, created=not same, replaced=replaced, adopted_live=adopted), tags


def _log_as(client, run_id: str, path: Path, target: str) -> None:
    """Log one file under another name (MLflow names an artifact after its file)."""
    import shutil
    import tempfile

    folder, _, name = target.rpartition("/")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / name
        shutil.copyfile(path, copy)
        client.log_artifact(run_id, str(copy), folder or None)


def log_dataset(client, run_id: str, summary: RunSummary) -> None:
    """Log the arm's dataset input once (a re-run of the tracking rule adds no second one)."""
    found = mlflow_fields.dataset_input(summary)
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
