"""The tools users have, on the same runs: MindSpore's own MindData analyzer (really run, on
real cpu_demo profiles), its answer in our terms, scored like ours, and AutoTune's setting."""

import json

import pandas as pd
from records import make_advice, make_diagnosis, make_summary, make_sweep, one_map_model

from perfstudy.common.records import to_dict
from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.decide import peers, scenarios, scorecard
from perfstudy.decide.claims import ClaimsFile
from perfstudy.decide.diagnosis import read_diagnosis
from perfstudy.measure import msanalyzer
from perfstudy.measure.nearbest import Near
from perfstudy.run.summary import read_summary

OPS = pd.DataFrame([
    {"op_id": 1, "label": "Batch #1", "config_key": None, "num_workers": 1},
    {"op_id": 2, "label": "Map #2 [PythonBurn]", "config_key": "pipeline.extra_transform_workers", "num_workers": 1},
    {"op_id": 3, "label": "Map #3 [Decode]", "config_key": "pipeline.num_parallel_workers", "num_workers": 1}])


def test_the_analyzers_sentences_become_an_operator_and_a_knob():
    assert msanalyzer.parse("Map(id=3)", "Map(id=3) is using 91.0% CPU per worker. Setting "
                            "num_parallel_workers>1 might bring extra performance.") == {
        "op_type": "Map", "op_id": 3, "knob": "num_parallel_workers", "workers": 2}
    assert msanalyzer.parse("Batch(id=1)", "Batch(id=1) has low CPU utilization per worker of 0.0% and "
                            "abnormal queue usage. Try increasing prefetch_size.")["knob"] == "prefetch_size"
    assert msanalyzer.parse("", "") == {"op_type": None, "op_id": None, "knob": None, "workers": None}
    workers = peers.analyzer({"tool": msanalyzer.TOOL, **msanalyzer.parse(
        "Map(id=3)", "Setting num_parallel_workers>1 might bring extra performance.")}, OPS)
    assert workers.operator == "Map #3 [Decode]" and workers.key == "pipeline.num_parallel_workers"
    assert workers.settings == {"pipeline.num_parallel_workers": 2} and workers.knob == "workers"
    said = msanalyzer.parse("Batch(id=1)", "Try increasing prefetch_size.")
    batch = peers.analyzer({"tool": msanalyzer.TOOL, **said}, OPS)
    assert batch.operator == "Batch #1" and batch.key is None and batch.advice == "increase prefetch_size"


def test_mindspores_analyzer_runs_on_the_article_baselines_real_profile(analysed):
    """On the cpu_demo baseline (the map at 1 worker, ~90 % busy), MindSpore's analyzer reads
    the same files and names Batch / prefetch_size; ours names the map: the claim is scored
    from those two readings, whatever they are."""
    diagnosis = read_diagnosis(analysed / "baseline")
    reading = diagnosis.peers.msanalyzer
    assert reading.error is None and reading.raw["warning"] and reading.raw["suggestion"]
    assert reading.raw["op_id"] is not None and reading.operator
    assert diagnosis.peers.ours.key == diagnosis.recommendation.culprit_key
    spec = ClaimsFile.of({"claims": [{"id": "c", "claim": "ours right, theirs not",
                                      "metric": "culprit_against_analyzer", "arm": "baseline",
                                      "truth": "pipeline.num_parallel_workers", "equals": "ours only"}]})

    class Arm:
        name, summary = "baseline", read_summary(analysed / "baseline")

    Arm.diagnosis = diagnosis
    card = scorecard.score(spec, [Arm])
    ours = diagnosis.culprit.config_key == "pipeline.num_parallel_workers"
    theirs = reading.key == "pipeline.num_parallel_workers"
    assert card.claims[0].passed == (ours and not theirs)
    assert "MindSpore's analyzer" in card.claims[0].detail


def test_an_analyzer_that_cannot_run_is_one_sentence_and_stops_nothing(tmp_path):
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset" / "pipeline_profiling_0.json").write_text("{not json")
    out = msanalyzer.read(tmp_path)
    assert "did not run" in out["error"] and out["tool"] == msanalyzer.TOOL
    assert peers.analyzer(out, OPS).advice == "did not run"
    assert "profiler off" in msanalyzer.read(tmp_path / "none")["error"]


def test_the_analyzer_is_scored_like_ours():
    sweep = make_sweep("pipeline.extra_transform_workers", {1: 1000.0, 2: 580.0}, rounds_=4)
    placed = sweep.placed()
    right = peers.analyzer({"tool": "x", "op_id": 2, "knob": "num_parallel_workers", "workers": 2}, OPS)
    found = scenarios.analyzer_score(right, sweep, placed, moved=True)
    assert found.right is True and found.near is Near.HOLDS
    batch = peers.analyzer({"tool": "x", "op_id": 1, "knob": "prefetch_size", "workers": None}, OPS)
    found = scenarios.analyzer_score(batch, sweep, placed, moved=True)
    assert found.right is False and found.near.startswith("unscored")
    # where the sweep does not move, sending the user to the swept operator is wrong
    assert scenarios.analyzer_score(right, sweep, placed, moved=False).right is False
    assert scenarios.analyzer_score(batch, sweep, placed, moved=False).right is True
    assert scenarios.analyzer_score(batch, sweep, placed, moved=None).right is None  # undecided


def test_autotunes_setting_is_named_by_the_runs_operators():
    summary = {"steady_step_ms": 500.0, "autotune": {"config_file": "autotune_0.json", "remark": "", "operators": [
        {"op": "MapOp", "op_id": 3, "num_parallel_workers": 2, "prefetch_size": 16},
        {"op": "BatchOp", "op_id": 1, "num_parallel_workers": 1, "prefetch_size": 2}]}}
    reading = peers.autotune(make_summary(summary), OPS, baseline_ms=1000.0)
    assert reading.settings == {"pipeline.num_parallel_workers": 2}
    assert reading.operator == "Map #3 [Decode]" and reading.speedup == 2.0
    assert peers.autotune(make_summary({"steady_step_ms": 1.0}), OPS) is None
    json.dumps(to_dict(reading))  # goes into diagnosis.json


def test_autotunes_op_ids_are_matched_to_the_one_pass_pipeline_by_type():
    """AutoTune's file numbers the tree the iterator ran (an epoch-control op on top): one more
    than the one-pass pipeline.json its arm writes (a real batch_loop AutoTune arm's ids)."""
    described = peers.described_ops([
        {"op_type": "Map", "operations": ["PythonLoop"], "config_key": "pipeline.batch_transform_workers",
         "num_parallel_workers": 1},
        {"op_type": "Batch", "operations": [], "num_parallel_workers": 1},
        {"op_type": "Map", "operations": ["RandomCropDecodeResize"], "num_parallel_workers": 1,
         "config_key": "pipeline.num_parallel_workers"},
        {"op_type": "ImageFolderDataset", "operations": [], "num_parallel_workers": 1,
         "config_key": "pipeline.reader_workers"}])
    summary = {"steady_step_ms": 1480.0, "autotune": {"config_file": "autotune_0.json", "remark": "", "operators": [
        {"op": "ImageFolderOp", "op_id": 4, "num_parallel_workers": 1, "prefetch_size": 2},
        {"op": "MapOp", "op_id": 3, "num_parallel_workers": 2, "prefetch_size": 2},
        {"op": "BatchOp", "op_id": 2, "num_parallel_workers": 1, "prefetch_size": 2},
        {"op": "MapOp", "op_id": 1, "num_parallel_workers": 1, "prefetch_size": 2}]}}
    reading = peers.autotune(make_summary(summary), described)
    assert reading.settings == {"pipeline.reader_workers": 1, "pipeline.num_parallel_workers": 2,
                                "pipeline.batch_transform_workers": 1}
    assert reading.operator == "Map #2 [RandomCropDecodeResize]"  # the one it changed
    assert reading.operators[0].startswith("ImageFolder #3")


def test_the_report_sets_the_tools_side_by_side_and_scores_them_against_the_arms():
    from perfstudy.present import peers as shown

    key = "pipeline.num_parallel_workers"

    class Arm:
        def __init__(self, name, workers, step, readings=None, autotune=None):
            self.name = name
            self.summary = make_summary({
                "steady_step_ms": step, "num_parallel_workers": {"effective": workers}, "arm": name, "run": name,
                "operator_settings": {key: workers}, "dataset_sha256": "d",
                **({"autotune": autotune} if autotune else {})})
            self.diagnosis = make_diagnosis(advisor=make_advice(one_map_model(key), pick={key: 2}),
                                            peers=readings) if readings else None

    ours = {"tool": peers.OURS, "operator": "Map #3 [Decode]", "key": key, "knob": "workers",
            "advice": f"set {key}=2", "settings": {key: 2}}
    theirs = peers.analyzer({"tool": peers.ANALYZER, "op_id": 1, "knob": "prefetch_size", "workers": None}, OPS)
    tuned = {"tool": peers.AUTOTUNE, "operator": "Map #3 [Decode]", "settings": {key: 2}, "step_ms": 650.0,
             "advice": "Map #3 [Decode]: 2 workers, prefetch 16"}
    arms = [Arm("baseline", 1, 1000.0, {"ours": ours, "msanalyzer": theirs}),
            Arm("workers_2", 2, 600.0),
            Arm("autotune", 1, 650.0, {"ours": ours, "autotune": tuned},
                autotune={"config_file": None, "remark": "", "operators": []})]
    side = shown.table(arms).set_index("arm")
    assert side.loc["baseline", "MindSpore's MindData analyzer: operator"] == "Batch #1"
    assert side.loc["autotune", "AutoTune: settled on, measured"].endswith("650 ms (1.54x the baseline)")
    scored = shown.against_sweep(arms).set_index("tool")
    assert scored.loc[peers.OURS, "culprit right"] == "yes"
    assert scored.loc[peers.OURS, f"within {pct(GAIN_THAT_MATTERS)} of the best"] == "yes"
    assert scored.loc[peers.ANALYZER, "culprit right"] == "NO"
    assert scored.loc[peers.ANALYZER, f"within {pct(GAIN_THAT_MATTERS)} of the best"].startswith("unscored")
    assert scored.loc[f"{peers.AUTOTUNE} (autotune)", f"within {pct(GAIN_THAT_MATTERS)} of the best"] == "yes"


def test_autotune_says_where_it_cannot_act_a_python_reader():
    """A GeneratorDataset is out of AutoTune's reach (it skips GeneratorOp): its reading says so
    beside the operators it tuned, so the report does not read its silence as 'fine'."""
    described = peers.described_ops([
        {"op_type": "Batch", "operations": [], "num_parallel_workers": 1},
        {"op_type": "GeneratorDataset", "operations": [], "num_parallel_workers": 1,
         "config_key": "pipeline.workers.generator_1", "python": True}])
    summary = {"steady_step_ms": 900.0, "autotune": {"config_file": "autotune_0.json", "remark": "",
                                                     "operators": [
        {"op": "BatchOp", "op_id": 0, "num_parallel_workers": 1, "prefetch_size": 2}]}}
    reading = peers.autotune(make_summary(summary), described)
    [reader] = [o for o in reading.operators if o.startswith("Generator #1")]
    assert "not tuned (AutoTune skips a GeneratorDataset" in reader
    assert "pipeline.workers.generator_1" not in (reading.settings or {})
