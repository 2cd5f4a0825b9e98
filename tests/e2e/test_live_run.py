"""Watching a training in MLflow while it runs (perfstudy.present.live), forced, not raced: the
training passes 16 images (4 steps at smoke size), then waits for a file (Gate). While it waits,
its run is in the store and in MLflow's UI with its first steps and system metrics, and the UI's
Source and Version columns show the program and the commit; a SIGTERM then ends it KILLED."""

import json
import subprocess
import time
from pathlib import Path

import pytest
from browser import Chromium
from conftest import REPO, SNAKEMAKE, env_without_mlflow, gate_overrides
from servers import MlflowServer

pytestmark = [pytest.mark.slow, pytest.mark.system]


def _training_pid(out: Path) -> int | None:
    """The training's Python process (not the shell Snakemake runs it in)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "python" in Path(argv[0]).name and any(a.endswith("scripts/train.py") for a in argv) \
                and any(str(out) in a for a in argv):
            return int(cmdline.parent.name)
    return None


def _live_run(client, out: Path):
    receipt = out / "runs" / "seed_case" / "baseline" / "mlflow_live.json"
    if not receipt.is_file():
        return None
    return client.get_run(json.loads(receipt.read_text())["run_id"])


def test_a_training_is_watched_in_mlflow_while_it_runs_and_a_sigterm_ends_its_run_killed(tmp_path):
    from mlflow.tracking import MlflowClient

    out = tmp_path / "study"
    out.mkdir()
    overrides = ",".join(["size=smoke", "model=tiny_cnn", "verify.candidates=0", "tracking.live_interval_s=0.5",
                          "tracking.system_metrics_interval_s=1", *gate_overrides(out / "gate_open")])
    job = subprocess.Popen(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2", "--config",
         f"results={out}", f"overrides=[{overrides}]", "arms=[baseline]"],
        cwd=out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env_without_mlflow())
    uri = f"sqlite:///{out}/mlflow/mlflow.db"
    client = MlflowClient(uri)
    run, deadline = None, time.time() + 600  # a bound on start-up only: the training waits
    while time.time() < deadline and job.poll() is None:
        run = _live_run(client, out)
        if run is not None and len(client.get_metric_history(run.info.run_id, "step/step_ms")) >= 3 \
                and "system/cpu_utilization_percentage" in run.data.metrics:
            break
        time.sleep(0.5)
    assert job.poll() is None, "the study ended before its training was seen:\n" + job.communicate()[0][-3000:]
    assert run is not None and run.info.status == "RUNNING"
    tags = run.data.tags
    assert tags["mlflow.parentRunId"] and tags["perfstudy.arm"] == "baseline"
    assert tags["mlflow.source.name"] == "scripts/train.py"
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert tags["mlflow.source.git.commit"] == commit
    assert not (out / "runs" / "seed_case" / "baseline" / "steps.csv").exists()  # still training

    server = MlflowServer(uri, tmp_path / "artifacts", tmp_path / "server.log").start()
    try:
        with Chromium() as browser:
            page = browser.open(
                f"{server.uri}/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}",
                ready='["step/step_ms", "system/cpu_utilization_percentage", "train.py"]'
                      '.every(t => document.body.innerText.includes(t))',
                evaluate="document.body.innerText", screenshot=tmp_path / "live_run.png",
                width=1400, height=1000)
    finally:
        server.stop()
    assert page["ready"], page["value"][-3000:]
    text = page["value"]
    assert "Running" in text or "RUNNING" in text
    assert commit[:6] in text  # the Version: the commit the training runs

    pid = _training_pid(out)
    assert pid is not None
    subprocess.run(["kill", "-TERM", str(pid)], check=True)  # as SLURM's scancel or snakemake do
    output = job.communicate(timeout=300)[0]
    assert job.returncode != 0, output[-3000:]
    assert client.get_run(run.info.run_id).info.status == "KILLED"
    receipt = json.loads((out / "runs" / "seed_case" / "baseline" / "mlflow_live.json").read_text())
    assert receipt["status"] == "KILLED" and receipt["logged_through_step"] >= 2
