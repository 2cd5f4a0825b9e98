"""The not-steady arithmetic checked against a measurement, on a window unsteady by
construction: the first batch is held 16 s (perfstudy.run.transforms.HoldFirst, a per-batch map)
while a map that waits 400 ms per image (Sleep: 1600 ms per batch of 4, whatever the CPU) fills
the queues before it (~10 batches), so the 6 steps of an 8-step smoke window are served from the
buffer and run faster than the pipeline alone. The diagnosis must say so and how many steps a
steady window needs; a run of that many steps is then judged steady.

The network is the tiny one (model=tiny_cnn, a few ms a step; ~50 ms beside another test's
training), so each step drains nearly a whole batch time (1550-1600 ms) of the buffer whatever
the host's pace, and the test runs beside the others. With ResNet50 the drain was the batch time
less a network of 200-700 ms by the host: at 600 and at 1000 ms per batch one run of the advised
steps was still served from the buffer (a clean clone 2026-12-02, CI 2026-12-03), and the test
had to run alone.
"""

import subprocess

import pandas as pd
import pytest
from conftest import PYTHON, REPO

from perfstudy.common.thresholds import NOT_STEADY
from perfstudy.decide.validity import validity
from perfstudy.run.summary import RunSummary, read_summary

pytestmark = pytest.mark.slow
MAX_SMOKE_STEPS = 200  # a smoke-size window must not need hundreds of steps
BUFFERED = ["pipeline.extra_transform=perfstudy.run.transforms:Sleep",
            "+pipeline.extra_transform_args.milliseconds=400",
            "pipeline.batch_transform=perfstudy.run.transforms:HoldFirst",
            "+pipeline.batch_transform_args.seconds=16"]


def _train(out, steps: int) -> tuple[RunSummary, float]:
    result = subprocess.run(
        [PYTHON, str(REPO / "scripts" / "train.py"), "size=smoke", "model=tiny_cnn", "profiler=off",
         "verify.candidates=0", *BUFFERED, f"trainer.steps={steps}", f"paths.results={out}", "arm=buffered"],
        cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    run = out / "runs" / "adhoc" / "buffered"
    frame = pd.read_csv(run / "steps.csv")
    measured = frame[frame["phase"] == "measured"]
    return read_summary(run), float((measured["fwd_bwd_ms"] + measured["tail_ms"]).median())


def test_the_steps_advised_for_a_steady_window_give_one(tmp_path):
    summary, compute_ms = _train(tmp_path, 8)
    check = validity(summary, compute_ms)
    assert not check.steady, f"{summary.steady_step_ms:.0f} ms against {summary.input_floor_ms:.0f}"
    assert check.buffered_batches >= 6  # ~16 s before the window at ~1600 ms per batch
    needed = check.steps_needed
    assert needed is not None and needed <= MAX_SMOKE_STEPS, check.sentence
    assert f"run trainer.steps >= {needed}" in check.sentence

    summary, compute_ms = _train(tmp_path, needed)
    again = validity(summary, compute_ms)
    assert again.steady, again.sentence
    assert again.steady_vs_floor >= NOT_STEADY
    assert summary.steps_excluded_by_phase.get("drain", 0) >= 1  # the drain rule found the buffer's end
