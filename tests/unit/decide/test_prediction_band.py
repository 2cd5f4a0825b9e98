"""The what-if model's error band: read from recorded sweeps, judged on scenarios it never saw."""

import math
from pathlib import Path

import pytest

from perfstudy.decide import prediction_band as pb
from perfstudy.decide import prediction_cases as pc

CASES = Path(__file__).resolve().parents[3] / "docs" / "benchmarks" / "predictions"


def test_the_conformal_band_is_open_until_enough_errors_bound_it():
    errors = [math.log(1 + e / 100) for e in range(-9, 9)]  # 18 errors
    assert pb.conformal_ends(errors, 0.9) == pb.Ends(None, None)  # (18 + 1) x 0.05 < 1
    ends = pb.conformal_ends(errors + [0.0], 0.9)  # 19: the most extreme ones
    assert ends.low == pytest.approx(0.91) and ends.high == pytest.approx(1.08)


def test_the_student_band_widens_with_the_spread_and_the_few_errors():
    assert pb.student_ends([0.1, -0.1], 0.9) == pb.Ends(None, None)
    narrow = pb.student_ends([0.01, -0.01, 0.0, 0.02, -0.02], 0.9)
    wide = pb.student_ends([0.1, -0.1, 0.0, 0.2, -0.2], 0.9)
    assert narrow.low < 1 < narrow.high and wide.low < narrow.low and wide.high > narrow.high
    assert math.log(narrow.high) == pytest.approx(-math.log(narrow.low))  # centred on the mean 0
    band = pb.band_from([0.0, 0.1, -0.1], [0.0, 0.1, -0.1], ["a", "b"], 0.9)
    low, high = band.step_interval(1000.0)
    assert low < 1000 < high and band.words(1000.0) == f"1000 ms (90 %: {low:.0f}-{high:.0f})"


def _point(case, group, measured, predicted, held_out=False, own=False):
    return pc.CasePoint(case, group, held_out, "2", own, measured, predicted, predicted, measured, "cpu")


def test_held_out_points_never_enter_a_band_and_each_group_is_judged_without_itself():
    points = [_point(f"c{i}", f"g{i}", 1000 + 10 * i, 1000) for i in range(6)]
    wild = _point("bad", "gbad", 3000, 1000, held_out=True)
    assert pc.calibrate(points + [wild]) == pc.calibrate(points)
    from dataclasses import replace
    disturbed = replace(_point("noisy", "gnoisy", 3000, 1000), admitted=False)
    assert pc.calibrate(points + [disturbed]) == pc.calibrate(points)
    assert pc.goals(pc.leave_one_out(points + [disturbed]), False).settings == len(points)
    twins = [_point("t1", "twin", 2000, 1000), _point("t2", "twin", 2000, 1000)]
    judged = pc.leave_one_out(points + twins + [wild])
    by_case = {j.point.case: j for j in judged}
    # a group's band is read from the others: the twins' doubled step is not covered, and the
    # band that judges one twin did not read the other
    assert not by_case["t1"].covered and by_case["t1"].band_points == 6
    assert by_case["bad"].band_points == 8 and not by_case["bad"].covered
    assert by_case["c0"].band_points == 7


def test_the_shipped_band_is_the_recorded_cases_band_under_this_code():
    """A change to the model that moves its errors must recalibrate the band it ships
    (python scripts/prediction_check.py --write-band): the recorded cases are re-predicted here."""
    cases = pc.load_cases(CASES)
    assert len(cases) >= 7 and any(c.info.held_out for c in cases) or len(cases) >= 7
    points = [p for case in cases for p in pc.case_points(case)]
    assert len(points) >= 2 * len(cases)
    shipped = pb.shipped_band()
    found = pc.calibrate(points)
    assert shipped is not None and shipped.scenarios == found.scenarios
    assert shipped.step.low == pytest.approx(found.step.low) and shipped.step.high == pytest.approx(found.step.high)
    assert shipped.gain.low == pytest.approx(found.gain.low) and shipped.gain.high == pytest.approx(found.gain.high)
    assert not set(shipped.scenarios) & {c.info.truth for c in cases if c.info.held_out}
    # a truth measured while other processes took the CPU is shown, never read into the band
    for case in cases:
        over, kept = case.disturbed
        assert case.admitted == (over <= kept / 2)
        if not case.admitted:
            assert case.info.truth not in shipped.scenarios
    # every point carries how precisely its sweep knows the truth: the median inside its interval
    for p in points:
        assert p.rounds >= 1
        if p.measured_low_ms is not None:
            assert p.measured_low_ms <= p.measured_ms <= p.measured_high_ms
            assert p.inside_truth == (p.measured_low_ms <= p.predicted_ms <= p.measured_high_ms)


def test_a_prediction_inside_the_sweeps_own_interval_is_told_apart_from_one_outside():
    from dataclasses import replace
    point = _point("c", "g", 2000, 3300)
    assert point.inside_truth is None  # no interval: fewer than 2 rounds
    loose = replace(point, measured_low_ms=1760.0, measured_high_ms=4080.0, rounds=7)
    tight = replace(point, measured_low_ms=1900.0, measured_high_ms=2100.0, rounds=12)
    assert loose.inside_truth and not tight.inside_truth
    assert pc.score_cases(pc.leave_one_out([loose]))[0].inside_truth == 1


def test_a_truth_faster_than_its_operator_alone_is_shown_never_read_into_a_band():
    """A step cannot beat its slowest operator alone (the probe's reading at that setting): a
    sweep median under IMPLAUSIBLE_BELOW of it contradicts that reading: kept out like a disturbed one."""
    from dataclasses import replace
    points = [_point(f"c{i}", f"g{i}", 1000 + 10 * i, 1000) for i in range(6)]
    flawed = replace(_point("fast", "gfast", 600, 1000), alone_ms=900.0)
    assert not flawed.plausible and not flawed.usable
    slow_probe = replace(_point("ok", "gok", 1000, 1000), alone_ms=1000 / pc.IMPLAUSIBLE_BELOW)
    assert slow_probe.plausible  # at the limit: within the probe's own spread
    assert pc.calibrate(points + [flawed]) == pc.calibrate(points)
    judged = pc.leave_one_out(points + [flawed])
    assert pc.goals(judged, False).settings == len(points)
    assert any(j.point.case == "fast" for j in judged)  # still judged and shown
