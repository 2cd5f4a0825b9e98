"""Two studies logging to one MLflow store at the same time: no lock errors, no lost runs."""

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, SNAKEMAKE, env_without_mlflow

pytestmark = pytest.mark.slow
STUDY = "seed_case"


def _start(out: Path, uri: str, *extra: str) -> subprocess.Popen:
    out.mkdir(exist_ok=True)
    return subprocess.Popen(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2",
         "--config", f"results={out}", "overrides=[size=smoke,model=tiny_cnn,verify.candidates=0]",
         "arms=[baseline]", *extra],
        cwd=out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**env_without_mlflow(), "MLFLOW_TRACKING_URI": uri})


def _finish(jobs: list[subprocess.Popen]) -> None:
    outputs = [job.communicate(timeout=1200)[0] for job in jobs]
    for job, output in zip(jobs, outputs, strict=True):
        assert job.returncode == 0, output[-4000:]
        assert "database is locked" not in output


def _runs(client):
    experiment = client.get_experiment_by_name(f"perfstudy/{STUDY}")
    runs = client.search_runs([experiment.experiment_id])
    parents = {r.data.tags["perfstudy.instance"]: r.info.run_id for r in runs
               if r.data.tags.get("perfstudy.role") == "study"}
    arms = {(r.data.tags["perfstudy.instance"], r.data.tags["perfstudy.arm"]): r for r in runs
            if r.data.tags.get("perfstudy.role") == "arm"}
    return parents, arms, runs


def test_two_studies_share_one_sqlite_store_at_once(tmp_path):
    from mlflow.tracking import MlflowClient

    store = tmp_path / "shared" / "mlflow.db"
    uri = f"sqlite:///{store}"
    folders = [tmp_path / "study_a", tmp_path / "study_b"]
    _finish([_start(out, uri) for out in folders])

    client = MlflowClient(uri)
    parents, arms, runs = _runs(client)
    instances = {(out / "runs" / STUDY / "instance_id").read_text().strip() for out in folders}
    assert set(parents) == instances and len(instances) == 2  # one parent run per folder
    assert sorted(arms) == sorted((i, "baseline") for i in instances)
    assert all(r.info.status == "FINISHED" for r in runs)
    for (instance, _), run in arms.items():
        assert run.data.tags["mlflow.parentRunId"] == parents[instance]
        assert len(client.get_metric_history(run.info.run_id, "step/step_ms")) == 13
    assert all(run.info.artifact_uri.startswith((tmp_path / "shared" / "artifacts").as_uri())
               for run in runs)  # artifacts beside the shared store, not in either folder

    # Only the tracking jobs, forced in both studies at once: they overlap fully.
    _finish([_start(out, uri, "--forcerun", "track_init", "track_arm", "track_study")
             for out in folders])
    parents2, arms2, runs2 = _runs(client)
    assert parents2 == parents
    assert {k: r.info.run_id for k, r in arms2.items()} == {k: r.info.run_id for k, r in arms.items()}
    assert len(runs2) == len(runs) == 4 and all(r.info.status == "FINISHED" for r in runs2)

    # The same study, claims and configs on one machine: study_a's report, made again, reads
    # study_b's run back from the store as its history (its own point is not counted twice).
    _finish([_start(folders[0], uri, "--forcerun", "make_report")])
    card = json.loads((folders[0] / "report" / STUDY / "scorecard.json").read_text())
    assert card["history"]["runs"] == 2 and card["history"]["error"] is None
    judged = [c for c in card["claims"] if c["result"] != "not scored"]
    # A claim counts study_b's run where study_b scored it: at smoke size, two studies sharing
    # 2 cores, a window can be unsteady in one of them (advisor_pick then not scored there).
    other = json.loads((folders[1] / "report" / STUDY / "scorecard.json").read_text())
    scored_b = {c["id"] for c in other["claims"] if c["result"] != "not scored"}
    assert judged and scored_b & {c["id"] for c in judged}
    for c in judged:
        runs = 2 if c["id"] in scored_b else 1
        assert c["history"]["runs"] == runs, (c["id"], c["history"])
        assert (f" of {runs} runs on this machine kind" if runs == 2 else "the first recorded run") \
            in c["history"]["text"]
    parent = client.get_run(parents[(folders[0] / "runs" / STUDY / "instance_id").read_text().strip()])
    assert parent.data.tags["perfstudy.machine"] == card["history"]["machine"]
    assert {f"perfstudy.claim_history.{c['id']}" for c in judged} <= set(parent.data.tags)
    assert len(client.get_metric_history(parent.info.run_id, f"claim/{judged[0]['id']}/result")) == 1

    # Two fresh runs of one study side by side: the same configs, one machine, both scorecards
    done = subprocess.run(["make", "-s", "compare", f"A={folders[0]}", f"B={folders[1]}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "## Configs (0 settings differ)" in done.stdout
    assert f"| {judged[0]['id']} | " in done.stdout and "| baseline | " in done.stdout
    assert done.stdout.count("claims hold") == 2
