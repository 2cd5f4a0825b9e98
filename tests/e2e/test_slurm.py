"""The smoke study on a real one-node SLURM cluster, through workflow/profiles/slurm, against a
PostgreSQL-backed `mlflow server`. One run carries both faults, forced rather than raced: every
training passes 4 steps, then waits for a file that is never written (perfstudy.run.transforms.Gate),
under a 1-minute limit; the first training is cancelled with scancel as soon as it has started
training, the second runs into its time limit, whatever the CPU's speed: neither can finish.
Each gets one sentence. The next run, with the study's own settings, finishes with the same
outputs as the local end-to-end test and one FINISHED MLflow run per arm.

`make test` installs Debian's slurm-wlm and munge when missing (see the Makefile).
"""

import json
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, SNAKEMAKE, env_without_mlflow, gate_overrides
from servers import mlflow_on_postgres
from slurm_cluster import SlurmCluster

# One cluster per machine (fixed ports): every SLURM test on one xdist worker, one at a time; the
# other worker's tests only share the CPUs (each fault here is forced by a gate, not by timing).
# The fixtures are session-scoped (per xdist worker): xdist may run another module's test between
# the two here, and a module fixture would then stop the cluster and start it again.
pytestmark = [pytest.mark.slow, pytest.mark.system, pytest.mark.xdist_group("slurm")]
ARMS = ("baseline", "tuned")


@pytest.fixture(scope="session")
def cluster():
    slurm = SlurmCluster().start()
    try:
        yield slurm
    finally:
        slurm.stop()


@pytest.fixture(scope="session")
def out(tmp_path_factory):
    """One results folder for the module: the time-limit run reuses the dataset."""
    return tmp_path_factory.mktemp("slurm-study")


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The PostgreSQL-backed MLflow server (started)."""
    with mlflow_on_postgres(tmp_path_factory.mktemp("server"), start=True) as mlflow_server:
        yield mlflow_server


def _command(out: Path, *extra: str) -> list[str]:
    return ["timeout", "-k", "10", "900", SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out),
            "--profile", str(REPO / "workflow" / "profiles" / "slurm"), "--cores", "2",
            "--slurm-status-command", "squeue",  # this test cluster runs without accounting
            "--slurm-init-seconds-before-status-checks", "1",
            "--latency-wait", "5",  # one node, local files: no shared file system to wait for
            "--config", f"results={out}/results", "overrides=[size=smoke,model=tiny_cnn,verify.candidates=0]", *extra]


def _env(cluster, server) -> dict[str, str]:
    return {**cluster.env(env_without_mlflow()), "MLFLOW_TRACKING_URI": server.uri}


def _study(out: Path, cluster, server, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(_command(out, *extra), cwd=out, capture_output=True, text=True,
                          env=_env(cluster, server))


def _cancel_the_first_training_half_way(cluster, out: Path, process: subprocess.Popen,
                                        timeout: float = 600) -> dict[str, str]:
    """Wait for a training job to start training (its log names the arm's data and workers; it
    can never finish: it waits at the gate), scancel it; return the job (id, arm)."""
    deadline = time.time() + timeout
    while time.time() < deadline and process.poll() is None:
        for job in cluster.jobs():
            if job["state"] == "RUNNING" and job["comment"].startswith("rule_train_"):
                arm = job["comment"].rsplit("seed_case_", 1)[1]
                log = out / "results/logs/train/seed_case" / f"{arm}.log"
                if log.is_file() and "map workers requested" in log.read_text(errors="replace"):
                    cluster.cancel(job["id"])
                    return {**job, "arm": arm}
        time.sleep(0.5)
    raise AssertionError("no training job got going: " + (process.stderr.read()[-3000:]
                                                         if process.poll() is not None else ""))


@pytest.fixture(scope="session")
def faulty_run(cluster, server, out):
    """One run with both faults: each training waits at step 4 for a file never written, under a
    1-minute limit; the first is cancelled with scancel once it trains, the second runs into its
    limit (whatever the CPU: neither can finish)."""
    gate = ",".join(gate_overrides(out / "never_written", after=16))
    command = _command(out, f"arms=[{','.join(ARMS)}]",
                       f"overrides=[size=smoke,model=tiny_cnn,profiler=off,verify.candidates=0,{gate}]",
                       "--set-resources", "train:runtime=1")
    process = subprocess.Popen(command, cwd=out, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=_env(cluster, server))
    cancelled = _cancel_the_first_training_half_way(cluster, out, process)
    _, stderr = process.communicate(timeout=900)
    return process.returncode, stderr, cancelled


def test_the_study_on_slurm_survives_a_cancelled_training_job(cluster, server, out, faulty_run):
    from mlflow.tracking import MlflowClient

    returncode, stderr, job = faulty_run
    assert returncode != 0
    sentence = next(line for line in stderr.splitlines() if f"SLURM job {job['id']} " in line)
    assert sentence.startswith(f"error: SLURM job {job['id']} (rule train, seed_case_{job['arm']})")
    assert "was cancelled" in sentence and "run the workflow again" in sentence

    # the next run (the study's own settings) finishes: one FINISHED run per arm
    second = _study(out, cluster, server, f"arms=[{','.join(ARMS)}]")
    assert second.returncode == 0, second.stderr[-4000:]
    runs = out / "results" / "runs" / "seed_case"
    for arm in ARMS:
        summary = json.loads((runs / arm / "summary.json").read_text())
        assert summary["steps_measured"] + summary["steps_excluded"] == 8
        scheduler = summary["environment"]["scheduler"]
        assert scheduler["name"] == "slurm" and scheduler["job_id"] and scheduler["partition"] == "cpu"
        diagnosis = json.loads((runs / arm / "diagnosis.json").read_text())
        assert diagnosis["recommendation"]["sentence"]
    report = out / "results" / "report" / "seed_case"
    table = pd.read_csv(report / "comparison.csv")
    assert set(table[table["source"] == "measured"]["arm"]) == set(ARMS)
    md = (report / "report.md").read_text()
    assert "(SLURM job " in md.split("Provenance: ", 1)[1]
    assert "unlike CPUs" not in md  # one node: like with like
    client = MlflowClient(server.uri)
    experiment = client.get_experiment_by_name("perfstudy/seed_case")
    found = client.search_runs([experiment.experiment_id])
    parents = [r for r in found if r.data.tags.get("perfstudy.role") == "study"]
    arms = [r for r in found if r.data.tags.get("perfstudy.role") == "arm"]
    assert len(parents) == 1
    assert sorted(r.data.tags["perfstudy.arm"] for r in arms) == sorted(ARMS)  # one run per arm
    for run in arms:
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert run.data.tags["perfstudy.scheduler_job_id"]
        assert run.data.tags["host"].split(".")[0] == cluster.host
    submitted = [j for j in cluster.jobs() if j["comment"].startswith("rule_")]
    assert {j["comment"].split("_wildcards")[0] for j in submitted} >= {
        "rule_make_dataset", "rule_train", "rule_analyze"}  # the heavy rules ran as SLURM jobs
    assert not any(j["comment"].startswith(("rule_track", "rule_make_report")) for j in submitted)


def test_a_training_job_over_its_time_limit_says_which_limit_to_raise(faulty_run):
    returncode, stderr, cancelled = faulty_run
    assert returncode != 0
    other = next(arm for arm in ARMS if arm != cancelled["arm"])
    sentence = next((line for line in stderr.splitlines() if "time limit" in line), stderr[-3000:])
    assert sentence.startswith("error: SLURM job ") and f"(rule train, seed_case_{other})" in sentence
    assert "--set-resources train:runtime=<minutes>" in sentence
    assert "(1:00)" in sentence  # the limit it hit
