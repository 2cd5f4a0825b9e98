"""Real smoke-size training with the profiler on: the diagnosis finds a slow operator."""

import json
import subprocess

import pandas as pd
import pytest
from conftest import PYTHON, REPO, env_without_mlflow

# The study's tiny network (model=tiny_cnn: a few ms a step, ~50 ms beside another test's
# training) against a map that waits 2.4 s a batch: the map binds whatever the host's pace. With
# ResNet50 (~0.3 s a step, up to 1.7 s on a shared host) the network could rightly bind, so the
# test had to run alone (serial). ResNet50's own diagnosis: tests/e2e/test_end_to_end.py.
pytestmark = pytest.mark.slow


def test_a_slow_python_transform_is_named_as_the_culprit(tmp_path, smoke_dataset):
    # 600 ms per image, batch 4: 2.4 s per batch against a few ms of compute.
    run_dir = tmp_path / "runs" / "adhoc" / "slow"
    train = subprocess.run(
        [PYTHON, str(REPO / "scripts" / "train.py"), "size=smoke", "model=tiny_cnn", "experiment=baseline", "arm=slow",
         "profiler=light", f"paths.results={tmp_path}", f"paths.data_root={smoke_dataset.parent.parent}",
         "pipeline.extra_transform=perfstudy.run.transforms:Sleep",
         "+pipeline.extra_transform_args.milliseconds=600", "trainer.steps=14", "verify.candidates=0"],
        capture_output=True, text=True, timeout=600, env=env_without_mlflow())
    assert train.returncode == 0, train.stderr[-3000:]
    assert not (run_dir / "profile" / "ops").exists()  # light: no op timeline
    analyze = subprocess.run([PYTHON, str(REPO / "scripts" / "analyze.py"), "--run-dir", str(run_dir)],
                             capture_output=True, text=True, timeout=300)
    assert analyze.returncode == 0, analyze.stderr[-3000:]
    diagnosis = json.loads((run_dir / "diagnosis.json").read_text())
    assert diagnosis["bound"] == "input", diagnosis["headline"]
    culprit = diagnosis["culprit"]
    assert culprit["operations"] == ["Sleep"], culprit
    assert culprit["label"].startswith("Map #2 [Sleep]")
    assert culprit["cpu_pct_per_worker"] < 50  # it waits, it does not compute
    calibration = json.loads((run_dir / "summary.json").read_text())["calibration"]
    assert diagnosis["recommendation"]["action"] == "set_workers", (
        diagnosis["recommendation"]["sentence"],
        {k: v for k, v in calibration.items() if k != "operators"},
        [(p["workers"], p["multiprocessing"], p["wall_ms_per_batch"], p["cpu_ms_per_batch"], p["error"])
         for op in calibration["operators"] for p in op["points"]])
    assert "Map #2 [Sleep]" in diagnosis["recommendation"]["sentence"]
    ops = pd.read_csv(run_dir / "pipeline_ops.csv").set_index("op_id")
    assert ops.loc[3, "queue_usage"] > 0.5  # the decode map's output piles up before it
    assert diagnosis["cross_check"] is None
