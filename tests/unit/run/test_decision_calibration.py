"""The decision calibration's bookkeeping (nothing timed): its table counts outcomes per effect and
pools the effect really measured; several invocations combine into one table."""

import json
import math
import subprocess
import sys

import pytest
from conftest import REPO

from perfstudy.run import decision_calibration as bench


def _trial(effect, outcome, rounds, ratios):
    return bench.Trial(effect, outcome, rounds, ratios[0], None, None, [math.log(r) for r in ratios])


def test_the_table_counts_outcomes_per_effect_and_pools_the_measured_effect():
    trials = [_trial(0.0, "equivalent", 4, [1.01, 0.99, 1.0, 1.0]),
              _trial(0.0, "inconclusive", 12, [1.1, 0.9, 1.05]),
              _trial(0.25, "faster", 3, [0.8, 0.79, 0.81]),
              _trial(0.0, "faster", 3, [0.85, 0.86, 0.84])]
    rows = {r["effect"]: r for r in bench.table(trials)}
    aa = rows[0.0]
    assert aa["comparisons"] == 3 and aa["faster"] == pytest.approx(1 / 3) and aa["slower"] == 0
    assert aa["equivalent"] == pytest.approx(1 / 3) and aa["rounds_median"] == 4
    slowed = rows[0.25]
    # the candidate ran at 0.8x the slowed reference: the reference's slowdown measured +25 %
    assert slowed["measured_gain"] == pytest.approx(1 / 0.8 - 1, abs=0.01)
    assert slowed["measured_gain_low"] < slowed["measured_gain"] < slowed["measured_gain_high"]


def test_runs_of_one_size_combine_and_a_mix_of_injections_is_refused(tmp_path):
    def output(name, inject, trials):
        path = tmp_path / name
        path.write_text(json.dumps({"size": "cpu_demo", "inject": inject, "plain_step_ms": 3000.0,
                                    "trials": [t.__dict__ for t in trials]}))
        return str(path)
    aa = output("aa.json", "thread", [_trial(0.0, "equivalent", 4, [1.0, 1.01, 0.99])])
    mapped = output("map.json", "map", [_trial(0.25, "faster", 3, [0.8, 0.8, 0.8]),
                                        _trial(0.0, "equivalent", 5, [1.0, 1.0, 1.0])])
    threaded = output("thread.json", "thread", [_trial(0.25, "faster", 3, [0.8, 0.8, 0.8])])
    script = [sys.executable, str(REPO / "scripts" / "calibrate_decision.py"), "--combine"]
    out = subprocess.run([*script, aa, mapped], capture_output=True, text=True, check=True).stdout
    assert "| A/A | 2 |" in out and "| reference slowed by 25 % | 1 |" in out
    refused = subprocess.run([*script, mapped, threaded], capture_output=True, text=True)
    assert refused.returncode != 0 and "differ in size or injection" in refused.stderr
