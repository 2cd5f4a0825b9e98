"""Repeats: run names and seeds, olympic mean, the paired interval, the report's section."""

import copy
import shutil
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import REPO
from records import render_report

from perfstudy.common.config import ConfigError
from perfstudy.common.io import read_json, write_json
from perfstudy.decide.arms import load_arm
from perfstudy.orchestrate.study import arm_overrides, compose_arm, run_names, split_run
from perfstudy.orchestrate.workflow_config import Workflow
from perfstudy.present import repeats

FIXTURES = REPO / "tests" / "fixtures" / "cpu_demo"
WF = {"study": "s", "results": "r", "repeats": 3, "overrides": ["size=smoke"],
      "studies": {"s": {"arms": {"baseline": ["experiment=baseline"], "tuned": ["experiment=tuned"]}}}}


def test_repeats_are_runs_named_after_their_arm_with_their_own_seed():
    assert run_names(Workflow.of(WF)) == ["baseline", "tuned", "baseline.r2", "tuned.r2", "baseline.r3", "tuned.r3"]
    assert split_run(Workflow.of(WF), "s", "tuned.r3") == ("tuned", 3)
    assert "repeat=3" in arm_overrides(Workflow.of(WF), "s", "tuned.r3")
    cfg = compose_arm(Workflow.of(WF), "s", "tuned.r3")
    assert (cfg.arm, cfg.repeat, cfg.run) == ("tuned", 3, "tuned.r3")
    assert cfg.paths.run_dir.endswith("runs/s/tuned.r3")
    from perfstudy.common.config import config_hash
    from perfstudy.run.train import run_seed

    first = compose_arm(Workflow.of(WF), "s", "tuned")
    assert config_hash(cfg) == config_hash(first)  # one arm, one config hash
    assert run_seed(cfg) == run_seed(first) + 20
    with pytest.raises(ConfigError, match="Unknown arm 'tuned.r4'"):
        split_run(Workflow.of(WF), "s", "tuned.r4")


def test_olympic_mean_drops_the_fastest_and_the_slowest():
    assert repeats.olympic_mean([10, 1, 2, 3, 100]) == pytest.approx(5.0)
    assert repeats.olympic_mean([4, 6]) == pytest.approx(5.0)


def test_the_speedup_interval_is_paired_by_repeat():
    base, tuned = [4300, 4250, 4400, 4330, 4290], [2990, 3050, 2900, 3100, 2980]
    low, high = repeats.speedup_interval(base, tuned)
    estimate = np.median(base) / np.median(tuned)
    assert low <= estimate <= high and high - low < 0.2
    # a host that drifts between rounds moves both arms of a round: the paired interval stays tight
    drift = [1.0, 1.3, 0.8, 1.2, 0.9]
    low_d, high_d = repeats.speedup_interval([b * d for b, d in zip(base, drift, strict=True)],
                                             [t * d for t, d in zip(tuned, drift, strict=True)])
    assert (low_d, high_d) == pytest.approx((low, high))
    assert np.isnan(repeats.speedup_interval([4300], [3000])[0])  # one repeat: no interval


def _runs(tmp_path, steady_by_run, source=FIXTURES):
    runs = []
    for name, steady in steady_by_run.items():
        arm, _, k = name.partition(".r")
        run_dir = tmp_path / name
        shutil.copytree(source / arm, run_dir)
        summary = copy.deepcopy(read_json(run_dir / "summary.json"))
        summary.update(run=name, repeat=int(k or 1), seed=1 + 10 * (int(k or 1) - 1), steady_step_ms=steady)
        write_json(run_dir / "summary.json", summary)
        runs.append(load_arm(run_dir, name))
    return runs


def test_the_report_aggregates_repeats_and_details_the_first(tmp_path):
    runs = _runs(tmp_path / "runs", {"baseline": 4300.0, "tuned": 3000.0, "baseline.r2": 4400.0,
                                     "tuned.r2": 2900.0, "baseline.r3": 4350.0, "tuned.r3": 3100.0})
    paths = render_report("s", runs, tmp_path / "report")
    table = pd.read_csv(paths["repeats"])
    tuned = table.set_index("arm").loc["tuned"]
    assert tuned["repeats"] == 3 and tuned["seeds"] == "1 11 21"
    assert tuned["steady_step_ms_median"] == 3000.0
    assert tuned["speedup_median"] == pytest.approx(4350.0 / 3000.0)
    assert tuned["speedup_ci_low"] <= tuned["speedup_median"] <= tuned["speedup_ci_high"]
    md = paths["md"].read_text()
    assert "## Repeats: spread across seeds, and the speedup's interval" in md
    assert "| tuned | 3 (1 11 21) | 3000 | 3000 | 2900 .. 3100 |" in md
    measured = pd.read_csv(paths["comparison"])
    assert sorted(measured[measured["source"] == "measured"]["arm"]) == ["baseline", "tuned"]


def test_one_repeat_has_no_repeats_section(tmp_path):
    runs = _runs(tmp_path / "runs", {"baseline": 4300.0, "tuned": 3000.0})
    paths = render_report("s", runs, tmp_path / "report")
    assert "## Repeats" not in paths["md"].read_text()
    assert pd.read_csv(paths["repeats"])["repeats"].tolist() == [1, 1]


def _answer_in(run, changes, gain):
    run.diagnosis = replace(run.diagnosis, recommendation=replace(
        run.diagnosis.recommendation, changes=changes, measured_gain=gain))
    return run


def test_an_answer_is_settled_only_when_every_repeat_gives_it_beyond_the_noise(tmp_path, analysed):
    steady = {"baseline": 4300.0, "baseline.r2": 4400.0, "baseline.r3": 4350.0}
    runs = _runs(tmp_path / "a", steady, analysed)
    for run in runs:
        _answer_in(run, {"pipeline.num_parallel_workers": 2}, 0.35)
    (settled,) = repeats.answers(runs)
    assert settled.settled and settled.answers == {"set pipeline.num_parallel_workers=2": 3}
    assert settled.sentence == "Across 3 repeats: every repeat says set pipeline.num_parallel_workers=2."

    runs = _runs(tmp_path / "b", steady, analysed)
    _answer_in(runs[0], {}, None)  # one repeat keeps the setting: the repeats disagree
    for run in runs[1:]:
        _answer_in(run, {"pipeline.num_parallel_workers": 2}, 0.12)
    (split,) = repeats.answers(runs)
    assert not split.settled and "the repeats disagree (keep the setting: 1 of 3;" in split.sentence
    assert "agrees on" not in split.sentence
    runs = _runs(tmp_path / "b2", steady, analysed)  # two answers that share the culprit's change
    _answer_in(runs[0], {"pipeline.num_parallel_workers": 2, "pipeline.reader_workers": 2}, 0.3)
    for run in runs[1:]:
        _answer_in(run, {"pipeline.num_parallel_workers": 2}, 0.3)
    (shared,) = repeats.answers(runs)
    assert not shared.settled
    assert "every repeat agrees on set pipeline.num_parallel_workers=2, the rest is not settled" in shared.sentence

    runs = _runs(tmp_path / "c", {"baseline": 3000.0, "baseline.r2": 4400.0}, analysed)  # 38 % apart
    for run in runs:
        _answer_in(run, {"pipeline.num_parallel_workers": 2}, 0.20)
    (noisy,) = repeats.answers(runs)
    assert not noisy.settled and "inside the step's run-to-run spread (38 %)" in noisy.sentence

    paths = render_report("s", runs, tmp_path / "report")
    assert "The 2 repeats do not settle it (see why)." in paths["md"].read_text()
    assert not pd.read_csv(paths["answers"])["settled"].any()
    assert repeats.answers(runs[:1]) == []  # one repeat: nothing to settle
    assert not (render_report("s", runs[:1], tmp_path / "report")).get("answers")
    assert not (tmp_path / "report" / "answers.csv").exists()


def test_repeats_train_in_seeded_random_rounds_each_waiting_for_the_one_before():
    from perfstudy.orchestrate.study import previous_run, run_order

    wf = {**WF, "studies": {"s": {"arms": {a: [] for a in ("baseline", "tuned", "prepared")}}}}
    order = run_order(Workflow.of(wf), "s")
    rounds = [order[i:i + 3] for i in range(0, 9, 3)]
    assert [sorted(r) for r in rounds] == [["baseline", "prepared", "tuned"],
                                           sorted(f"{a}.r2" for a in ("baseline", "tuned", "prepared")),
                                           sorted(f"{a}.r3" for a in ("baseline", "tuned", "prepared"))]
    assert order == run_order(Workflow.of(wf), "s")  # recorded by its seed
    assert len({tuple(r.split(".")[0] for r in rnd) for rnd in rounds}) > 1  # not one fixed order
    assert run_order(Workflow.of({**wf, "order_seed": 5}), "s") != order
    assert previous_run(Workflow.of(wf), "s", order[0]) is None
    assert [previous_run(Workflow.of(wf), "s", r) for r in order[1:]] == order[:-1]
    assert previous_run(Workflow.of({**wf, "repeats": 1}), "s", "tuned") is None  # one repeat: no chain
    assert run_order(Workflow.of({**wf, "repeats": 1}), "s") == ["baseline", "tuned", "prepared"]
