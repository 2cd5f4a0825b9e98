"""The interleaved-rounds engine with fake windows, a fake clock and a fake load monitor:
orders, re-measuring a disturbed window, sequential stopping and the budget (nothing timed)."""

import itertools
import math

import pytest
from fake_host import quiet_monitor

from perfstudy.measure import interference, rounds
from perfstudy.measure.interference import Interference, Load
from perfstudy.measure.rounds import Schedule, Window


def window(step_ms):
    return Window(step_ms, 6, 4, 1.0)


def fixed(steps):
    """A visit function: setting i always measures steps[i]; records the calls."""
    calls = []

    def visit(setting, round_):
        calls.append((round_, setting))
        return window(steps[setting])
    visit.calls = calls
    return visit


def test_every_round_visits_each_setting_once_in_a_seeded_random_order():
    visit = fixed([100.0, 80.0, 120.0])
    found = rounds.run(visit, Schedule(3, seed=5, min_rounds=6, max_rounds=6), quiet_monitor())
    assert len(found.orders) == 6 and all(sorted(o) == [0, 1, 2] for o in found.orders)
    assert len({tuple(o) for o in found.orders}) > 1  # not one fixed order
    again = rounds.run(fixed([100.0, 80.0, 120.0]), Schedule(3, seed=5, min_rounds=6, max_rounds=6),
                       quiet_monitor())
    assert again.orders == found.orders  # recorded and reproducible from the seed
    assert [s for _, s in visit.calls] == list(itertools.chain(*found.orders))
    assert found.series(1) == [80.0] * 6 and found.stopped == "max_rounds"


def test_rounds_stop_once_every_comparison_is_decided():
    schedule = Schedule(3, seed=1, min_rounds=3, max_rounds=20,
                        decided=rounds.all_decided(0.10))
    found = rounds.run(fixed([100.0, 70.0, 101.0]), schedule, quiet_monitor())
    # identical rounds have no spread: the interval is a point, decided at the first look
    assert found.stopped == "decided" and len(found.orders) == 3
    faster, same = rounds.compare_all(found, 0.10)
    assert faster.outcome == "faster" and same.outcome == "equivalent"
    assert faster.ratio == pytest.approx(0.7) and faster.rounds == 3


def test_noisy_rounds_run_to_the_most_and_stay_inconclusive():
    noise = itertools.cycle([1.4, 0.7, 1.0, 1.3, 0.75])

    def visit(setting, round_):
        return window(100.0 * (next(noise) if setting else 1.0))
    schedule = Schedule(2, seed=1, min_rounds=3, max_rounds=5, decided=rounds.all_decided(0.10))
    found = rounds.run(visit, schedule, quiet_monitor())
    assert found.stopped == "max_rounds" and len(found.orders) == 5
    (only,) = rounds.compare_all(found, 0.10)
    assert only.outcome == "inconclusive" and only.rounds == 5 and only.low < 1 < only.high


def test_a_disturbed_window_is_measured_again_once_and_said():
    loads = iter([
        Load(0, 0, 0, 0, 0, None), Load(1, 2, 2, 0, 1, None),  # 50 % others: disturbed
        Load(1, 2, 2, 0, 1, None), Load(2, 4, 4, 0, 2, None),  # again disturbed: kept anyway
    ] + [Load(3 + i, 2 * (3 + i), 0, 0, 0, None) for i in range(100)])
    found = rounds.run(fixed([100.0, 90.0]), Schedule(2, seed=0, min_rounds=3, max_rounds=3),
                       lambda: next(loads))
    assert len(found.dropped()) == 1 and "other processes 50 %" in found.dropped()[0].dropped
    assert len(found.kept()) == 6 and found.disturbed_kept() == 1
    first = found.orders[0][0]
    assert [v.setting for v in found.visits[:2]] == [first, first]


def test_the_budget_stops_rounds_after_the_first_ones_never_before():
    now = {"t": 0.0}

    def visit(setting, round_):
        now["t"] += 10.0  # each window takes 10 s of the fake clock
        return window(100.0)
    schedule = Schedule(2, seed=0, min_rounds=3, max_rounds=10, budget_s=45.0)
    found = rounds.run(visit, schedule, None, clock=lambda: now["t"])
    assert len(found.orders) == 3 and found.stopped == "budget"  # 3 x 20 s > 45 s: min rounds run
    schedule.budget_s = 85.0
    now["t"] = 0.0
    found = rounds.run(visit, schedule, None, clock=lambda: now["t"])
    assert len(found.orders) == 4 and found.stopped == "budget"  # 80 s + a 20 s round > 85 s


def test_the_budget_stretches_only_while_the_rounds_needed_fit():
    """Past the budget, rounds go on while the estimate of the rounds that would settle it
    fits in the stretch; an estimate past the stretch, or none, stops at the budget."""
    now = {"t": 0.0}

    def visit(setting, round_):
        now["t"] += 10.0  # a 20 s round
        return window(100.0)

    def run(needed, stretch_s=130.0):
        now["t"] = 0.0
        schedule = Schedule(2, seed=0, min_rounds=3, max_rounds=10, budget_s=45.0,
                            stretch_s=stretch_s, needed=lambda found: needed)
        return rounds.run(visit, schedule, None, clock=lambda: now["t"])
    found = run(6)  # 6 rounds: 60 s + 3 x 20 s = 120 s <= 130 s: stretched 3 rounds
    assert len(found.orders) == 6 and found.stretched == 3 and found.stopped == "budget"
    found = run(7)  # 7 rounds would end at 140 s > 130 s: not one round past the budget
    assert len(found.orders) == 3 and found.stretched == 0 and found.stopped == "budget"
    assert len(run(None).orders) == 3  # no estimate: no stretch
    assert len(run(6, stretch_s=None).orders) == 3  # no stretch asked


def test_the_rounds_needed_come_from_the_open_comparisons_spread():
    """rounds_to_settle: the rounds the most promising open comparison needs (the one that can
    change the answer), from its own spread; none once every comparison is settled."""
    series = {0: [100, 104, 97, 101], 1: [80, 70, 90, 78], 2: [95, 90, 99, 88]}
    orders = [[0, 1, 2]] * 4
    visits = [rounds.Visit(s, r, s, window(series[s][r]), None) for r in range(4) for s in range(3)]
    found = rounds.Rounds(3, 0, orders, visits, "budget", 1.0, None, 0.10)
    needed = rounds.rounds_to_settle(0.10)(found)
    by = {c.setting: c for c in rounds.compare_all(found, 0.10)}
    open_ = [c for c in by.values() if not c.settled]
    best = min(open_, key=lambda c: c.ratio)
    assert open_ and needed == 4 + best.rounds_needed - best.rounds and needed > 4
    quiet = [rounds.Visit(s, r, s, window([100, 70 + r % 2][s]), None) for r in range(4)
             for s in range(2)]  # 0.70-0.71x every round: faster, settled
    settled = rounds.Rounds(2, 0, orders, quiet, "budget", 1.0, None, 0.10)
    assert all(c.settled for c in rounds.compare_all(settled, 0.10))
    assert rounds.rounds_to_settle(0.10)(settled) is None


def test_a_window_that_never_settles_leaves_its_round_unpaired():
    def visit(setting, round_):
        return Window(None if (setting == 1 and round_ == 0) else 100.0, 8, 0, 1.0)
    found = rounds.run(visit, Schedule(2, seed=0, min_rounds=3, max_rounds=3), None)
    assert found.series(1)[0] is None
    (only,) = rounds.compare_all(found, 0.10)
    assert only.rounds == 2


def test_interference_reads_other_processes_and_steal_as_shares_of_all_cpus():
    before = Load(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    after = Load(10.0, 20.0, 15.0, 1.0, 12.0, 4.0)  # 2 CPUs, 10 s: 3 s others, 1 s steal
    seen = interference.between(before, after)
    assert seen.others == pytest.approx(0.15) and seen.steal == pytest.approx(0.05)
    assert seen.pressure == pytest.approx(0.4)
    assert "other processes 15 %" in seen.reason(0.10) and seen.reason(0.25) is None
    assert Interference(1.0, 0.0, 0.0).reason(0.10) is None


def test_the_real_monitor_reads_this_machine():
    a = interference.snapshot()
    sum(i * i for i in range(200000))
    seen = interference.between(a, interference.snapshot())
    assert seen.wall_s > 0 and 0 <= seen.others <= 1 and 0 <= seen.steal <= 1


def test_a_candidate_is_settled_when_faster_or_when_it_cannot_be():
    schedule = Schedule(3, seed=2, min_rounds=3, max_rounds=10, decided=rounds.all_settled(0.10))
    noise = itertools.cycle([1.0, 1.06, 0.97])

    def visit(setting, round_):  # 1: clearly faster; 2: about the same, a little noisy
        return window({0: 100.0, 1: 60.0, 2: 101.0 * next(noise)}[setting])
    found = rounds.run(visit, schedule, quiet_monitor())
    faster, same = rounds.compare_all(found, 0.10)
    assert found.stopped == "decided" and faster.settled and same.settled
    assert same.rules_out_gain and not faster.rules_out_gain


def test_a_settled_candidate_leaves_the_race_and_the_open_one_keeps_its_rounds():
    """Setting 1 is 0.85x, faster after 3 rounds, and leaves; setting 2 wobbles around the
    reference (it might still beat setting 1 by 10 %) and is measured until that is settled."""
    wobble = itertools.cycle([1.2, 0.8, 1.1, 0.9, 1.0, 1.05])

    def visit(setting, round_):
        visit.calls.append((round_, setting))
        return window({0: 100.0, 1: 85.0, 2: 100.0 * next(wobble)}[setting])
    visit.calls = []
    schedule = Schedule(3, seed=2, min_rounds=3, max_rounds=12, decided=rounds.all_settled(0.10),
                        leaves=rounds.race(0.10))
    found = rounds.run(visit, schedule, quiet_monitor())
    assert all(sorted(o) == [0, 1, 2] for o in found.orders[:3])
    assert all(sorted(o) == [0, 2] for o in found.orders[3:]) and len(found.orders) > 3
    assert sum(1 for _, s in visit.calls if s == 1) == 3
    fast, wobbly = rounds.compare_all(found, 0.10)
    assert fast.outcome == "faster" and fast.rounds == 3  # its verdict as it left
    assert wobbly.rounds == len(found.orders)


def test_a_candidate_that_cannot_beat_the_fastest_by_the_margin_leaves_too():
    # 1: 0.60x, clearly faster; 2: 0.85x-ish, faster than the reference perhaps, but its
    # interval's low end is above 0.60 / 1.1: it cannot beat setting 1 by 10 %
    comparisons = [rounds.Comparison(1, 3, 0.60, 0.58, 0.62, 0.95, "faster", 0.10),
                   rounds.Comparison(2, 3, 0.85, 0.70, 1.02, 0.95, "inconclusive", 0.10),
                   rounds.Comparison(3, 3, 0.62, 0.40, 0.95, 0.95, "inconclusive", 0.10)]
    assert rounds.settled_settings(comparisons, 0.10) == {1, 2}


def _remedy_like(setting, round_):
    """The prepared pipeline (100 ms) against its source (~480 ms, +-3 % round to round)."""
    wobble = [1.0, 1.03, 0.97, 1.02, 0.98, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0]
    return window(100.0 if setting == 0 else 480.0 * wobble[round_])


def _raced(target, max_rounds=12, leaves=None):
    t = target
    decided = rounds.every(rounds.all_settled(0.10), rounds.target_met(t))
    leaves = leaves or rounds.both_leave(rounds.race(0.10), rounds.target_leaves(t))
    return rounds.run(_remedy_like, Schedule(2, seed=3, min_rounds=3, max_rounds=max_rounds,
                                             decided=decided, leaves=leaves), quiet_monitor())


def test_a_precision_target_runs_until_the_interval_is_that_narrow_wherever_it_lies():
    """The remedy's rounds go on past "settled" (4.8x is far beyond the 10 % band after 3
    rounds) until the interval is within +-3 %; the rounds it needs come from the spread."""
    precise = rounds.precision_target(0.03)
    few = rounds.run(_remedy_like, Schedule(2, seed=3, min_rounds=3, max_rounds=12,
                                            decided=rounds.all_settled(0.10)), quiet_monitor())
    assert len(few.orders) == 3 and rounds.compare_all(few, 0.10)[0].settled
    assert not rounds.target_met(precise)(few) and rounds.target_needed(precise)(few) > 3
    found = _raced(precise)
    (only,) = rounds.compare_all(found, 0.10)
    assert found.stopped == "decided" and 3 < len(found.orders) < 12
    assert (math.log(only.high) - math.log(only.low)) / 2 <= 0.03
    assert rounds.target_needed(precise)(found) == len(found.orders)  # there already
    needed = rounds.most_needed(rounds.rounds_to_settle(0.10), rounds.target_needed(precise))
    assert needed(few) == rounds.target_needed(precise)(few)  # settled: the target alone


def test_a_claims_bound_keeps_the_rounds_going_until_the_ratio_is_on_one_side():
    """bounds_target: a "5x" claim on a ratio read 4.8x (4.5-5.1) after 3 rounds keeps the
    rounds going until the interval is below 5; a bound far away (3x) or one the estimate sits
    on (4.8x) adds nothing."""
    few = rounds.run(_remedy_like, Schedule(2, seed=3, min_rounds=3, max_rounds=3), quiet_monitor())
    (early,) = rounds.compare_all(few, 0.10)
    assert early.low < 5.0 < early.high  # undecided at 3 rounds
    found = _raced(rounds.bounds_target([5.0]))
    (only,) = rounds.compare_all(found, 0.10)
    assert found.stopped == "decided" and len(found.orders) > 3 and only.high < 5.0
    assert all(sorted(o) == [0, 1] for o in found.orders)  # the source in every round
    for bound in (3.0, early.ratio):
        assert rounds.target_met(rounds.bounds_target([bound]))(few)


def test_under_a_target_a_settled_setting_stays_in_the_race_until_it_is_met():
    """rounds.both_leave: the race lets a setting go only when the band and the target both
    do; on "settled" alone the source left after 3 rounds and the rounds went on measuring
    the prepared pipeline by itself, never narrowing the interval."""
    precise = rounds.precision_target(0.03)
    found = _raced(precise)
    assert all(sorted(o) == [0, 1] for o in found.orders) and rounds.target_met(precise)(found)
    raced = _raced(precise, max_rounds=6, leaves=rounds.race(0.10))
    assert raced.orders[3:] and all(o == [0] for o in raced.orders[3:])  # what it did before
    assert not rounds.target_met(precise)(raced)


def test_the_stretch_follows_the_candidate_that_can_change_the_answer():
    """A candidate near 1.0x on the band's edge needs more rounds than any stretch holds; the
    other, about 20 % faster but noisy, would read "faster" after a few more: the rounds still
    needed are the promising one's, so the stretch can decide it (before: the most any open
    comparison needed, and nothing was stretched)."""
    ref = [100, 108, 95, 103]
    ratios = {0: [1.0] * 4, 1: [0.66, 0.95, 0.74, 0.90], 2: [0.82, 1.00, 0.85, 0.98]}
    visits = [rounds.Visit(s, r, s, window(ref[r] * ratios[s][r]), None) for r in range(4) for s in range(3)]
    found = rounds.Rounds(3, 0, [[0, 1, 2]] * 4, visits, "budget", 1.0, None, 0.10)
    by = {c.setting: c for c in rounds.compare_all(found, 0.10)}
    assert not by[1].settled and not by[2].settled and by[1].ratio < by[2].ratio
    assert by[2].rounds_needed is None  # 0.91x: on the band's edge, no count of rounds decides it
    needed = rounds.rounds_to_settle(0.10)(found)
    assert needed is not None and needed == 4 + by[1].rounds_needed - by[1].rounds


def test_an_earlier_runs_rounds_of_the_same_pair_are_pooled_into_the_race():
    """A prior (an earlier run's interval of the same pair, verify.reuse_from) is pooled with
    these rounds once they make an interval: the candidate open on either run's rounds alone
    is settled on both, leaves the race, and the rounds stop; a prior alone decides nothing."""
    series = {0: [100.0, 100.0, 100.0], 1: [95.0, 135.0, 115.0]}  # 0.95-1.35x: open alone
    visits = [rounds.Visit(s, r, s, window(series[s][r]), None) for r in range(3) for s in range(2)]
    found = rounds.Rounds(2, 0, [[0, 1]] * 3, visits, "budget", 1.0, None, 0.10)
    (alone,) = rounds.compare_all(found, 0.10)
    assert not alone.settled and alone.runs == 1
    earlier = rounds.Comparison(1, 3, 1.16, 0.83, 1.62, 0.95, "inconclusive", 0.10)  # open there too
    prior = {1: [earlier.interval]}
    (both,) = rounds.compare_all(found, 0.10, prior=prior)
    assert both.runs == 2 and both.rounds == 6 and both.settled and both.rules_out_gain
    assert both.low > alone.low and both.high < alone.high  # more evidence, a narrower interval
    assert rounds.race(0.10, prior=prior)(found) == {1} and rounds.race(0.10)(found) == set()
    assert rounds.all_settled(0.10, prior=prior)(found) and not rounds.all_settled(0.10)(found)
    one = rounds.Rounds(2, 0, [[0, 1]], visits[:2], "budget", 1.0, None, 0.10)
    (first,) = rounds.compare_all(one, 0.10, prior=prior)
    assert first.runs == 1 and first.rounds == 1 and not first.settled  # no interval here yet
