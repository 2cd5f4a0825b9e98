"""The MLflow store: where it is, how to reach it (one sentence when it cannot be reached), the
study's experiment and parent run, found again by their tags; SQLite writers take turns."""

from __future__ import annotations

import contextlib
import fcntl
import os
import urllib.parse
import uuid
from pathlib import Path

TAG = "perfstudy."


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


def _reason(exc: Exception) -> str:
    """A short reason for an unreachable store: the innermost OS error when there is one
    (e.g. 'Connection refused'), else the exception's type."""
    text = str(exc)
    for marker in ("Connection refused", "Name or service not known", "timed out",
                   "No route to host", "Temporary failure in name resolution"):
        if marker in text:
            return marker
    return type(exc).__name__


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


# MLflow's own HTTP settings for a server (env vars it reads at every request), unless the
# user set them: 2 retries, ~3 s of backoff, 10 s per request, instead of minutes of retries.
HTTP_SETTINGS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                 "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


def quick_http_settings() -> None:
    """Apply HTTP_SETTINGS to this process where the user set none (an unreachable server
    then answers in seconds, not after MLflow's default minutes of retries)."""
    for key, value in HTTP_SETTINGS.items():
        os.environ.setdefault(key, value)


def client_for(uri: str):
    """An MlflowClient on `uri`, checked to answer; TrackingError if it does not."""
    from mlflow.tracking import MlflowClient

    db = sqlite_file(uri)
    if db is not None:
        db.parent.mkdir(parents=True, exist_ok=True)
    quick_http_settings()
    client = MlflowClient(tracking_uri=uri)
    try:
        client.search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001 - any failure here means: store unreachable
        what = "server" if uri.startswith(("http://", "https://")) else "store"
        raise TrackingError(
            f"The MLflow tracking {what} {uri} cannot be reached ({_reason(exc)}); start "
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


def find_runs(client, experiment_id: str, tags: dict[str, str]):
    query = " and ".join(f"tags.`{key}` = '{value}'" for key, value in tags.items())
    return client.search_runs([experiment_id], filter_string=query, max_results=50,
                              order_by=["attributes.start_time ASC"])


def ensure_study_run(client, experiment_id: str, study: str, instance: str,
                     base_tags: dict[str, str], identity: dict[str, str] | None = None) -> str:
    """The study's parent run for one results folder (found by tags, created once, SCHEDULED).

    identity: more tags it is found by (the claims' and configs' hashes): other ones get a new
    parent run, the old one is kept as history."""
    keys = {f"{TAG}study": study, f"{TAG}role": "study", f"{TAG}instance": instance, **(identity or {})}
    runs = find_runs(client, experiment_id, keys)
    if runs:
        return runs[0].info.run_id
    for empty in find_runs(client, experiment_id, {f"{TAG}study": study, f"{TAG}role": "study",
                                                    f"{TAG}instance": instance}):
        if empty.info.status == "SCHEDULED":  # this folder's parent that never got a scorecard
            client.delete_run(empty.info.run_id)  # (e.g. a failed run of other configs): no history
    run = client.create_run(experiment_id, run_name=study, tags={**base_tags, **keys})
    # SCHEDULED until track_study logs the report: a study that stops before then (bad
    # input, a failed arm) must not leave a run that claims to be RUNNING.
    client.update_run(run.info.run_id, status="SCHEDULED")
    return run.info.run_id
