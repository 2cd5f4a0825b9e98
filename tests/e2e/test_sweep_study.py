"""The sweep study with repeats through the real DAG (smoke size): arms fanned out per worker
count, every arm twice with its own seed, the advisor set against the measured arms. (The
AutoTune arm is left out here to keep make test short: test_autotune trains a real one,
test_advisor reports one, test_tracking tags one.)"""

import json
import re
import subprocess

import pandas as pd
import pytest
from conftest import REPO, SNAKEMAKE, env_without_mlflow

pytestmark = pytest.mark.slow


def test_sweep_with_repeats_runs_reports_and_tracks_every_run(tmp_path):
    from mlflow.tracking import MlflowClient

    result = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "--cores", "2", "--config",
         f"results={tmp_path}", "study=sweep", "repeats=2", "studies={sweep: {sweep: {values: [2]}}}",
         "arms=[baseline,workers_2]",
         "overrides=[size=smoke,model=tiny_cnn,verify.candidates=0]"],  # verification: test_end_to_end
        cwd=tmp_path, capture_output=True, text=True, timeout=1200, env=env_without_mlflow())
    assert result.returncode == 0, result.stderr[-3000:]
    runs = tmp_path / "runs" / "sweep"
    assert sorted(p.name for p in runs.iterdir() if p.is_dir()) == [
        "baseline", "baseline.r2", "workers_2", "workers_2.r2"]
    report = tmp_path / "report" / "sweep"
    spread = pd.read_csv(report / "repeats.csv").set_index("arm")
    assert list(spread.index) == ["baseline", "workers_2"]
    assert spread.loc["workers_2", "repeats"] == 2 and spread.loc["workers_2", "seeds"] == "1 11"
    assert spread.loc["workers_2", "speedup_ci_low"] <= spread.loc["workers_2", "speedup_ci_high"]
    md = (report / "report.md").read_text()
    assert "## Repeats: spread across seeds, and the speedup's interval" in md
    assert re.search(r"^\| workers_2 +\| +2 +\|", md, re.M)  # predicted against measured at 2 workers
    assert "The recommendation (from baseline) is" in md or "baseline got no verdict" in md  # one answer
    assert (report / "figures" / "scaling.png").read_bytes()[:4] == b"\x89PNG"
    card = json.loads((report / "scorecard.json").read_text())  # workflow/claims/sweep.yaml
    scored = {c["id"]: c for c in card["claims"] if c["result"] != "not scored"}  # repeats: may be inconclusive
    assert all(scored[k]["repeats"] == 2 for k in ("baseline_input_bound", "culprit_is_map", "advisor_pick"))
    assert {"baseline_input_bound", "culprit_is_map", "advisor_pick",
            "advisor_predicts_two_workers"} <= set(scored)
    assert md.splitlines()[2] == f"**{card['headline']}**"
    # the tools users have, on the same runs, scored against the same arms
    assert "culprit_beats_analyzer" in {c["id"] for c in card["claims"]}
    peers = pd.read_csv(report / "peers_scored.csv").set_index("tool")
    assert {"perfstudy", "MindSpore's MindData analyzer"} <= set(peers.index)
    assert set(peers["culprit right"]) <= {"yes", "NO"}
    assert "## Beside the tools you have" in md and "## The tools scored against the measured arms" in md

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow/mlflow.db")
    experiment = client.get_experiment_by_name("perfstudy/sweep")
    found = client.search_runs([experiment.experiment_id])
    arms = {r.data.tags["perfstudy.run"]: r for r in found if r.data.tags.get("perfstudy.role") == "arm"}
    assert sorted(arms) == ["baseline", "baseline.r2", "workers_2", "workers_2.r2"]
    assert arms["workers_2.r2"].data.tags["perfstudy.arm"] == "workers_2"
    assert arms["workers_2.r2"].data.tags["seed"] == "11"
    assert all(r.info.status == "FINISHED" for r in found)
    parent = next(r for r in found if r.data.tags.get("perfstudy.role") == "study")
    assert parent.data.metrics["workers_2/repeats"] == 2
    assert "workers_2/speedup_ci_low" in parent.data.metrics
