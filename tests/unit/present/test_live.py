"""The arm's live MLflow run (perfstudy.present.live) on a real SQLite store: opened under the
study's parent, fed without blocking, ended with the right status, completed by track_arm
without a twin or a doubled step; a store that fails never stops the training."""

import json

import pandas as pd
import pytest
from test_tracking import _fake_arm

from perfstudy.common.config import compose_run_config
from perfstudy.common.io import write_json
from perfstudy.measure.steptrace import StepTimes
from perfstudy.present import live, tracking


def _cfg(tmp_path, *extra):
    return compose_run_config(["size=smoke", f"paths.results={tmp_path}", "study=s", "arm=baseline",
                               "tracking.live_interval_s=0.05", "tracking.system_metrics_interval_s=60",
                               *extra])


@pytest.fixture
def study(tmp_path, mlflow_study):
    """The study's store, experiment and parent run (conftest.mlflow_study), and the ids file
    track_init writes."""
    uri, client, exp, parent = mlflow_study
    run_dir = tmp_path / "runs" / "s" / "baseline"
    run_dir.mkdir(parents=True)
    write_json(run_dir.parent / live.STUDY_IDS, {
        "tracking_uri": uri, "experiment_name": "perfstudy/s", "instance": "i1",
        "experiment_id": exp, "study_run_id": parent})
    return client, exp, parent, run_dir


def _steps(first: int, count: int, start: float = 1_700_000_000.0) -> list[StepTimes]:
    return [StepTimes(i, start + i * 0.1, start + i * 0.1 + 0.01, start + i * 0.1 + 0.08,
                      start + i * 0.1 + 0.1, 1.0 / (i + 1)) for i in range(first, first + count)]


def test_the_run_is_open_under_the_parent_while_training_and_ends_finished(study, tmp_path):
    client, exp, parent, run_dir = study
    opened = live.open_live(_cfg(tmp_path), run_dir)
    assert opened is not None
    run = client.get_run(opened.run_id)
    assert run.info.status == "RUNNING" and run.data.tags["mlflow.parentRunId"] == parent
    assert run.data.tags["mlflow.source.name"] == "scripts/train.py"
    assert run.data.tags["mlflow.source.git.commit"]
    assert live.read_receipt(run_dir).status == "RUNNING"
    for record in _steps(0, 5):
        opened.on_step(record)
    receipt = opened.end(live.status_of(None))
    assert receipt.status == "FINISHED" and receipt.logged_through_step == 4
    assert client.get_run(opened.run_id).info.status == "FINISHED"
    history = client.get_metric_history(opened.run_id, "step/step_ms")
    assert sorted(m.step for m in history) == [0, 1, 2, 3, 4]
    assert opened.end("FAILED") == receipt  # once: a later call changes nothing


def test_status_follows_how_the_training_ended():
    assert live.status_of(None) == "FINISHED"
    assert live.status_of(RuntimeError("x")) == "FAILED"
    assert live.status_of(KeyboardInterrupt()) == "KILLED"
    assert live.status_of(SystemExit(143)) == "KILLED"


def test_track_arm_completes_the_live_run_without_a_twin_or_a_doubled_step(study, tmp_path):
    client, exp, parent, _ = study
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    cfg = _cfg(tmp_path, "arm=tuned")
    opened = live.open_live(cfg, run_dir)
    records = [StepTimes(int(r.step), r.start_time_s, r.start_time_s + r.gap_ms / 1e3,
                         r.start_time_s + (r.gap_ms + r.fwd_bwd_ms) / 1e3,
                         r.start_time_s + r.step_ms / 1e3, r.loss) for r in steps.itertuples()]
    for record in records[:4]:  # the store confirmed steps 0-3; 4 and 5 only reached the files
        opened.on_step(record)
    opened.end("FINISHED")

    def _track():  # as scripts/track_arm.py does, with the training's receipt
        receipt = live.read_receipt(run_dir)
        return tracking.log_arm(
            client, exp, parent, study="s", arm="tuned", instance="i1", params={"a": 1},
            summary=summary, steps=steps, artifacts=[run_dir / "steps.csv"],
            results_fingerprint=tracking.fingerprint(run_dir / "steps.csv", run_dir / "summary.json"),
            live_run_id=receipt.run_id, live_through_step=receipt.logged_through_step)

    result = _track()
    assert result.run_id == opened.run_id and result.adopted_live and not result.created
    history = client.get_metric_history(opened.run_id, "step/step_ms")
    assert sorted(m.step for m in history) == list(range(6))  # each step once
    runs = client.search_runs([exp], "tags.`perfstudy.role` = 'arm'")
    assert [r.info.run_id for r in runs] == [opened.run_id]
    tags = runs[0].data.tags
    assert tags["perfstudy.results"] and tags["mlflow.parentRunId"] == parent
    assert tags["mlflow.source.git.commit"] == "abc"  # the summary's commit, the trained code's
    assert runs[0].info.status == "FINISHED"
    again = _track()  # tracking forced again
    assert again.run_id == opened.run_id and not again.created
    assert len(client.get_metric_history(opened.run_id, "step/step_ms")) == 6


def test_a_store_that_fails_stops_live_logging_but_never_the_training(study, tmp_path):
    client, exp, _, run_dir = study
    opened = live.open_live(_cfg(tmp_path), run_dir)

    def _refuse(*args, **kwargs):
        raise ConnectionError("the server went away")

    opened.client.log_batch = _refuse
    opened.client.set_terminated = _refuse
    for record in _steps(0, 50):
        opened.on_step(record)  # never raises, never waits
    opened._stop.wait(5)  # three failed sends stop the pump
    receipt = opened.end("FINISHED")
    assert receipt.logged_through_step == -1  # nothing confirmed: track_arm logs every step
    assert json.loads((run_dir / live.LIVE_FILE).read_text())["status"] == "FINISHED"


def test_a_run_left_running_by_a_killed_training_is_marked_killed_by_the_next(study, tmp_path):
    client, _, _, run_dir = study
    first = live.open_live(_cfg(tmp_path), run_dir)  # then SIGKILL: no end() runs
    first._stop.set()
    second = live.open_live(_cfg(tmp_path), run_dir)
    assert client.get_run(first.run_id).info.status == "KILLED"
    assert live.read_receipt(run_dir).run_id == second.run_id
    second.end("FINISHED")


def test_no_live_run_without_the_study_ids_or_a_store(tmp_path):
    run_dir = tmp_path / "runs" / "s" / "baseline"
    run_dir.mkdir(parents=True)
    (run_dir / live.LIVE_FILE).write_text("{}")  # an earlier training's receipt
    assert live.open_live(_cfg(tmp_path), run_dir) is None
    assert not (run_dir / live.LIVE_FILE).exists()  # void for the training that starts now
    write_json(run_dir.parent / live.STUDY_IDS, {
        "tracking_uri": "http://127.0.0.1:9", "experiment_name": "e", "instance": "i",
        "experiment_id": "1", "study_run_id": "p"})
    assert live.open_live(_cfg(tmp_path), run_dir) is None  # refused port: one warning, no run
    assert live.open_live(_cfg(tmp_path, "tracking.live=false"), run_dir) is None


def test_bad_live_intervals_are_one_sentence(tmp_path):
    from perfstudy.common.config import ConfigError

    with pytest.raises(ConfigError, match="tracking.live_interval_s"):
        _cfg(tmp_path, "tracking.live_interval_s=0")


def test_the_job_benchmark_becomes_metrics(tmp_path):
    from perfstudy.present import mlflow_fields

    bench = tmp_path / "b.tsv"
    pd.DataFrame([{"s": 52.3, "h:m:s": "0:00:52", "max_rss": 1866.5, "max_vms": 5814.5,
                   "max_uss": 1805.6, "max_pss": 1834.9, "io_in": 0.2, "io_out": 2.2,
                   "mean_load": 122.5, "cpu_time": 64.7}]).to_csv(bench, sep="\t", index=False)
    found = {m.key: m.value for m in mlflow_fields.job_metrics(bench, 1000)}
    assert found == {"job_wall_s": 52.3, "job_max_rss_mb": 1866.5, "job_max_pss_mb": 1834.9,
                     "job_cpu_time_s": 64.7, "job_mean_load_pct": 122.5}
    assert mlflow_fields.job_metrics(tmp_path / "missing.tsv", 1000) == []


def test_a_run_shorter_than_the_system_metrics_interval_still_has_its_system_metrics(tmp_path):
    """MLflow's monitor collects, waits its interval, then logs: a run that ends within one
    interval (an arm whose rounds an earlier run answered runs seconds) would log none. Its
    last sample is logged when the run ends."""
    import time

    from mlflow.tracking import MlflowClient

    from perfstudy.present.live import _finish_system, _system_monitor

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    run = client.create_run(client.create_experiment("short"))
    monitor = _system_monitor(run.info.run_id, uri, 10.0)
    time.sleep(0.5)  # well within the 10 s interval: the monitor has logged nothing
    assert not [k for k in client.get_run(run.info.run_id).data.metrics if k.startswith("system/")]
    _finish_system(monitor)
    assert "system/cpu_utilization_percentage" in client.get_run(run.info.run_id).data.metrics


def test_a_gpu_the_device_group_asks_for_and_mlflow_cannot_sample_is_named():
    """device=gpu asks MLflow's monitor for the GPU too; where its GPU monitor did not start
    (no nvidia-ml-py, no driver: this host) the run's log says so, naming the fix."""
    from types import SimpleNamespace

    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    from perfstudy.present.live import device_monitors_missing

    class GPUMonitor:  # what MLflow adds where nvidia-ml-py finds a driver
        pass

    here = SystemMetricsMonitor("0" * 32, sampling_interval=10, samples_before_logging=1)
    assert device_monitors_missing(here, ("gpu",)) == ["gpu"]  # no GPU on this host
    assert device_monitors_missing(here, ()) == []
    with_gpu = SimpleNamespace(monitors=[*here.monitors, GPUMonitor()])
    assert device_monitors_missing(with_gpu, ("gpu",)) == []
