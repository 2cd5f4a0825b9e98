"""Which settings of a sweep are within 10 % of the best: decided from paired rounds, on
synthetic step series (nothing timed)."""

import itertools

import numpy as np

from perfstudy.measure import nearbest, rounds
from perfstudy.measure.nearbest import Near
from perfstudy.measure.rounds import Schedule, Window


def swept(series_by_setting, seed=3):
    """Rounds whose setting i measured series_by_setting[i][round] (None: not steady)."""
    k, n = len(series_by_setting), len(series_by_setting[0])

    def visit(setting, round_):
        step = series_by_setting[setting][round_]
        return Window(step, 6, 4 if step else 0, 1.0)
    return rounds.run(visit, Schedule(k, seed=seed, min_rounds=n, max_rounds=n), monitor=None)


def noisy(base, n, sd, seed):
    """n rounds of a setting around `base` with a shared per-round drift (paired) and its own noise."""
    rng = np.random.default_rng(seed)
    return [float(base * np.exp(rng.normal(0, sd))) for _ in range(n)]


def test_clear_sweep_places_every_setting():
    drift = np.exp(np.random.default_rng(0).normal(0, 0.2, 8))  # the host drifts 20 % per round
    fast = [800.0 * d for d in drift]
    close = [830.0 * d for d in drift]  # 3.75 % slower: within 10 %
    slow = [1600.0 * d for d in drift]
    placed = nearbest.place(swept([slow, fast, close]), 0.10)
    assert [p.near for p in placed] == [Near.FAILS, Near.HOLDS, Near.HOLDS]
    assert placed[1].vs_fastest.ratio == 1.0 and abs(placed[0].vs_fastest.ratio - 2.0) < 1e-9
    assert placed[2].step.median == np.median(close)
    # the drift is shared by the round, so pairing removes it: a decided answer from 8 rounds
    assert nearbest.all_placed(0.10)(swept([slow, fast, close]))


def test_an_effect_inside_the_noise_is_undecided_not_guessed():
    """Two settings 8 % apart (both truly within 10 % of the best) under 25 % unpaired noise,
    3 rounds, 60 seeds: mostly undecided, never (beyond the interval's own error) "does not hold"."""
    places = []
    for seed in range(60):
        a, b = noisy(1000.0, 3, 0.25, seed=seed), noisy(1080.0, 3, 0.25, seed=1000 + seed)
        found = swept([a, b])
        places += [p.near for p in nearbest.place(found, 0.10)]
        if any(p is Near.UNDECIDED for p in places[-2:]):
            assert not nearbest.all_placed(0.10)(found)
    assert places.count(Near.UNDECIDED) > len(places) / 2
    assert places.count(Near.FAILS) <= 0.05 * len(places)


def test_does_not_hold_needs_the_wider_interval_of_several_chances():
    """Setting 0 is 14 % slower than 1 with some noise: against one rival at 95 % it is placed;
    against many rivals the Bonferroni-widened interval may leave it undecided, never wrong."""
    rng = np.random.default_rng(7)
    base = [1000.0 * float(np.exp(rng.normal(0, 0.02))) for _ in range(5)]
    slower = [b * 1.14 * float(np.exp(rng.normal(0, 0.02))) for b in base]
    two = nearbest.place(swept([slower, base]), 0.10)
    assert two[0].near in (Near.FAILS, Near.UNDECIDED) and two[1].near is Near.HOLDS
    many = nearbest.place(swept([slower, base, base, base, base]), 0.10)
    assert many[0].near is not Near.HOLDS


def test_a_setting_never_steady_is_undecided_and_does_not_block_the_others():
    fast = [800.0, 810.0, 790.0]
    placed = nearbest.place(swept([[None, None, None], fast, [1600.0, 1620.0, 1590.0]]), 0.10)
    assert placed[0].near is Near.UNDECIDED and placed[0].step is None
    assert placed[1].near is Near.HOLDS and placed[2].near is Near.FAILS


def test_one_setting_is_its_own_best():
    assert nearbest.place(swept([[500.0, 510.0]]), 0.10)[0].near is Near.HOLDS


def test_a_sweep_races_a_slow_setting_out_and_finishes_the_close_ones():
    """The 2x slower setting leaves once it does not hold; the two close ones keep being
    measured, and "holds" is judged among the settings still in the race."""
    drift = itertools.cycle(np.exp(np.random.default_rng(1).normal(0, 0.05, 7)))
    spread = itertools.cycle([1.0, 1.03, 0.98, 1.01])
    calls = []

    def visit(setting, round_):
        calls.append(setting)
        d = next(drift)
        return Window({0: 800.0, 1: 1600.0, 2: 820.0 * next(spread)}[setting] * d, 6, 4, 1.0)
    found = rounds.run(visit, Schedule(3, seed=4, min_rounds=3, max_rounds=12,
                                       decided=nearbest.all_placed(0.10),
                                       leaves=nearbest.eliminated(0.10)), monitor=None)
    placed = nearbest.place(found, 0.10)
    assert placed[1].near is Near.FAILS and calls.count(1) < calls.count(0)
    assert [p.near for p in placed] == [Near.HOLDS, Near.FAILS, Near.HOLDS]
