"""The diagnosis benchmark's score: a diagnosed run against its measured sweep."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from records import make_diagnosis, make_summary, make_sweep

from perfstudy.decide import advisor, scenarios
from perfstudy.decide.arms import Arm
from perfstudy.measure.nearbest import Near
from perfstudy.present import scenarios as scenario_tables

KEY = "pipeline.num_parallel_workers"


def _advice():
    summary = {"steady_step_ms": 3200.0,
               "num_parallel_workers": {"effective": 1, "cpu_count": 4, "requested": None},
               "calibration": {"compute_wall_ms": 500.0, "compute_cpu_ms": 900.0,
                               "pipeline_wall_ms": 3040.0, "pipeline_cpu_ms": 3000.0}}
    ops = pd.DataFrame([{"op_id": 1, "op_type": "Map", "label": "Map #1 [Decode]", "num_workers": 1,
                         "cpu_pct": 95.0, "cpu_pct_per_worker": 95.0, "child_id": None,
                         "queue_usage": 0.0, "config_key": KEY}])
    return advisor.advise(make_summary(summary), ops)


def _arm(name, role, workers, step, answer=None, advice=None, bound="input"):
    summary = {"scenario": {"name": "s", "role": role, "truth": "s", "key": KEY},
               "operator_settings": {KEY: workers}, "steady_step_ms": step, "arm": name, "run": name}
    diagnosis = None if answer is None else make_diagnosis(recommendation=answer, advisor=advice, bound=bound)
    return Arm(name, make_summary(summary), pd.DataFrame(), diagnosis)


def _sweep(steps, rounds_=6, noise=0.0, seed=0):
    arm = _arm("s_sweep", "truth", 1, 3000.0)
    arm.summary = replace(arm.summary, sweep=make_sweep(KEY, steps, rounds_, noise, seed))
    return [arm]


def _decide(action="set_workers", workers=4, culprit=KEY):
    return {"action": action, "culprit_key": culprit, "culprit_label": "Map #1 [Decode]" if culprit else None,
            "changes": {KEY: workers} if action == "set_workers" else {}, "settings": {KEY: workers}}


def test_a_right_culprit_and_pick_score_from_the_records():
    arms = [_arm("s", "diagnosed", 1, 3200.0, _decide(), _advice())] + _sweep(
        {1: 3100.0, 2: 1600.0, 3: 1100.0, 4: 800.0})
    (found,), points = scenarios.score(arms)
    assert found.culprit_right is True and found.moves is True
    assert found.pick_near is Near.HOLDS and found.pick.step.median == pytest.approx(
        np.median(arms[1].summary.sweep.rounds.series(3)))
    assert found.wrong_no_help is False and found.fastest == "4"
    assert len(points) == 4  # one prediction per swept setting, each with its error
    assert found.predictions_within == (max(abs(p.error) for p in points) <= 0.15)
    row = scenario_tables.table([found]).iloc[0]
    assert row["culprit right"] == "yes" and row[scenario_tables.PICK_WITHIN] == "holds"
    assert row["sweep rounds"] == "6 (max_rounds)"


def test_a_pick_decidedly_slower_than_the_best_does_not_hold():
    arms = [_arm("s", "diagnosed", 1, 3200.0, _decide(workers=2), _advice())] + _sweep(
        {1: 3100.0, 2: 1600.0, 3: 1100.0, 4: 800.0})
    (found,), _ = scenarios.score(arms)
    assert found.pick_near is Near.FAILS and found.pick.vs_fastest.ratio == pytest.approx(2.0)
    assert "does not hold in 1" in scenario_tables.summary_line([found])


def test_a_sweep_inside_its_noise_leaves_the_pick_undecided():
    arms = [_arm("s", "diagnosed", 1, 3200.0, _decide(workers=2), _advice())] + _sweep(
        {1: 1000.0, 2: 1080.0}, rounds_=3, noise=0.3, seed=4)
    (found,), _ = scenarios.score(arms)
    assert found.pick_near is Near.UNDECIDED and found.moves is None and found.culprit_right is None
    assert scenario_tables.table([found]).iloc[0]["culprit right"] == "undecided"


def test_no_help_where_a_setting_is_much_faster_is_wrong():
    arms = [_arm("s", "diagnosed", 1, 3200.0, _decide("cannot_help", 1), _advice())] + _sweep(
        {1: 3100.0, 2: 1600.0})
    (found,), _ = scenarios.score(arms)
    assert found.wrong_no_help is True and found.recommended == "keep (1)"
    assert scenario_tables.table([found]).iloc[0][scenario_tables.WRONG_NO_HELP] == "WRONG"
    assert "a wrong 'no setting helps' in 1" in scenario_tables.summary_line([found])


def test_where_workers_do_not_matter_keeping_them_is_right():
    arms = [_arm("s", "diagnosed", 1, 700.0, _decide("none", 1, None), _advice(), bound="compute")] + _sweep(
        {1: 700.0, 2: 720.0, 3: 690.0, 4: 705.0})
    (found,), _ = scenarios.score(arms)
    assert found.moves is False and found.culprit_right is True and found.culprit_named == "none"
    arms[0] = _arm("s", "diagnosed", 1, 700.0, _decide(workers=2), _advice())
    assert scenarios.score(arms)[0][0].culprit_right is False


def test_a_run_without_its_sweep_is_not_scored():
    arms = [_arm("s", "diagnosed", 1, 3200.0, _decide(), _advice()), _arm("s_sweep", "truth", 1, 3000.0)]
    assert scenarios.score(arms) == ([], [])


def test_an_inconclusive_answer_is_counted_apart_with_its_open_candidate():
    """An answer the verification could not decide keeps the run's setting until more rounds
    do: it is no pick, so it is not counted with the decided picks, and the report shows where
    what it kept and what it was still measuring fall in the sweep (mixed_cost, 2026-12-03:
    kept 1 worker, 1.24x the best, while its open candidate read 0.83x (0.64-1.07))."""
    from records import make_verification

    from perfstudy.common.records import to_dict
    from perfstudy.decide import verify

    checked = verify.verdict(make_verification(
        [({KEY: 1}, 3200.0), ({KEY: 4}, 900.0)],
        [[3000.0, 3300.0, 2900.0], [2200.0, 3400.0, 2000.0]]))
    assert checked.outcome == "inconclusive"
    answer = {**_decide("inconclusive", 1), "settings": {KEY: 1}, "changes": {},
              "verification": to_dict(checked)}
    arms = [_arm("s", "diagnosed", 1, 3200.0, answer, _advice())] + _sweep(
        {1: 3100.0, 2: 1600.0, 3: 1100.0, 4: 800.0})
    (found,), _ = scenarios.score(arms)
    assert found.inconclusive and found.recommended == "inconclusive: keep (1) until decided"
    assert found.pick_near is Near.FAILS  # what it keeps meanwhile: 1 worker, decidedly slower
    assert found.open_candidate == "4" and found.open_near is Near.HOLDS
    line = scenario_tables.summary_line([found])
    assert "a decided answer recommends (0) within 10 % of the sweep's best: holds in 0, does not hold in 0" in line
    assert "until more rounds decide (1): what they keep holds in 0, does not hold in 1" in line
    assert "their open candidate holds in 1" in line
    assert scenario_tables.table([found]).iloc[0][scenario_tables.OPEN] == "4: holds"
