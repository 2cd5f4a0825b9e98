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
    cfg = compose_run_config(["size=smoke", "verify.candidates=2", "verify.max_steps=6",
                              "verify.max_rounds=5"])
    # 3 settings x 5 rounds x 2 (a disturbed window measured again) x (start-up + 6 steps)
    assert verify.total_steps(cfg) == 3 * 5 * 2 * (1 + cfg.verify.warmup_steps + 6)
    # a prepared run also measures itself against its source: 2 settings more
    prepared = compose_run_config(["size=smoke", "verify.candidates=2", "verify.max_steps=6",
                                   "verify.max_rounds=5", "data.prepared=true"])
    assert verify.total_steps(prepared) == 5 * 5 * 2 * (1 + cfg.verify.warmup_steps + 6)


def _stand_in_step(calls):
    def step_fn(images, labels):
        calls["n"] += 1
        fwd = time.time() + 0.002
        time.sleep(0.005)
        return 1.0, fwd, time.time()
    return step_fn


def test_the_own_setting_and_the_candidates_are_measured_in_the_same_rounds(smoke_dataset):
    """Every round visits both settings (the run's own too: never its earlier long window), in
    a seeded order that is recorded; steps are numbered on from the training's; each window is
    a fresh pipeline whose estimate is over its counted steps."""
    from perfstudy.data.dataset import load_manifest
    from perfstudy.run.verify_record import Planned

    cfg = compose_run_config(["size=smoke", "verify.min_steps=2", "verify.max_steps=5",
                              "verify.min_rounds=2", "verify.max_rounds=3"])
    calls = {"n": 0}
    plan = [Planned("current", 0, {"pipeline.num_parallel_workers": 1}, "now", 100.0, "pipeline", False),
            Planned("candidate", 1, {"pipeline.num_parallel_workers": 2}, "c", 50.0, "pipeline", True)]
    root = load_manifest(smoke_dataset)["root"]
    found = verify.run_rounds(_stand_in_step(calls), root, cfg, plan, base_seed=5, first_index=40,
                              training_wall_s=1000.0)
    assert 2 <= len(found.orders) <= 3 and all(sorted(o) == [0, 1] for o in found.orders)
    assert sum(v.window.steps for v in found.visits) == calls["n"]
    for v in found.kept():
        w = v.window
        assert len(w.step_ms_each) == w.steps == len(w.phases) and w.phases[0] == "startup"
        if w.step_ms is not None:
            counted = [ms for ms, p in zip(w.step_ms_each, w.phases, strict=True) if p == "measured"]
            assert len(counted) == w.steps_counted >= 2
            # arrival to arrival of two waited-for batches: the counted steps' mean, give or
            # take the two end steps' compute times (a ~5 ms stand-in, longer on a loaded host)
            assert w.step_ms == pytest.approx(sum(counted) / len(counted), abs=10.0 / len(counted) + 0.1)
        assert v.interference is not None and v.interference.wall_s > 0
    assert found.series(0) and found.series(1)  # the own setting has its own windows
    again = verify.run_rounds(_stand_in_step({"n": 0}), root, cfg, plan, base_seed=5,
                              first_index=0, training_wall_s=1000.0)
    assert again.orders[:2] == found.orders[:2]  # the order is the seed's, not the clock's


def test_a_window_ends_once_drained_with_its_counted_steps(smoke_dataset, monkeypatch):
    """A pipeline that sleeps 30 ms per image (batch 4: 120 ms) and a 10 ms 'network': the
    buffered batches are drained, min_steps are counted, the step is the pipeline's; the
    window's source outlasts its steps by what a pipeline reads ahead (never runs dry)."""
    from perfstudy.run import pipeline

    asked = []
    real = pipeline.create_train_dataset
    monkeypatch.setattr(pipeline, "create_train_dataset",
                        lambda root, pipe_cfg, num_batches, *a, **kw:
                        asked.append(num_batches) or real(root, pipe_cfg, num_batches, *a, **kw))
    cfg = compose_run_config(["size=smoke", "experiment=io_wait", "pipeline.extra_transform_args.milliseconds=30",
                              "verify.min_steps=3", "verify.max_steps=8"])

    def step_fn(images, labels):
        fwd = time.time() + 0.005
        time.sleep(0.01)
        return 1.0, fwd, time.time()

    from perfstudy.data.dataset import load_manifest

    root = load_manifest(smoke_dataset)["root"]
    out = verify.measure_window(step_fn, root, cfg, {KEY: 1}, seed=5, first_index=100)
    assert out.step_ms is not None and out.steps_counted == 3 and out.steps <= 9
    assert 100 < out.step_ms < 400 and out.gap_share > 0.5  # the pipeline binds
    assert asked == [verify.window_steps(cfg.verify) + pipeline.batches_ahead(cfg.pipeline)]


def test_a_sweep_measures_every_setting_in_rounds_and_places_each(smoke_dataset):
    """The benchmark's ground truth: one run measures every swept setting (threads, processes)
    in interleaved rounds, the run's other operators as they were; each setting is placed."""
    from perfstudy.data.dataset import load_manifest
    from perfstudy.measure.nearbest import Near
    from perfstudy.run import sweep

    cfg = compose_run_config(["size=smoke", "experiment=io_wait", "verify.min_steps=2", "verify.max_steps=4",
                              "verify.min_rounds=2", f"sweep.key={KEY}", "sweep.workers=[1,2]",
                              "sweep.processes=true", "sweep.max_rounds=2"])
    own = {"pipeline.num_parallel_workers": 2, KEY: 1, KEY + MP: True}
    calls = {"n": 0}
    root = load_manifest(smoke_dataset)["root"]
    found = sweep.run(_stand_in_step(calls), root, cfg, own, 2, base_seed=9, first_index=12,
                      training_wall_s=float("inf"))
    assert [(p.workers, p.processes) for p in found.points] == [(1, False), (1, True), (2, False), (2, True)]
    assert all(p.settings["pipeline.num_parallel_workers"] == 2 for p in found.points)
    assert KEY + MP not in found.points[0].settings and found.points[3].settings[KEY + MP] is True
    assert len(found.rounds.orders) == 2 and all(sorted(o) == [0, 1, 2, 3] for o in found.rounds.orders)
    assert sum(v.window.steps for v in found.rounds.visits) == calls["n"]
    assert {p.near for p in found.placed()} <= set(Near)
    assert found.index(2, True) == 3 and found.index(3, False) is None
    # the optimizer's schedule counts the sweep's steps: 4 settings x 2 rounds x 2 x (1 + 4)
    assert sweep.total_steps(cfg, 2) == 4 * 2 * 2 * (1 + cfg.verify.warmup_steps + 4)


def test_a_prepared_run_measures_its_source_beside_itself_in_the_same_rounds(smoke_dataset, tmp_path,
                                                                              monkeypatch):
    """perfstudy.run.remedy_rounds: setting 0 reads the prepared MindRecord, setting 1 the
    source's ImageFolder, both at the run's settings, every round; a source that moved is said,
    never measured (nothing is guessed)."""
    import json

    from perfstudy.data import prepare
    from perfstudy.data.dataset import load_manifest
    from perfstudy.data.sources import training_source
    from perfstudy.run import pipeline, remedy_rounds

    cfg = compose_run_config(["size=smoke", "data.prepared=true", "verify.min_steps=2",
                              "verify.max_steps=5", "verify.min_rounds=2", "verify.max_rounds=2"])
    path = prepare.prepare(smoke_dataset, prepare.Settings.from_config(cfg), tmp_path / "prepared")
    manifest = load_manifest(path)
    record = training_source(manifest)
    read = []
    real = pipeline.create_train_dataset
    monkeypatch.setattr(pipeline, "create_train_dataset",
                        lambda root, *args, **kw: read.append(root) or real(root, *args, **kw))
    settings = {"pipeline.num_parallel_workers": 1}
    found = remedy_rounds.run(_stand_in_step({"n": 0}), record, manifest, cfg, settings,
                              base_seed=3, first_index=10, training_wall_s=1000.0)
    assert found.skipped is None and found.rounds.settings == 2 and len(found.rounds.orders) == 2
    source_root = load_manifest(smoke_dataset)["root"]
    by_setting = {v.setting: read[i] for i, v in enumerate(found.rounds.visits)}
    assert by_setting == {0: record, 1: source_root} and found.source_root == source_root
    assert found.source_dataset_sha256 == load_manifest(smoke_dataset)["dataset_sha256"]
    moved = json.loads(path.read_text())
    moved["source_manifest"]["path"] = str(tmp_path / "gone" / "manifest.json")
    missing = remedy_rounds.run(_stand_in_step({"n": 0}), record, {**manifest, **moved}, cfg, settings,
                                base_seed=3, first_index=10, training_wall_s=1000.0)
    assert missing.rounds is None and "is not there" in missing.skipped


def test_a_plan_of_the_own_setting_alone_runs_no_rounds(tmp_path):
    """Every candidate settled, or out of reach, in an earlier run's rounds: the training runs
    no rounds (not one window), and the verification records what answered for them."""
    from types import SimpleNamespace

    from perfstudy.measure.rounds import Comparison
    from perfstudy.run import train
    from perfstudy.run.verify_record import Planned, Proposal, Reused

    cfg = compose_run_config(["size=smoke"])
    own = Planned("current", 0, {"pipeline.num_parallel_workers": 2}, "2 workers", 100.0, "cpu", True)
    far = Reused("1 worker", {"pipeline.num_parallel_workers": 1}, 150.0, "pipeline", False, "baseline",
                 Comparison(1, 3, 1.06, 0.84, 1.35, 0.95, "inconclusive", 0.1, 37), settled=False)
    asked = []

    def propose(run_dir, k):
        asked.append(k)
        return Proposal([own], reused=[far])

    # a train step that is no step: a window measured would fail on it (and on the source)
    found = train._verify(cfg, propose, SimpleNamespace(), "unused", tmp_path, 0, 60.0, 100.0)
    assert asked == [cfg.verify.candidates] and found.rounds is None and found.plan == [own]
    assert found.reused == [far] and found.wall_s == 0.0
