"""Verification windows: settings applied to the pipeline, and a real window measured on a
real MindSpore pipeline (a stand-in step function, so nothing compiles)."""

import time

import pytest

from perfstudy.common.config import compose_run_config
from perfstudy.run import verify
from perfstudy.run.settings import MP

KEY = "pipeline.extra_transform_workers"


def test_settings_reach_the_pipeline_config_and_threads_switch_processes_off():
    cfg = compose_run_config(["size=smoke", "experiment=python_transform",
                              "pipeline.extra_transform_multiprocessing=true"])
    threads = verify.apply_settings(cfg.pipeline, {KEY: 2, "pipeline.num_parallel_workers": 1})
    assert threads.extra_transform_workers == 2 and threads.extra_transform_multiprocessing is False
    procs = verify.apply_settings(cfg.pipeline, {KEY: 1, KEY + MP: True})
    assert procs.extra_transform_multiprocessing is True
    assert cfg.pipeline.extra_transform_workers is None  # the run's own config is left alone
    with pytest.raises(KeyError):
        verify.apply_settings(cfg.pipeline, {"pipeline.no_such_workers": 2})


def test_the_optimizer_schedule_counts_every_window_step():
    cfg = compose_run_config(["size=smoke", "verify.candidates=2", "verify.max_steps=6"])
    assert verify.total_steps(cfg) == 2 * (1 + cfg.verify.warmup_steps + 6)
    own = compose_run_config(["size=smoke", "verify.candidates=2", "verify.max_steps=6",
                              "verify.own_window=true"])
    assert verify.total_steps(own) == 3 * (1 + own.verify.warmup_steps + 6)


def test_the_runs_own_setting_is_its_measured_window_and_only_candidates_run(smoke_dataset):
    """Without verify.own_window the run's own setting is not measured again: its row is the
    run's measured steps (mean, standard error, count), it costs nothing, and the candidates
    get the whole budget."""
    import pandas as pd

    from perfstudy.data.dataset import load_manifest

    cfg = compose_run_config(["size=smoke", "verify.min_steps=2", "verify.max_steps=3"])
    calls = {"n": 0}

    def step_fn(images, labels):
        calls["n"] += 1
        now = time.time()
        return 1.0, now, now

    plan = [{"role": "current", "settings": {KEY: 1}, "label": "now", "predicted_ms": 100.0},
            {"role": "candidate", "settings": {"pipeline.num_parallel_workers": 2}, "label": "c",
             "predicted_ms": 50.0}]
    main = pd.Series([100.0, 110.0, 90.0, 100.0])
    root = load_manifest(smoke_dataset)["root"]
    out = verify.run_windows(step_fn, root, cfg, plan, base_seed=5, first_index=40,
                             training_wall_s=100.0, measured_ms=main)
    own, candidate = out["windows"]
    assert own["main_window"] and own["steps"] == 0 and own["wall_s"] == 0.0
    assert own["step_ms"] == 100.0 and own["steps_measured"] == 4 and own["steady"]
    assert own["rse"] == pytest.approx(verify.rse(main))
    assert candidate["first_step"] == 40 and candidate["steps"] == calls["n"] >= 3
    assert candidate["allotted_s"] == pytest.approx(25.0, abs=1.0)  # the whole budget, alone


def test_a_window_stops_once_its_mean_is_known(smoke_dataset):
    """A pipeline that sleeps 30 ms per image (batch 4: 120 ms) and a 10 ms 'network': steady,
    the step the pipeline's, ended by the standard-error rule or max_steps."""
    cfg = compose_run_config(["size=smoke", "experiment=io_wait", "pipeline.extra_transform_args.milliseconds=30",
                              "verify.max_steps=8", "verify.target_rse=0.05"])

    def step_fn(images, labels):
        fwd = time.time() + 0.005
        time.sleep(0.01)
        return 1.0, fwd, time.time()

    from perfstudy.data.dataset import load_manifest

    root = load_manifest(smoke_dataset)["root"]
    out = verify.measure_window(step_fn, root, cfg, {KEY: 1}, seed=5, first_index=100)
    assert out["steady"] and out["first_step"] == 100
    assert cfg.verify.min_steps <= out["steps_measured"] <= 8
    assert out["rse"] <= 0.05 or out["steps_measured"] == 8
    assert 100 < out["step_ms"] < 400 and out["gap_share"] > 0.5  # the pipeline binds


def test_a_noisy_window_ends_when_its_share_of_the_budget_is_spent(smoke_dataset):
    """Steps that alternate 10 and 200 ms never reach 3 % standard error: the window ends once
    steady and past its allotted time, well before max_steps, and says why."""
    from perfstudy.data.dataset import load_manifest

    cfg = compose_run_config(["size=smoke", "verify.min_steps=2", "verify.max_steps=30"])
    count = {"n": 0}

    def step_fn(images, labels):
        count["n"] += 1
        time.sleep(0.2 if count["n"] % 2 else 0.01)
        now = time.time()
        return 1.0, now, now

    root = load_manifest(smoke_dataset)["root"]
    out = verify.measure_window(step_fn, root, cfg, {}, seed=5, first_index=0, allotted_s=0.5)
    assert out["ended"] == "time" and out["steady"] and out["steps_measured"] < 30
    assert out["rse"] > cfg.verify.target_rse
