"""Analysis of real profiler output (tests/fixtures/cpu_demo: the default study on 2 CPUs,
trimmed by tests/fixtures/trim_profile.py): MindData queues, the op timeline, the Chrome
trace and the diagnosis the article's author reached by hand."""

import json
import shutil

import pandas as pd
import pytest
from conftest import REPO

from perfstudy.measure import minddata, timeline
from perfstudy.orchestrate import analyze

FIXTURES = REPO / "tests" / "fixtures" / "cpu_demo"


@pytest.fixture
def run(tmp_path, request):
    target = tmp_path / request.param
    shutil.copytree(FIXTURES / request.param, target)
    return target


def window(run_dir):
    return analyze.profiled_window(pd.read_csv(run_dir / "steps.csv"))


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_minddata_queues_show_the_baseline_signature(run):
    profile = minddata.load(run / "profile")
    ops = minddata.op_table(profile, window(run)).set_index("op_type")
    assert ops.loc["Map", "label"].startswith("Map #2 [RandomCropDecodeResize, RandomHorizontalFlip")
    assert ops.loc["Map", "num_workers"] == 1
    assert ops.loc["Map", "empty_ratio"] > 0.9  # the map's output queue is empty ...
    assert ops.loc["ImageFolder", "queue_usage"] > 0.9  # ... while its input is full
    assert ops.loc["Map", "cpu_pct"] > 50  # one worker busy decoding
    waits = minddata.iterator_waits(profile, window(run))
    assert waits.batches >= 6 and waits.median_ms > 1000  # the 8 profiled steps


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_an_operator_reads_as_the_profile_numbers_it_and_as_its_key_names_it(run):
    # pipeline.json with addresses (written since the factories): the profile's Map #2 is the
    # first map() of the code, map_1, which pipeline.workers.map_1 sizes
    nodes = json.loads((run / "profile" / "pipeline.json").read_text())
    addresses = {"Repeat": "repeat_1", "Batch": "batch_1", "Map": "map_1", "ImageFolder": "imagefolder_1"}
    for node in nodes:
        node["address"] = addresses.get(node["op_type"].removesuffix("Op").removesuffix("Dataset"))
    (run / "profile" / "pipeline.json").write_text(json.dumps(nodes))
    labels = minddata.op_table(minddata.load(run / "profile")).set_index("op_type")["label"]
    assert labels["Map"].startswith("Map #2 [RandomCropDecodeResize, ") and labels["Map"].endswith("] (map_1)")
    assert labels["Batch"] == "Batch #1 (batch_1)"


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_queue_series_is_tidy_and_on_the_host_clock(run):
    profile = minddata.load(run / "profile")
    queues = minddata.queue_series(profile)
    assert set(queues["op_type"]) == {"Batch", "Map", "ImageFolder"}
    assert (queues["size"] <= queues["capacity"]).all()
    start, end = window(run)
    inside = queues[(queues["time_s"] >= start) & (queues["time_s"] <= end)]
    assert len(inside) > 0.8 * len(queues)  # sampling times map onto the steps' clock
    host = minddata.host_cpu(profile, window(run))
    assert host.cores == 2 and 0 < host.host_busy_pct <= 100


@pytest.mark.parametrize("run", ["baseline", "tuned"], indirect=True)
def test_timeline_steps_match_the_host_timers(run):
    steps = pd.read_csv(run / "steps.csv")
    kernels = timeline.load_kernels(timeline.find_trace(run / "profile"))
    assert set(kernels["kind"]) == {"forward", "backward", "update"}
    tl = timeline.timeline_steps(kernels)
    joined = timeline.match_host(tl, steps)
    assert len(joined) == len(tl) >= 7
    assert list(joined["step"]) == sorted(joined["step"])
    assert set(joined["phase"]) == {"profiled"}  # the extra steps after the measured ones
    check = timeline.cross_check(joined)
    assert check.agrees is True and check.step_ms_median_rel_diff < 0.02
    assert check.tl_fwd_bwd_ms_median > 0 and check.tl_tail_ms_median > 0


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_cross_check_reports_a_disagreement(run):
    steps = pd.read_csv(run / "steps.csv")
    tl = timeline.timeline_steps(timeline.load_kernels(timeline.find_trace(run / "profile")))
    joined = timeline.match_host(tl, steps)
    joined["step_ms"] *= 1.25  # host timers that saw 25 % more than the kernels
    check = timeline.cross_check(joined)
    assert check.agrees is False
    assert "DISAGREE" in check.sentence


@pytest.mark.parametrize("run", ["baseline", "tuned"], indirect=True)
def test_chrome_trace_is_valid_json_with_complete_events(run):
    analyze.analyze_run(run)
    trace = json.loads((run / "trace.json").read_text())
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    counters = [e for e in events if e["ph"] == "C"]
    assert complete and counters
    for event in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(event)
        assert isinstance(event["ts"], float | int) and isinstance(event["dur"], float | int)
        assert event["dur"] >= 0
    assert {e["cat"] for e in complete} == {"host", "forward", "backward", "update", "data"}
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert "CPU kernels (MindSpore profiler)" in names and "MindData output queues" in names


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_baseline_is_diagnosed_as_the_article_did(run):
    result = analyze.analyze_run(run)
    assert result.bound == "input"
    assert result.input_bound.band == "highly"
    assert result.culprit.op_type == "Map"
    assert "RandomCropDecodeResize" in result.culprit.label
    assert result.culprit.num_workers == 1
    rec = result.recommendation
    assert rec.action == "set_workers" and rec.workers == 2  # all the CPUs there are
    assert "num_parallel_workers" in rec.sentence
    assert json.loads((run / "diagnosis.json").read_text())["bound"] == "input"
    effect = result.profiler_effect
    assert effect.steps == 8 and effect.measured_step_ms == pytest.approx(
        json.loads((run / "summary.json").read_text())["steady_step_ms"])
    assert len(pd.read_csv(run / "timeline_steps.csv")) >= 7


@pytest.mark.parametrize("run", ["tuned"], indirect=True)
def test_tuned_is_not_called_input_bound_when_the_cpu_is_full(run):
    result = analyze.analyze_run(run)
    assert result.bound in {"cpu", "compute"}
    assert result.cpu.saturated
    assert result.recommendation.action == "cannot_help"
    assert "No worker setting helps" in result.recommendation.sentence
    assert "decode less" in result.recommendation.sentence  # the culprit decodes


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_without_a_profile_analysis_still_writes_every_output(run):
    shutil.rmtree(run / "profile")
    (run / "profile").mkdir()
    summary = json.loads((run / "summary.json").read_text())
    summary["profile"] = {"profiler": "off", "dataset": False, "timeline": False}
    (run / "summary.json").write_text(json.dumps(summary))
    result = analyze.analyze_run(run)
    assert result.profiled is False and result.bound == "input"
    for name in ("pipeline_ops.csv", "queues.csv", "timeline_steps.csv", "trace.json"):
        assert (run / name).exists()


@pytest.mark.parametrize("run", ["baseline"], indirect=True)
def test_a_corrupt_profile_is_one_clear_error(run):
    (run / "profile" / "dataset" / "pipeline_profiling_0.json").write_text("{not json")
    with pytest.raises(minddata.ProfileFormatError, match="not readable JSON"):
        analyze.analyze_run(run)


def test_dataset_profiling_refuses_to_run_beside_autotune(tmp_path, monkeypatch):
    from perfstudy.common.config import compose_run_config
    from perfstudy.measure import profiling

    cfg = compose_run_config(["size=smoke", "profiler=light"])
    monkeypatch.setattr(profiling, "_autotune_enabled", lambda: True)
    runner = profiling.RunProfiler(cfg.profiler, tmp_path / "profile", 8, 1)
    with pytest.raises(profiling.ProfilerError, match="AutoTune"):
        runner.begin()


def test_profiler_off_still_leaves_a_profile_folder_with_its_settings(tmp_path):
    from perfstudy.common.config import compose_run_config
    from perfstudy.measure import profiling

    cfg = compose_run_config(["size=smoke", "profiler=off"])
    runner = profiling.RunProfiler(cfg.profiler, tmp_path / "profile", 8, 1)
    runner.begin()
    runner.step_begin(2)
    runner.step_end(7)
    runner.end_training()
    meta = runner.finish()
    assert meta.profiler == "off" and not meta.dataset and not meta.timeline and meta.window is None
    assert json.loads((tmp_path / "profile" / "profile.json").read_text())["profiler"] == "off"


@pytest.mark.parametrize("device, kinds", [("cpu", ["CPU"]), ("gpu", ["CPU", "GPU"]),
                                           ("ascend", ["CPU", "NPU"])])
def test_the_op_profiler_is_asked_for_the_devices_own_activities(tmp_path, monkeypatch, device, kinds):
    """The device group's activities reach MindSpore's profiler as built (a GPU run records its
    kernels, an Ascend run its tasks), read back from the arguments it was built with."""
    import mindspore.profiler as msprof

    from perfstudy.common.config import compose_run_config
    from perfstudy.measure import profiling

    built = {}
    monkeypatch.setattr(msprof, "profile", lambda **kwargs: built.update(kwargs) or "profiler")
    monkeypatch.setattr(msprof, "tensorboard_trace_handler", lambda **kwargs: kwargs)
    cfg = compose_run_config(["size=smoke", "profiler=full", f"device={device}"])
    runner = profiling.RunProfiler(cfg.profiler, tmp_path / "profile", 8, 1,
                                   tuple(cfg.device.profiler_activities))
    assert runner._make_op_profiler() == "profiler"
    assert [a.name for a in built["activities"]] == kinds
    assert built["start_profile"] is False
