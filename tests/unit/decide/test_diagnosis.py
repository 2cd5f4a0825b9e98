"""The verdict rules on hand-made numbers: bands, the queue rule along the chain, CPU, advice."""

import math

import pandas as pd
import pytest
from records import edited, make_summary

from perfstudy.decide import diagnosis
from perfstudy.measure.minddata import HostCpu


def ops_frame(usages: list[tuple[str, float, float]], workers: int = 1, keys=None,
              operations: str = "") -> pd.DataFrame:
    """Chain consumer -> leaf: (type, output queue usage, cpu % per worker) per op."""
    rows = []
    for op_id, (op_type, usage, cpu) in enumerate(usages):
        rows.append({"op_id": op_id, "op_type": op_type, "label": f"{op_type} #{op_id}",
                     "num_workers": workers if op_type == "Map" else 1,
                     "operations": operations if op_type == "Map" else "",
                     "child_id": op_id + 1 if op_id + 1 < len(usages) else None,
                     "capacity": 16, "queue_usage": usage, "empty_ratio": 1.0 if usage == 0 else 0.0,
                     "full_ratio": 0.0, "cpu_pct": cpu * (workers if op_type == "Map" else 1),
                     "cpu_pct_per_worker": cpu, "samples": 10,
                     "config_key": (keys or {}).get(op_id)})
    return pd.DataFrame(rows)


def summary(gap_share=0.6, steady=4000.0, cpu_floor=2400.0, binding="input", workers=1, cores=2,
            pipeline_wall=3900.0, compute=1300.0):
    return make_summary({
        "study": "s", "arm": "a", "gap_share": gap_share, "steady_step_ms": steady,
        "gap_ms": {"mean": gap_share * steady}, "cpu_floor_ms": cpu_floor, "binding_floor": binding,
        "steady_vs_floor": steady / max(cpu_floor, pipeline_wall),
        "input_floor_ms": pipeline_wall, "compute_floor_ms": compute, "steps_measured": 5,
        "num_parallel_workers": {"effective": workers, "cpu_count": cores, "requested": None},
        "calibration": {"pipeline_wall_ms": pipeline_wall, "pipeline_cpu_ms": 0.95 * pipeline_wall,
                        "compute_wall_ms": compute, "compute_cpu_ms": 1.8 * compute},
        "dataset": {"total_bytes": 160 * 3.9e6, "num_images": 160, "mean_megapixels": 16.0,
                    "bounded_megapixels": 0.017328},
        "image_size": 32, "queue_capacity_batches": 4.0, "warmup_steps": 1,
    })


def steps(compute_ms=1300.0, n=5):
    return pd.DataFrame({"phase": ["measured"] * n, "fwd_bwd_ms": [compute_ms * 0.9] * n,
                         "tail_ms": [compute_ms * 0.1] * n})


@pytest.mark.parametrize(("share", "band"), [(0.8, "highly"), (0.2, "highly"), (0.19, "moderately"),
                                             (0.05, "moderately"), (0.049, "not"), (0.0, "not")])
def test_tensorflow_bands(share, band):
    assert diagnosis.input_bound_band(share) == band


def test_queue_rule_blames_the_op_between_a_full_and_an_empty_queue():
    ops = ops_frame([("Repeat", float("nan"), 0), ("Batch", 0.0, 0), ("Map", 0.0, 95),
                     ("ImageFolder", 0.96, 1)])
    culprit = diagnosis.find_culprit(ops)
    assert culprit.op_id == 2 and culprit.rule == "queue rule"
    assert culprit.input_queue_usage == pytest.approx(0.96)


def test_queue_rule_looks_along_the_whole_chain():
    # A slow second map: the first map's queue is full, the second's empty, the batch's empty.
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 1), ("Map", 1.0, 2), ("ImageFolder", 0.6, 0)])
    assert diagnosis.find_culprit(ops).op_id == 1


def test_leaf_rule_when_every_queue_is_empty():
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 5), ("ImageFolder", 0.02, 3)])
    culprit = diagnosis.find_culprit(ops)
    assert culprit.op_id == 2 and culprit.rule.startswith("leaf rule")


def test_no_culprit_when_queues_are_full():
    ops = ops_frame([("Batch", 0.9, 0), ("Map", 0.9, 5), ("ImageFolder", 0.9, 3)])
    assert diagnosis.find_culprit(ops) is None


def test_input_bound_baseline_gets_the_map_and_a_worker_count():
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 95), ("ImageFolder", 0.96, 1)])
    result = diagnosis.diagnose(summary(), steps(1300), ops, HostCpu(host_busy_pct=60.0))
    assert result.bound == "input"
    assert result.culprit.label == "Map #1" and result.culprit.agrees_with_queue_rule
    rec = result.recommendation
    assert rec.action == "set_workers" and rec.workers == 2  # MindSpore caps at 2 CPUs
    assert rec.sentence.startswith("Set pipeline.num_parallel_workers=2: predicted")
    assert rec.predicted_step_ms < rec.predicted_now_ms
    assert result.advisor.pick == rec.settings  # one answer
    assert result.advisor.pick_is_recommendation is True


def test_enough_cores_gives_the_smallest_count_near_the_best():
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 95), ("ImageFolder", 0.96, 1)])
    result = diagnosis.diagnose(summary(cores=16, compute=1000), steps(1000), ops, HostCpu(host_busy_pct=20.0))
    # the map's 3900 ms per batch over w workers meets the network's 1000 ms at w = 4
    assert result.recommendation.workers == 4
    assert "pipeline.num_parallel_workers=4" in result.recommendation.sentence


def test_saturated_cpu_says_no_worker_setting_helps_and_what_would():
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 90), ("ImageFolder", 0.96, 1)], workers=2,
                    operations="RandomCropDecodeResize, Normalize")
    s = summary(gap_share=0.12, steady=2500, cpu_floor=2400, binding="cpu", workers=2,
                pipeline_wall=1900, compute=700)
    result = diagnosis.diagnose(s, steps(2200), ops, HostCpu(host_busy_pct=97.0))
    assert result.bound == "cpu"
    rec = result.recommendation
    assert rec.action == "cannot_help" and rec.culprit_kind == "decode"
    assert "No worker setting helps" in rec.sentence and "the CPUs are full" in rec.sentence
    assert "16.00 megapixels per image" in rec.sentence  # the source size, with what it would give
    # a 4:3 source at a 114 px short side (its smallest crop is not upsampled to 32 px): 0.017 MP
    assert "prepared at a bounded resolution (0.017 MP" in rec.sentence
    assert rec.prepared_prediction.megapixels_prepared == pytest.approx(152 * 114 / 1e6)
    assert result.headline.startswith("CPU-bound: pipeline and network together keep the 2 CPUs busy")
    assert "moderately input-bound" in result.headline
    # input-bound by the bands: the culprit is the slowest operator, not one found by its swing
    assert rec.culprit_swing is None and result.headline.endswith("Map #1 is the slowest operator.")


def test_cpu_bound_names_the_operator_whose_setting_moves_the_step():
    # mindcv's recipe with resnet50 (run 4): 2 decoding threads, the step waits 3.9 % of the time,
    # CPU-bound; 1 thread measured 1.5x slower: the map sets the step though nothing waits
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 90), ("ImageFolder", 0.96, 1)], workers=2,
                    operations="RandomCropDecodeResize, Normalize")
    s = summary(gap_share=0.039, steady=2640, cpu_floor=2600, binding="cpu", workers=2,
                pipeline_wall=2200, compute=700)
    result = diagnosis.diagnose(s, steps(2400), ops, HostCpu(host_busy_pct=97.0))
    rec = result.recommendation
    assert result.bound == "cpu" and rec.action == "none"
    assert result.culprit.label == "Map #1" and rec.culprit_kind == "decode"
    swing = rec.culprit_swing
    assert swing.slowest == {"pipeline.num_parallel_workers": 1} and swing.swing > 0.10
    assert swing.slowest_ms > 1.4 * swing.fastest_ms
    assert "its setting moves the step (pipeline.num_parallel_workers=1: predicted" in rec.sentence
    assert result.headline.endswith("Map #1 is the operator whose setting moves it.")
    assert "decode less" in rec.sentence


@pytest.mark.parametrize("map_cpu_pct", [10, 30])
def test_cpu_bound_by_the_network_names_no_operator(map_cpu_pct):
    # the network fills the CPUs; the map is light: no setting of it moves the step 10 %
    ops = ops_frame([("Batch", 0.9, 0), ("Map", 0.9, map_cpu_pct), ("ImageFolder", 0.96, 1)], workers=2,
                    operations="Rescale, HWC2CHW")
    s = summary(gap_share=0.01, steady=2500, cpu_floor=2450, binding="cpu", workers=2,
                pipeline_wall=300, compute=2300)
    result = diagnosis.diagnose(s, steps(2450), ops, HostCpu(host_busy_pct=97.0))
    assert result.bound == "cpu" and result.advisor.now_binding == "cpu"
    assert result.culprit is None and result.recommendation.culprit_swing is None
    assert "moves" not in result.headline


def test_a_busy_host_does_not_decide_when_a_setting_would_help():
    # The user's case: host 94 % busy, yet one worker of a waiting map binds the step.
    ops = ops_frame([("Batch", 0.0, 0), ("Map", 0.0, 0.4), ("Map", 1.0, 2), ("ImageFolder", 0.6, 0)],
                    keys={1: "pipeline.extra_transform_workers", 2: "pipeline.num_parallel_workers"})
    s = summary(gap_share=0.3, steady=400, cpu_floor=190, binding="input", workers=1,
                pipeline_wall=400, compute=100)
    result = diagnosis.diagnose(s, steps(100), ops, HostCpu(host_busy_pct=94.0))
    rec = result.recommendation
    assert result.culprit.op_id == 1 and rec.culprit_kind == "waits"
    assert rec.action == "set_workers" and rec.changes == {"pipeline.extra_transform_workers": 2}
    assert result.bound == "input" and "no worker setting" not in result.headline


def test_not_input_bound_has_no_culprit_even_with_an_empty_map_queue():
    # Tuned runs: the batch op pulls rows eagerly, so the map's queue is empty though nobody waits.
    ops = ops_frame([("Batch", 0.5, 0), ("Map", 0.0, 90), ("ImageFolder", 0.96, 1)])
    result = diagnosis.diagnose(summary(gap_share=0.01, steady=2000, cpu_floor=1500, pipeline_wall=1850,
                                        compute=1980, cores=8), steps(1980), ops, HostCpu(host_busy_pct=70.0))
    assert result.culprit is None
    assert result.bound == "compute"
    assert result.recommendation.action == "none"
    assert "the network's compute" in result.recommendation.sentence


def test_a_window_faster_than_the_input_floor_gets_no_verdict():
    # 12 steps served from batches buffered at start-up: 435 ms against a 483 ms pipeline alone
    # the 2 steps before the window took 2898 ms: 6 batches made at 483 ms, 2 consumed
    s = edited(summary(gap_share=0.3, steady=435, pipeline_wall=483, compute=150, cpu_floor=300),
               before_window_ms=2898.0, first_measured_step=2)
    result = diagnosis.diagnose(s, steps(150), None)
    rec = result.recommendation
    assert result.bound == "not_steady" and rec.action == "not_steady"
    # 4 buffered batches, each step drains 483 - 150 = 333 ms: 6 steps; 2 + 6 + 10 = 18
    assert rec.validity.drain_steps == 6 and rec.validity.steps_needed == 18
    assert "trainer.steps >= 18" in rec.sentence
    assert result.headline.startswith("No verdict")


def test_a_window_that_outlasts_any_buffer_is_steady_whatever_the_floor_reads():
    # mindcv's map in 2 processes: 28 steps at 1371 ms against a pipeline-alone reading of 1831
    # ms, with 0.1 batch buffered before the window: the reading is off, not the window
    s = edited(summary(gap_share=0.25, steady=1371, pipeline_wall=1831, compute=946, cpu_floor=1300),
               before_window_ms=3839.0, first_measured_step=2, steps_measured=28)
    check = diagnosis.decide(s, diagnosis.advise(s, None), "highly", 946.0).validity
    assert check.steady and check.floor_suspect
    assert "the window is steady and the pipeline-alone reading is the one off" in check.sentence
    # the same window of 5 steps could have been served from the buffer: no verdict
    short = diagnosis.decide(edited(s, steps_measured=5, before_window_ms=30000.0),
                             diagnosis.advise(s, None), "highly", 946.0).validity
    assert not short.steady and short.steps_needed > 2 + 5


def test_without_a_verdict_nothing_names_a_second_setting():
    # the pipeline alone needs 3900 ms, the network 1300: the model would pick 2 workers, but the
    # window (2000 ms) was served from a buffer, so no verdict: the pick is a labelled what-if
    s = summary(gap_share=0.05, steady=2000, pipeline_wall=3900, compute=1300)
    result = diagnosis.diagnose(s, steps(1300), None)
    rec, advice = result.recommendation, result.advisor
    assert rec.action == "not_steady" and rec.settings == advice.now
    assert advice.pick != rec.settings  # the model's what-if differs ...
    assert advice.pick_is_recommendation is False  # ... and says it is no recommendation
    assert advice.sentence.startswith("What-if for information only, not a recommendation")
    assert "for information only" in advice.role
    from perfstudy.present import mlflow_fields
    tags = mlflow_fields.diagnosis_tags(result)
    assert "perfstudy.advisor_pick_workers" not in tags
    assert tags["perfstudy.advisor"].startswith("What-if for information only")


def test_steps_to_a_steady_window_come_from_the_time_before_it():
    # the pipeline ran 3113 ms before the window (step 0 slow, one warm-up step) at 313 ms per
    # batch: ~9.9 batches made, 2 consumed, 7.9 buffered; each step drains 313 - 270 = 43 ms
    s = edited(summary(gap_share=0.02, steady=282, pipeline_wall=313, compute=270, cpu_floor=200),
               before_window_ms=3113.0, first_measured_step=2, queue_capacity_batches=28.0)
    check = diagnosis.decide(s, diagnosis.advise(s, None), "not", 270.0).validity
    assert check.buffered_batches == pytest.approx(3113 / 313 - 2)
    assert check.drain_steps == math.ceil((3113 / 313 - 2) * 313 / 43)  # 58
    assert check.steps_needed == 2 * (2 + check.drain_steps)  # the drain rule's last half
    assert "3113 ms of 2 steps before the window" in check.sentence


def test_without_a_profile_the_verdict_still_comes_from_the_host_timers():
    result = diagnosis.diagnose(summary(), steps(1300))
    assert result.bound == "input" and result.culprit.label == "the pipeline"
    assert result.profiled is False
    assert result.advisor.source.startswith("calibration")
    assert "the pipeline is the slow operator" in result.recommendation.sentence


def test_with_nothing_buffered_a_long_window_is_steady_whatever_the_floor_reads():
    # a pipeline-alone reading taken beside other work reads 33 % slow: the 2 steps before the
    # window consumed every batch made (nothing buffered), so 10 steps after them are steady
    s = edited(summary(gap_share=0.79, steady=2400, pipeline_wall=3200, compute=300, cpu_floor=1700),
               before_window_ms=4000.0, first_measured_step=2, steps_measured=10)
    check = diagnosis.decide(s, diagnosis.advise(s, None), "highly", 300.0).validity
    assert check.steady and check.floor_suspect
    short = diagnosis.decide(edited(s, steps_measured=4), diagnosis.advise(s, None), "highly",
                             300.0).validity
    assert not short.steady and short.drain_steps == 0 and short.steps_needed == 12
