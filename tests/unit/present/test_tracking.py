"""MLflow logging on a real SQLite store: runs, params, metrics, artifacts, no twins."""

import json
from dataclasses import replace

import pandas as pd
import pytest
from records import as_dict, edited, make_diagnosis, make_summary

from perfstudy.common.config import compose_run_config, flatten, to_container
from perfstudy.present import mlflow_fields, mlflow_store, tracking
from perfstudy.run.autotune import Tuned


def _fake_arm(tmp_path, arm, step_ms=100.0):
    run_dir = tmp_path / "runs" / "s" / arm
    run_dir.mkdir(parents=True)
    steps = pd.DataFrame({
        "step": range(6), "phase": ["compile"] + ["measured"] * 5,
        "gap_ms": [1.0] * 6, "fwd_bwd_ms": [step_ms - 11] * 6, "tail_ms": [10.0] * 6,
        "step_ms": [step_ms] * 6, "loss": [1.0, 0.9, 0.8, 0.7, 0.6, 0.5],
        "images_per_s": [32 / step_ms * 1e3] * 6,
        "start_time_s": [1_700_000_000 + i * step_ms / 1e3 for i in range(6)],
    })
    steps.to_csv(run_dir / "steps.csv", index=False)
    spread = {"median": step_ms, "p10": step_ms, "p90": step_ms, "mean": step_ms}
    summary = make_summary({
        "study": "s", "arm": arm, "run": arm, "size": "smoke", "steady_step_ms": step_ms, "gap_share": 0.01,
        "images_per_s": 320.0, "steps_measured": 5, "steps_excluded": 1, "first_step_ms": 5000.0,
        "floor_ms": 90.0, "steady_vs_floor": step_ms / 90, "step_ms": spread, "gap_ms": spread,
        "fwd_bwd_ms": spread, "tail_ms": spread,
        "num_parallel_workers": {"requested": 12, "effective": 2},
        "calibration": {"compute_wall_ms": 90.0, "operators": [
            {"config_key": "pipeline.workers.map_2", "operation": "map_2 [Jitter]", "per_batch": False,
             "workers_now": 1, "multiprocessing_now": False, "points": [],
             "gil": {"gil_ms_per_batch": 25.0, "wall_ms_per_batch_alone": 100.0,
                     "wall_ms_per_batch_beside": 150.0, "free": 0.5, "rounds": 3}}]},
        "git_sha": "abc", "config_hash": "h",
        "dataset_sha256": "d", "mindspore_version": "2.10.0",
        "environment": {"cpu_count": 2, "cpu_model": "cpu"},
    })
    (run_dir / "summary.json").write_text(json.dumps(as_dict(summary)))
    return run_dir, steps, summary


def _log(client, exp, parent, run_dir, steps, summary):
    cfg = compose_run_config(["size=smoke"])
    return tracking.log_arm(
        client, exp, parent, study="s", arm=summary.arm, instance="i1",
        params=flatten(to_container(cfg)), summary=summary, steps=steps,
        artifacts=[run_dir / "steps.csv", run_dir / "summary.json"],
        results_fingerprint=tracking.fingerprint(run_dir / "steps.csv", run_dir / "summary.json"))


@pytest.fixture
def store(mlflow_study):
    """The study's store (conftest.mlflow_study) as these tests use it: client, experiment, parent."""
    return mlflow_study[1:]


def _active_arm_runs(client, exp):
    return client.search_runs([exp], "tags.`perfstudy.role` = 'arm'")


def test_default_store_is_sqlite_under_results(tmp_path):
    assert mlflow_store.default_uri(tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow/mlflow.db"
    assert mlflow_store.resolve_uri(None, tmp_path).startswith("sqlite:///")
    assert mlflow_store.resolve_uri("http://x:5000", tmp_path) == "http://x:5000"


def test_environment_uri_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://elsewhere:5000")
    assert mlflow_store.resolve_uri("http://x:5000", tmp_path) == "http://elsewhere:5000"


def test_arm_is_a_child_run_with_params_metrics_tags_and_artifacts(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    result = _log(client, exp, parent, run_dir, steps, summary)
    run = client.get_run(result.run_id)
    assert run.data.tags["mlflow.parentRunId"] == parent
    assert run.info.status == "FINISHED"
    for tag in ("perfstudy.study", "perfstudy.arm", "git_sha", "config_hash", "dataset_sha256",
                "mindspore_version", "cpu_count"):
        assert tag in run.data.tags
    assert run.data.params["trainer.steps"] == "8"
    assert run.data.metrics["steady_step_ms"] == 100.0
    assert run.data.metrics["probe_workers_map_2_gil_share"] == 0.25  # the measured GIL share
    assert len(client.get_metric_history(result.run_id, "step/step_ms")) == 6
    names = {a.path for a in client.list_artifacts(result.run_id)}
    assert names == {"steps.csv", "summary.json"}
    assert (tmp_path / "mlflow" / "artifacts").is_dir()


def test_logging_the_same_results_again_updates_the_same_run(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    first = _log(client, exp, parent, run_dir, steps, summary)
    second = _log(client, exp, parent, run_dir, steps, summary)
    assert second.run_id == first.run_id and not second.created
    assert len(_active_arm_runs(client, exp)) == 1
    assert len(client.get_metric_history(first.run_id, "step/step_ms")) == 6
    assert mlflow_store.ensure_study_run(client, exp, "s", "i1", {}) == parent


def test_retrained_arm_replaces_its_run_never_a_twin(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    first = _log(client, exp, parent, run_dir, steps, summary)
    steps2 = steps.assign(step_ms=steps["step_ms"] * 2)
    steps2.to_csv(run_dir / "steps.csv", index=False)
    second = _log(client, exp, parent, run_dir, steps2, summary)
    assert second.run_id != first.run_id
    assert second.replaced == [first.run_id]
    runs = _active_arm_runs(client, exp)
    assert [r.info.run_id for r in runs] == [second.run_id]


def test_unreachable_server_is_one_sentence():
    with pytest.raises(mlflow_store.TrackingError) as info:
        mlflow_store.client_for("http://127.0.0.1:9")
    assert "cannot be reached" in str(info.value)
    assert "\n" not in str(info.value)


def test_another_results_folder_never_touches_this_folders_runs(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    mine = _log(client, exp, parent, run_dir, steps, summary)
    other_parent = mlflow_store.ensure_study_run(client, exp, "s", "i2", {})
    assert other_parent != parent
    other_steps = steps.assign(step_ms=steps["step_ms"] * 3)  # other results, same study and arm
    other_steps.to_csv(run_dir / "steps.csv", index=False)
    cfg = compose_run_config(["size=smoke"])
    theirs = tracking.log_arm(
        client, exp, other_parent, study="s", arm="tuned", instance="i2",
        params=flatten(to_container(cfg)), summary=summary, steps=other_steps, artifacts=[],
        results_fingerprint=tracking.fingerprint(run_dir / "steps.csv", run_dir / "summary.json"))
    assert theirs.created and theirs.replaced == []
    runs = {r.info.run_id: r for r in _active_arm_runs(client, exp)}
    assert set(runs) == {mine.run_id, theirs.run_id}
    assert runs[mine.run_id].data.tags["mlflow.parentRunId"] == parent


def test_study_instance_is_made_once_per_folder(tmp_path):
    first = mlflow_store.study_instance(tmp_path / "runs" / "s")
    assert mlflow_store.study_instance(tmp_path / "runs" / "s") == first
    assert mlflow_store.study_instance(tmp_path / "other") != first


def test_sqlite_writers_take_turns(tmp_path):
    import subprocess
    import sys

    uri = mlflow_store.default_uri(tmp_path)
    probe = ("import fcntl, sys\n"
             "with open(sys.argv[1], 'a') as f:\n"
             "    try:\n        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "    except BlockingIOError:\n        sys.exit(3)\n")
    lock_file = tmp_path / "mlflow" / "mlflow.db.lock"
    with mlflow_store.store_lock(uri):
        held = subprocess.run([sys.executable, "-c", probe, str(lock_file)])
    free = subprocess.run([sys.executable, "-c", probe, str(lock_file)])
    assert (held.returncode, free.returncode) == (3, 0)
    with mlflow_store.store_lock("http://127.0.0.1:5000"):  # a server needs no lock file
        pass


def test_a_new_study_run_waits_scheduled_not_running(store):
    client, exp, parent = store
    assert client.get_run(parent).info.status == "SCHEDULED"


def test_repeats_of_an_arm_are_separate_child_runs(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    first = _log(client, exp, parent, run_dir, steps, summary)
    second_dir, steps2, summary2 = _fake_arm(tmp_path / "r2", "tuned", step_ms=110.0)
    summary2 = replace(summary2, run="tuned.r2", repeat=2, seed=11)
    second = _log(client, exp, parent, second_dir, steps2, summary2)
    assert second.created and second.replaced == []
    runs = {r.data.tags["perfstudy.run"]: r for r in _active_arm_runs(client, exp)}
    assert set(runs) == {"tuned", "tuned.r2"}
    assert runs["tuned.r2"].data.tags["perfstudy.repeat"] == "2"
    assert runs["tuned.r2"].data.tags["seed"] == "11"
    assert runs["tuned"].info.run_id == first.run_id


def test_the_ui_hint_opens_the_runs_in_the_model_training_view():
    local = mlflow_store.ui_hint("sqlite:////x/mlflow.db", "3")
    assert local == ("MLflow: mlflow ui --backend-store-uri sqlite:////x/mlflow.db --port 5000, then "
                     "open http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning")
    assert mlflow_store.ui_hint("http://host:5000/", "7") == (
        "MLflow: http://host:5000/#/experiments/7/runs?workflowType=machine_learning")
    assert mlflow_store.ui_hint("http://host:5000", None) == "MLflow: http://host:5000"


def test_an_experiment_made_before_is_marked_as_model_training(tmp_path):
    uri = mlflow_store.default_uri(tmp_path)
    client = mlflow_store.client_for(uri)
    old = client.create_experiment("perfstudy/old", artifact_location=mlflow_store.artifact_root(uri))
    assert "mlflow.experimentKind" not in client.get_experiment(old).tags
    assert mlflow_store.ensure_experiment(client, "perfstudy/old", uri) == old
    assert client.get_experiment(old).tags["mlflow.experimentKind"] == "custom_model_development"


def test_an_arm_run_spans_its_training_and_describes_its_verdict(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "tuned")
    summary = replace(summary, precompile_s=2.0)
    run = client.get_run(_log(client, exp, parent, run_dir, steps, summary).run_id)
    assert run.info.start_time == int((1_700_000_000 - 2.0) * 1000)  # from the graph compile
    assert run.info.end_time == int((1_700_000_000 + 5 * 0.1 + 0.1) * 1000)  # to the last step's end
    diagnosis = make_diagnosis(bound="cpu", headline="CPU-bound: the CPUs are full.",
                               recommendation={"sentence": "Keep the pipeline as it is."})
    text = mlflow_fields.run_description(summary, diagnosis)
    assert text.startswith("**cpu-bound.** CPU-bound: the CPUs are full.")
    assert "**Recommendation:** Keep the pipeline as it is." in text
    assert "Steady step 100 ms" in text and mlflow_fields.run_description(summary, None).startswith("Steady")


def test_an_autotune_arm_is_tagged_with_the_workers_it_chose(tmp_path, store):
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "autotune")
    summary = replace(summary, autotune=Tuned("/x/autotune_0.json", "", [], map_workers=2))
    run = client.get_run(_log(client, exp, parent, run_dir, steps, summary).run_id)
    assert run.data.tags["perfstudy.autotune_map_workers"] == "2"


def test_each_arm_logs_its_dataset_once_as_an_mlflow_input(tmp_path, store):
    """The UI's Dataset column: name, digest (the sha256, as far as MLflow stores it), source,
    context train; the whole sha256 as an input tag; logged again, still one input."""
    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "baseline")
    summary = edited(summary, dataset_sha256="ab" * 32,
                     dataset={"root": str(tmp_path / "data" / "photos_vga_160")})
    first = _log(client, exp, parent, run_dir, steps, summary)
    _log(client, exp, parent, run_dir, steps, summary)
    inputs = client.get_run(first.run_id).inputs.dataset_inputs
    assert len(inputs) == 1
    dataset = inputs[0].dataset
    assert dataset.name == "photos_vga_160" and dataset.digest == ("ab" * 32)[:mlflow_fields.DIGEST_CHARS]
    assert "photos_vga_160" in dataset.source
    tags = {t.key: t.value for t in inputs[0].tags}
    assert tags == {"mlflow.data.context": "train", "perfstudy.dataset_sha256": "ab" * 32}


def test_a_sweep_run_logs_each_settings_step_ratio_and_place(tmp_path, store):
    """A truth run's sweep in MLflow: per setting (step = its index) the median step and the
    ratio to the fastest with its interval; its place against the best as a tag."""
    from records import make_sweep

    client, exp, parent = store
    run_dir, steps, summary = _fake_arm(tmp_path, "s_sweep")
    summary = replace(summary, sweep=make_sweep("pipeline.reader_workers", {1: 1000.0, 2: 500.0}))
    run = client.get_run(_log(client, exp, parent, run_dir, steps, summary).run_id)
    history = client.get_metric_history(run.info.run_id, "sweep/vs_fastest")
    assert sorted((m.step, round(m.value, 6)) for m in history) == [(0, 2.0), (1, 1.0)]
    assert run.data.metrics["sweep/rounds"] == 6
    assert run.data.tags["perfstudy.sweep.0"] == "pipeline.reader_workers=1: does not hold"
    assert run.data.tags["perfstudy.sweep.1"] == "pipeline.reader_workers=2: holds"
