"""The smoke study against a real shared tracking server: `mlflow server` on PostgreSQL, over HTTP.

One training serves every check here: the study first runs with the server down (training
and report complete, tracking fails in one sentence), then again with the server up (all
logged once), again with tracking forced (still once), and last a tracking job killed with
kill -9 half way through its upload and run again (the same run, finished, no twin).
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE, env_without_mlflow, gate_overrides
from servers import mlflow_on_postgres

from perfstudy.decide.diagnosis import verdict_label

pytestmark = [pytest.mark.slow, pytest.mark.system]
STUDY = "seed_case"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The PostgreSQL-backed MLflow server (each test starts it, takes it down, brings it back)."""
    with mlflow_on_postgres(tmp_path_factory.mktemp("server"), start=False) as mlflow_server:
        yield mlflow_server


def _study(out: Path, uri: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**env_without_mlflow(), "MLFLOW_TRACKING_URI": uri}
    return subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2", "--keep-going",
         "--config", f"results={out}", "overrides=[size=smoke,model=tiny_cnn,verify.candidates=0]",
         "arms=[baseline]", *extra],
        cwd=out, capture_output=True, text=True, timeout=900, env=env)


def _arm_runs(client):
    experiment = client.get_experiment_by_name(f"perfstudy/{STUDY}")
    runs = client.search_runs([experiment.experiment_id], "tags.`perfstudy.role` = 'arm'")
    return {r.data.tags["perfstudy.arm"]: r for r in runs}, client.search_runs(
        [experiment.experiment_id], "tags.`perfstudy.role` = 'study'")


def _kill_track_arm_half_way(out: Path, uri: str, arm: str, hook_dir: Path) -> None:
    """Run the arm's tracking job with an upload that hangs, and kill -9 it there."""
    marker = hook_dir / "uploading"
    (hook_dir / "sitecustomize.py").write_text(
        "import os, pathlib, time\n"
        "from mlflow.tracking import MlflowClient\n"
        "_log_artifact = MlflowClient.log_artifact\n"
        "def _hang(self, *args, **kwargs):\n"
        "    _log_artifact(self, *args, **kwargs)\n"
        f"    pathlib.Path({str(marker)!r}).touch()\n"
        "    time.sleep(600)\n"
        "MlflowClient.log_artifact = _hang\n")
    run_dir = out / "runs" / STUDY / arm
    env = {**env_without_mlflow(), "PYTHONPATH": str(hook_dir), "MLFLOW_TRACKING_URI": uri}
    job = subprocess.Popen(
        [sys.executable, str(REPO / "scripts" / "track_arm.py"), "--run-dir", str(run_dir),
         "--study-ids", str(out / "runs" / STUDY / "mlflow_study.json"),
         "--study-receipt", str(out / "report" / STUDY / "mlflow_study.json")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 300
    while not marker.exists() and job.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert marker.exists(), "the tracking job never reached its upload:\n" + job.communicate()[0][-3000:]
    job.kill()  # SIGKILL: no handler runs, the run stays as the job left it
    job.wait(timeout=30)


def test_study_on_a_postgres_backed_server_survives_it_being_down_and_a_killed_upload(
        server, tmp_path):
    from mlflow.tracking import MlflowClient

    out = tmp_path / "study"
    out.mkdir()
    # 1. Server down: training and the report complete, tracking fails in one sentence.
    down = _study(out, server.uri)
    assert down.returncode != 0
    assert (out / "runs" / STUDY / "baseline" / "summary.json").is_file()
    assert not (out / "runs" / STUDY / "baseline" / "mlflow_run.json").exists()
    assert (out / "report" / STUDY / "report.html").is_file()
    card = json.loads((out / "report" / STUDY / "scorecard.json").read_text())
    assert "cannot be reached" in card["history"]["error"]  # the report says so, and is made
    assert "History not read: The MLflow tracking server" in (out / "report" / STUDY / "report.md").read_text()
    init_log = (out / "logs" / "track_init" / f"{STUDY}.log").read_text()
    assert f"error: The MLflow tracking server {server.uri} cannot be reached" in init_log
    assert "track_init" in down.stderr and "cannot be reached" in down.stderr  # printed at the end
    trained = (out / "runs" / STUDY / "baseline" / "steps.csv").stat().st_mtime

    # 2. Server back: everything is logged, nothing is trained again.
    server.start()
    up = _study(out, server.uri)
    assert up.returncode == 0, up.stderr[-3000:]
    assert trained == (out / "runs" / STUDY / "baseline" / "steps.csv").stat().st_mtime
    client = MlflowClient(server.uri)
    arms, parents = _arm_runs(client)
    assert sorted(arms) == ["baseline"] and len(parents) == 1
    assert all(r.info.status == "FINISHED" for r in [*arms.values(), *parents])
    arm = arms["baseline"]
    assert arm.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
    bound = json.loads((out / "runs" / STUDY / "baseline" / "diagnosis.json").read_text())["bound"]
    assert arm.data.tags["perfstudy.verdict"] == verdict_label(bound)  # a noisy host may read 'not steady'
    assert len(client.get_metric_history(arm.info.run_id, "step/step_ms")) == 13
    artifacts = {a.path for a in client.list_artifacts(arm.info.run_id)}
    assert {"summary.json", "diagnosis.json", "trace.json", "profile"} <= artifacts
    assert arm.info.artifact_uri.startswith("mlflow-artifacts:")  # uploaded over HTTP
    assert (server.artifacts).is_dir() and any(server.artifacts.rglob("summary.json"))
    parent_files = {a.path for a in client.list_artifacts(parents[0].info.run_id)}
    assert {"report.html", "comparison.csv", "figures"} <= parent_files

    # 3. Tracking forced again: the same runs, no metric logged twice.
    again = _study(out, server.uri, "--forcerun", "track_init", "track_arm", "track_study")
    assert again.returncode == 0, again.stderr[-3000:]
    arms2, parents2 = _arm_runs(client)
    assert {a: r.info.run_id for a, r in arms2.items()} == {a: r.info.run_id for a, r in arms.items()}
    assert [p.info.run_id for p in parents2] == [parents[0].info.run_id]
    assert len(client.get_metric_history(arm.info.run_id, "step/step_ms")) == 13

    # 4. A tracking job killed half way leaves its run RUNNING; the next run finishes it.
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    _kill_track_arm_half_way(out, server.uri, "baseline", hook_dir)
    assert client.get_run(arm.info.run_id).info.status == "RUNNING"
    assert not (out / "report" / STUDY / "mlflow_study.json").exists()  # the receipt is void
    finish = _study(out, server.uri)
    assert finish.returncode == 0, finish.stderr[-3000:]
    arms3, _ = _arm_runs(client)
    assert sorted(arms3) == ["baseline"]
    assert arms3["baseline"].info.run_id == arm.info.run_id
    assert arms3["baseline"].info.status == "FINISHED"
    assert len(client.get_metric_history(arm.info.run_id, "step/step_ms")) == 13

    # 5. History over HTTP: another results folder's earlier run of the same study, claims and
    # configs on this machine kind (its parent run's identity and one point, logged as
    # track_study logs them) is read back when the report is made again.
    parent = client.get_run(parents[0].info.run_id)
    identity = {k: v for k, v in parent.data.tags.items()
                if k.startswith("perfstudy.") and k != "perfstudy.instance"}
    earlier = client.create_run(parent.info.experiment_id, run_name=STUDY,
                                tags={**identity, "perfstudy.instance": "another-folder"}).info.run_id
    card = json.loads((out / "report" / STUDY / "scorecard.json").read_text())
    judged = [c for c in card["claims"] if c["result"] != "not scored"]
    for c in judged:
        client.log_metric(earlier, f"claim/{c['id']}/result", 1.0, timestamp=1_000)
    client.set_terminated(earlier)
    made = _study(out, server.uri, "--forcerun", "make_report")
    assert made.returncode == 0, made.stderr[-3000:]
    card = json.loads((out / "report" / STUDY / "scorecard.json").read_text())
    assert card["history"] == {**card["history"], "runs": 2, "error": None}
    assert all(c["history"]["runs"] == 2 for c in card["claims"] if c["result"] != "not scored")


def test_a_server_gone_mid_training_loses_nothing_and_the_run_is_completed_later(server, tmp_path):
    """The training's live run is on the server; the server goes away while the training waits
    at a gate; the training finishes anyway; with the server back, track_arm completes the same
    run from the files: every step once, FINISHED."""
    from mlflow.tracking import MlflowClient

    if server.process is None or server.process.poll() is not None:
        server.start()
    out = tmp_path / "study"
    out.mkdir()
    overrides = ",".join(["size=smoke", "model=tiny_cnn", "verify.candidates=0", "tracking.live_interval_s=0.5",
                          "tracking.system_metrics_interval_s=1", *gate_overrides(out / "gate_open")])
    command = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2", "--keep-going",
               "--config", f"results={out}", f"overrides=[{overrides}]", "arms=[baseline]"]
    env = {**env_without_mlflow(), "MLFLOW_TRACKING_URI": server.uri}
    job = subprocess.Popen(command, cwd=out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    client = MlflowClient(server.uri)
    receipt = out / "runs" / STUDY / "baseline" / "mlflow_live.json"
    run_id, deadline = None, time.time() + 600  # a bound on start-up only: the training waits
    while time.time() < deadline and job.poll() is None:
        if receipt.is_file():
            run_id = json.loads(receipt.read_text())["run_id"]
            if len(client.get_metric_history(run_id, "step/step_ms")) >= 3:
                break
        time.sleep(0.5)
    assert run_id is not None and job.poll() is None, job.communicate()[0][-3000:]
    server.stop()  # gone mid-training
    (out / "gate_open").touch()
    output = job.communicate(timeout=600)[0]
    assert job.returncode != 0  # the tracking jobs could not log
    assert (out / "runs" / STUDY / "baseline" / "summary.json").is_file(), output[-3000:]  # trained
    left = json.loads(receipt.read_text())
    assert left["run_id"] == run_id and left["status"] == "FINISHED" and left["logged_through_step"] >= 2
    trained = (out / "runs" / STUDY / "baseline" / "steps.csv").stat().st_mtime

    server.start()
    again = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=900, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (out / "runs" / STUDY / "baseline" / "steps.csv").stat().st_mtime == trained  # not retrained
    instance = (out / "runs" / STUDY / "instance_id").read_text().strip()
    experiment = client.get_experiment_by_name(f"perfstudy/{STUDY}")
    mine = client.search_runs([experiment.experiment_id], "tags.`perfstudy.role` = 'arm' and "
                              f"tags.`perfstudy.instance` = '{instance}'")
    assert [r.info.run_id for r in mine] == [run_id]  # the same run, no twin
    assert mine[0].info.status == "FINISHED"
    steps = [m.step for m in client.get_metric_history(run_id, "step/step_ms")]
    assert sorted(steps) == list(range(13))  # every step, once
