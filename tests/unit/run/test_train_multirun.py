"""scripts/train.py's Hydra multirun: two settings by hand, two trainings, each in its own folder
and its own process (MindSpore's device and dataset engine are set once per process)."""

import json
import subprocess

import pytest
import yaml
from conftest import PYTHON, REPO

pytestmark = pytest.mark.slow


def test_a_two_setting_multirun_trains_twice_into_two_folders(tmp_path):
    result = subprocess.run(
        [PYTHON, str(REPO / "scripts" / "train.py"), "-m", "size=smoke", "model=tiny_cnn", "profiler=off",
         "verify.candidates=0", f"paths.results={tmp_path}", "pipeline.num_parallel_workers=1,2"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = sorted((tmp_path / "multirun").glob("*/[0-9]"))
    assert [job.name for job in jobs] == ["0", "1"]
    workers = []
    for job in jobs:
        summary = json.loads((job / "summary.json").read_text())
        assert (job / "steps.csv").is_file() and summary["steps_measured"] >= 3
        assert yaml.safe_load((job / "config.yaml").read_text())["paths"]["run_dir"] == str(job)
        workers.append(summary["num_parallel_workers"]["requested"])
    assert workers == [1, 2]
    assert not (tmp_path / "runs").exists()  # not into the single run's folder
