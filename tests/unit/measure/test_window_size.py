"""A window's variance split into its own and its steps', and the window length it implies."""

import math

import numpy as np
import pytest

from perfstudy.measure import rounds
from perfstudy.measure.rounds import Schedule, Window
from perfstudy.measure.window_size import Components, PairedRound, WindowCost, components, from_rounds


def made_rounds(between_sd, within_sd, seed, n_rounds=12, overhead_s=2.0):
    """Two settings (the same truth) in rounds: each window its own offset (between_sd, log)
    and 3-12 counted steps (as the cycle rule varies them) with independent noise (within_sd)."""
    rng = np.random.default_rng(seed)

    def visit(setting, round_):
        steps = int(rng.integers(3, 13))
        level = 100.0 * math.exp(rng.normal(0, between_sd))
        each = list(level * np.exp(rng.normal(0, within_sd, steps)))
        mean = float(np.mean(each))
        return Window(mean, steps + 2, steps, overhead_s + mean / 1e3 * steps, [100.0, 100.0] + each,
                      ["startup", "drain"] + ["measured"] * steps)
    return rounds.run(visit, Schedule(2, seed=seed, min_rounds=n_rounds, max_rounds=n_rounds), monitor=None)


def pooled(between_sd, within_sd, runs=60):
    pairs, costs = [], []
    for seed in range(runs):
        p, c = from_rounds(made_rounds(between_sd, within_sd, seed), f"run{seed}")
        pairs += p
        costs += c
    return components(pairs, costs)


def test_the_components_are_recovered_from_the_window_means_alone():
    found = pooled(0.05, 0.15)
    assert found.pairs == 720
    assert found.within_log_var == pytest.approx(0.0225, rel=0.3)
    assert found.between_log_var == pytest.approx(0.0025, rel=0.5)
    assert found.overhead_s == pytest.approx(2.0, rel=0.05) and found.step_s == pytest.approx(0.1, rel=0.05)
    # n* = sqrt(c0 sw^2 / (c1 sb^2)) = sqrt(2 x 0.0225 / (0.1 x 0.0025)) ~ 13
    assert 7 < found.best_steps < 25


def test_without_a_windows_own_variance_longer_windows_are_cheaper():
    found = pooled(0.0, 0.15)
    assert found.between_log_var < 0.001
    assert found.cost_per_precision(12) < found.cost_per_precision(6)


def test_the_cheapest_length_minimises_the_cost_of_a_precision():
    c = Components(10, within_log_var=0.02, between_log_var=0.001, counted_steps=4, overhead_s=3.0, step_s=0.5)
    best = c.best_steps
    assert best == pytest.approx(math.sqrt(3.0 * 0.02 / (0.5 * 0.001)))
    assert c.cost_per_precision(best) < min(c.cost_per_precision(best * 0.6), c.cost_per_precision(best * 1.6))


def test_windows_of_one_length_cannot_tell_the_parts_apart():
    pairs, costs = from_rounds(made_rounds(0.05, 0.1, 0), "one")
    same = [p.__class__(p.comparison, p.log_ratio, 6, 6) for p in pairs]
    assert components(same, costs) is None


def test_the_script_splits_a_recorded_calibrations_windows(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    out = tmp_path / "windows.json"
    done = subprocess.run([sys.executable, str(repo / "scripts" / "size_windows.py"),
                           str(repo / "docs" / "benchmarks" / "windows-smoke.json"), "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("smoke: 64 paired rounds")
    assert json.loads(out.read_text())["smoke"]["min_steps"] == [3]
    bad = subprocess.run([sys.executable, str(repo / "scripts" / "size_windows.py"), str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "neither a folder" in bad.stderr


def test_a_calibration_can_vary_its_windows_lengths():
    from omegaconf import OmegaConf

    from perfstudy.run.decision_calibration import with_min_steps

    cfg = OmegaConf.create({"verify": {"min_steps": 3, "max_steps": 8}})
    longer = with_min_steps(cfg, 8)
    assert (longer.verify.min_steps, longer.verify.max_steps) == (8, 18)
    assert cfg.verify.min_steps == 3  # a copy


def test_lengths_that_differ_between_comparisons_are_said_to_confound_the_split():
    """cpu_demo's shape: a quiet comparison's windows count 4 steps, a noisy one's 8 (the cycle
    rule moves each a step). Across the two, short windows look quiet and long ones noisy, so
    the split reads it all as the windows' own and would say 'shorter': it is marked
    confounded instead; the simulated runs above, lengths varying within each, are not."""
    rng = np.random.default_rng(3)
    pairs, costs = [], []
    for run in range(40):
        for _ in range(4):
            for name, sd, steps in (("quiet", 0.03, 4), ("noisy", 0.25, 8)):
                n = steps + int(rng.integers(0, 2))
                pairs.append(PairedRound(f"{name}{run}", float(rng.normal(0, sd)), n, n))
                costs.append(WindowCost(10.0, 1000.0, n))
    found = components(pairs, costs)
    assert found is not None and found.confounded and found.length_within_share < 0.2
    assert not pooled(0.05, 0.15, runs=10).confounded
