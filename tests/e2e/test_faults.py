"""Faults: a training job killed half way, then the study run again.

Forced, not raced: every training passes 16 images (4 steps at smoke size), then waits for a
file (perfstudy.run.transforms.Gate); the test kills the held job, opens the gate, and the next run,
with the same config, trains the killed arm again whole."""

import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE, env_without_mlflow, gate_overrides

pytestmark = pytest.mark.slow


def _processes_running(fragment: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fragment in text and "scripts/train.py" in text:
            pids.append(int(cmdline.parent.name))
    return pids


def _snakemake(out: Path, *extra: str) -> list[str]:
    overrides = ",".join(["size=smoke", "model=tiny_cnn", "verify.candidates=0",
                          *gate_overrides(out / "gate_open", after=16)])
    return [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2",
            "--config", f"results={out}", f"overrides=[{overrides}]", "arms=[baseline]", *extra]


def test_a_training_killed_half_way_is_finished_by_the_next_run(tmp_path):
    from mlflow.tracking import MlflowClient

    out = tmp_path / "study"
    out.mkdir()
    first = subprocess.Popen(_snakemake(out), cwd=out, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env_without_mlflow())
    killed, deadline = [], time.time() + 600  # a bound on start-up only: the training waits
    while not killed and time.time() < deadline and first.poll() is None:
        logs = list((out / "logs" / "train" / "seed_case").glob("*.log"))
        if any("step 3/8" in log.read_text(errors="replace") for log in logs):
            held = [log for log in logs if "step 5/8" in log.read_text(errors="replace")]
            assert not held, f"{held} went past the gate"  # it cannot: step 5 waits for the file
            for pid in _processes_running(str(out)):
                subprocess.run(["kill", "-9", str(pid)], check=False)
                killed.append(pid)
        time.sleep(0.2)
    # the gate opens once the training is killed: the next run passes it
    (out / "gate_open").touch()
    output = first.communicate(timeout=900)[0]
    assert killed, "no training reached step 3 to be killed:\n" + output[-3000:]
    assert first.returncode != 0  # the study did not finish: the killed arm is missing
    assert not (out / "runs" / "seed_case" / "baseline" / "summary.json").exists()
    assert not (out / "report" / "seed_case" / "report.html").exists()

    second = subprocess.run(_snakemake(out, "--rerun-incomplete"), cwd=out, capture_output=True,
                            text=True, timeout=900, env=env_without_mlflow())
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert (out / "report" / "seed_case" / "report.html").exists()
    client = MlflowClient(f"sqlite:///{out}/mlflow/mlflow.db")
    experiment = client.get_experiment_by_name("perfstudy/seed_case")
    runs = client.search_runs([experiment.experiment_id])
    arms = sorted(r.data.tags["perfstudy.arm"] for r in runs if r.data.tags.get("perfstudy.role") == "arm")
    assert arms == ["baseline"]  # exactly one run, no twin of the killed one
    assert all(r.info.status == "FINISHED" for r in runs)
    for arm in arms:
        steps = (out / "runs" / "seed_case" / arm / "steps.csv").read_text().strip().splitlines()
        assert len(steps) == 1 + 13  # header + every step: the killed arm was trained again whole
