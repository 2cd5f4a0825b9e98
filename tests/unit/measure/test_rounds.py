"""The interleaved-rounds engine with fake windows, a fake clock and a fake load monitor:
orders, re-measuring a disturbed window, sequential stopping and the budget (nothing timed)."""

import itertools

import pytest

from perfstudy.measure import interference, rounds
from perfstudy.measure.interference import Interference, Load
from perfstudy.measure.rounds import Schedule, Window


def window(step_ms):
    return Window(step_ms, 6, 4, 1.0)


def quiet_monitor():
    """A machine nobody else uses: all busy time is ours."""
    state = {"t": 0.0}

    def read():
        state["t"] += 1.0
        return Load(state["t"], 2 * state["t"], state["t"], 0.0, state["t"], None)
    return read


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
