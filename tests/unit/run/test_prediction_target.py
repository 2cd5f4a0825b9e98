"""verify.prediction_bound: a claim on the model's prediction of its pick keeps the
verification's rounds going until the pick's measured ratio is on one side of each bound that
the claim's error bound makes of the prediction (fake windows, nothing timed)."""

from types import SimpleNamespace

import pytest
from fake_host import quiet_monitor

from perfstudy.measure import rounds
from perfstudy.measure.rounds import Schedule, Window
from perfstudy.run import verify
from perfstudy.run.verify_record import Planned

OWN_MS = 100.0
# the pick reads ~0.80x of the own setting, +-6 % round to round; the third setting is the own's
WOBBLE = [1.0, 1.06, 0.94, 1.05, 0.95, 1.02, 0.98, 1.04, 0.96, 1.0, 1.01, 0.99]


def _plan(pick_predicted_ms: float) -> list[Planned]:
    return [Planned("current", 0, {"pipeline.num_parallel_workers": 1}, "1 worker", OWN_MS, "pipeline", False),
            Planned("candidate", 1, {"pipeline.num_parallel_workers": 2}, "2 workers", pick_predicted_ms,
                    "cpu", True),
            Planned("candidate", 2, {"pipeline.num_parallel_workers": 3}, "3 workers", pick_predicted_ms,
                    "cpu", False)]


def _visit(setting, round_):
    return Window({0: OWN_MS, 1: 80.0 * WOBBLE[round_], 2: OWN_MS * 1.01}[setting], 6, 4, 1.0)


def _run(bound: float, pick_predicted_ms: float = 70.0):
    decided, needed, leaves = verify._rules(SimpleNamespace(prediction_bound=bound), _plan(pick_predicted_ms),
                                            OWN_MS)
    return rounds.run(_visit, Schedule(3, seed=2, min_rounds=3, max_rounds=12, decided=decided,
                                       needed=needed, leaves=leaves), quiet_monitor())


def test_the_bounds_are_the_ratios_at_which_the_prediction_errs_by_the_bound():
    # predicted 70 ms against the own 100 ms: relative 0.7; an error relative / ratio - 1 of
    # +-20 % is the ratio at 0.7 / 1.2 and 0.7 / 0.8
    pick, bounds = verify.prediction_bounds(0.2, _plan(70.0), OWN_MS)
    assert pick == 1 and bounds == pytest.approx([0.7 / 1.2, 0.875])
    assert verify.prediction_bounds(0.0, _plan(70.0), OWN_MS) is None  # not asked
    assert verify.prediction_bounds(0.2, _plan(70.0), float("nan")) is None  # no own step
    no_pick = [p if p.rank == 0 else Planned(p.role, p.rank, p.settings, p.label, p.predicted_ms,
                                             p.predicted_binding, False) for p in _plan(70.0)]
    assert verify.prediction_bounds(0.2, no_pick, OWN_MS) is None


def test_the_pick_is_measured_until_its_prediction_is_decided_and_the_others_leave_when_settled():
    band = _run(0.0)
    assert band.stopped == "decided" and len(band.orders) == 3  # the band alone: 3 rounds
    pick = rounds.compare_all(band, 0.10)[0]
    assert pick.outcome == "faster" and pick.low < 0.875 < pick.high  # the claim undecided

    found = _run(0.2)
    pick, other = rounds.compare_all(found, 0.10)
    assert found.stopped == "decided" and 3 < len(found.orders) < 12
    assert pick.high < 0.875  # decided: the prediction errs by more than 20 %
    assert all(1 in order for order in found.orders)  # the pick in every round
    assert all(sorted(order) == [0, 1] for order in found.orders[3:])  # the other left once settled
    assert other.settled

    near = _run(0.2, pick_predicted_ms=80.0)  # predicted right: bounds 0.667 and 1.0, far away
    assert near.stopped == "decided" and len(near.orders) == 3


def test_the_remedys_rounds_go_on_until_the_gain_is_decided_against_the_predictions_bounds():
    """perfstudy.run.remedy_rounds: the gains at which a claim on the source's prediction turns
    (remedy_bounds from the orchestrator) are decided beside the claims' "5x": with one of them
    inside the first rounds' interval, the rounds go on until it is not."""
    from perfstudy.run import remedy_rounds

    source = [600.0 * w for w in WOBBLE]  # setting 1, the source: ~6x the prepared 100 ms

    def visit(setting, round_):
        return Window(100.0 if setting == 0 else source[round_], 6, 4, 1.0)

    def race(extra):
        ver = SimpleNamespace(against_source_bounds=[5.0], against_source_precision=0.0)
        decided, needed, leaves = remedy_rounds._rules(ver, extra)
        return rounds.run(visit, Schedule(2, seed=2, min_rounds=3, max_rounds=12, decided=decided,
                                          needed=needed, leaves=leaves), quiet_monitor())

    alone = race(())
    gain = rounds.compare_all(alone, 0.10, reference=0)[0]
    assert alone.stopped == "decided" and len(alone.orders) == 3 and gain.low > 5.0
    assert gain.low < 6.3 < gain.high  # a prediction's bound left open after 3 rounds
    longer = race((6.3,))
    gain = rounds.compare_all(longer, 0.10, reference=0)[0]
    assert longer.stopped == "decided" and 3 < len(longer.orders) <= 12
    assert not gain.low < 6.3 < gain.high  # decided against it
