"""Randomized multiple interleaved trials: settings measured in rounds, each in a random order.

Measuring A, then B, then C puts every drift of the host (another tenant, a warming cache, a
throttled core) on one of them (Abedi & Brecht 2017 measured a false 38 % difference between
identical systems that way). Here every round visits each setting once, in an order drawn from
a seeded generator (recorded), so drift and start-up bias fall on all settings alike, and each
round gives one paired comparison (perfstudy.measure.intervals).

A *visit* is one window on one setting (the caller's function: for the training, a fresh
pipeline whose buffered batches are drained before its steps count); it returns the window's
mean step, or None when the window never reached a steady state. Around every visit the
interference monitor (perfstudy.measure.interference) reads what else used the machine; a
visit over the limit is dropped and measured again, once, in the same round (the second
reading is kept whatever it says, and flagged).

A race (F-Race, Hoeffding races): before each round, `leaves(rounds so far)` names the settings
already settled (the verification's: faster, or their gain ruled out, or unable to beat the
fastest by the margin; a sweep's: decidedly slower than another); they are not visited again,
and the rounds go on for the ones still open (the reference, setting 0, always stays). Their
comparisons keep the rounds they had (`paired`: the rounds both were measured in). Racing keeps
the family's error rate: a settled verdict is the one it would have been read with anyway, and
the calibration (scripts/compare_decision_rules.py) simulates the rounds as raced.

Rounds are added until `decided(rounds so far)` says every comparison is settled (sequential
stopping, from `min_rounds` on), `max_rounds` are done, or the next round would not fit in
`budget_s` (judged by the last round's cost; the first `min_rounds` always run: fewer cannot
make an interval). The budget stretches to `stretch_s` only while `needed(rounds so far)`, the
rounds that would settle the open comparison that can change the answer (rounds_to_settle),
fit in it: a comparison a few rounds short of an answer gets them, one that sits on the edge of
the band (or needs more than the stretch holds) stops at the budget. Stretching on an estimate
of the rounds needed, never on how close to "significant" the interval is, keeps it from being
"rerun until significant" (benchstat's warning); the A/A calibration (scripts/decision_benchmark.py)
measures what it does to the false "changed" rate.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfstudy.common.records import doc
from perfstudy.measure import interference
from perfstudy.measure.interference import Interference
from perfstudy.measure.intervals import (
    LEVEL,
    Outcome,
    RatioInterval,
    outcome,
    pooled,
    ratio_interval,
    rounds_for,
    rounds_for_precision,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Window:
    """What one visit measured (the caller's window; the engine adds where and when)."""

    step_ms: float | None = doc("the window's step over its counted stretch "
                                "(None: it never reached a steady state)")
    steps: int = doc("steps the window ran, start-up and drain included")
    steps_counted: int = doc("steps in the counted stretch (whole pipeline cycles)")
    wall_s: float = doc("the window's wall time, pipeline start-up included")
    step_ms_each: list[float] = doc("every step of the window (ms)", default_factory=list)
    phases: list[str] = doc("each step's phase: startup | drain | measured", default_factory=list)
    drain_rule: str = doc("which steps were counted and why (whole pipeline cycles)", default="")
    gap_share: float | None = doc("share of the counted steps spent waiting for data",
                                  default=None)


@dataclass(frozen=True)
class Visit:
    """One setting measured once in one round."""

    setting: int = doc("the setting's index in the plan")
    round: int = doc("the round (0-based)")
    position: int = doc("its place in the round's random order")
    window: Window = doc("what it measured")
    interference: Interference | None = doc("what else used the machine meanwhile")
    dropped: str | None = doc("why it was dropped and measured again (None: kept)", default=None)


@dataclass(frozen=True)
class Rounds:
    """Every visit of an interleaved measurement, and why it stopped."""

    settings: int = doc("how many settings each round visits")
    seed: int = doc("the seed of the rounds' random orders")
    orders: list[list[int]] = doc("each round's order of setting indices")
    visits: list[Visit] = doc("every visit, dropped ones included, in the order run")
    stopped: str = doc("decided | max_rounds | budget: why no further round was run")
    wall_s: float = doc("wall time of all rounds")
    budget_s: float | None = doc("the wall time the rounds could use (None: unlimited)")
    max_interference: float = doc("the share of CPU time others may take before a window is "
                                  "measured again")
    min_rounds: int = doc("rounds run whatever the budget says", default=3)
    stretched: int = doc("rounds run past budget_s because the rounds still needed fit in "
                         "the stretch", default=0)

    def kept(self) -> list[Visit]:
        return [v for v in self.visits if v.dropped is None]

    def series(self, setting: int) -> list[float | None]:
        """The setting's mean step per round (None: not steady in that round)."""
        out: list[float | None] = [None] * len(self.orders)
        for v in self.kept():
            if v.setting == setting:
                out[v.round] = v.window.step_ms
        return out

    def paired(self, reference: int, candidate: int) -> tuple[list[float], list[float]]:
        """Both settings' steps over the rounds where both were steady."""
        pairs = [(a, b) for a, b in zip(self.series(reference), self.series(candidate), strict=True)
                 if a is not None and b is not None]
        return [a for a, _ in pairs], [b for _, b in pairs]

    def dropped(self) -> list[Visit]:
        return [v for v in self.visits if v.dropped is not None]

    def disturbed_kept(self, limit: float | None = None) -> int:
        """Kept visits that were over the limit too (their second reading)."""
        limit = self.max_interference if limit is None else limit
        return sum(1 for v in self.kept() if v.interference and v.interference.reason(limit))


VisitFn = Callable[[int, int], Window]  # (setting index, round) -> its window
MonitorFn = Callable[[], interference.Load]


@dataclass
class Schedule:
    """How many rounds, within what: the verification's (or a benchmark's) protocol."""

    settings: int
    seed: int
    min_rounds: int = 3
    max_rounds: int = 10
    budget_s: float | None = None
    max_interference: float = 0.10
    decided: Callable[[Rounds], bool] = field(default=lambda rounds: False)
    # past budget_s, rounds go on up to stretch_s while needed(rounds) (the total rounds that
    # would settle the open comparison that can change the answer; None: unknown or never) fits
    stretch_s: float | None = None
    needed: Callable[[Rounds], int | None] = field(default=lambda rounds: None)
    # a race: the settings that leave the rounds (settled; never the reference, setting 0)
    leaves: Callable[[Rounds], set[int]] = field(default=lambda rounds: set())


def _visit(visit: VisitFn, setting: int, round_: int, position: int, limit: float,
           monitor: MonitorFn | None) -> list[Visit]:
    """The setting measured once, and again if the first reading was disturbed."""
    out: list[Visit] = []
    for attempt in range(2):
        before = monitor() if monitor else None
        window = visit(setting, round_)
        seen = interference.between(before, monitor()) if monitor else None
        reason = seen.reason(limit) if seen else None
        if reason and attempt == 0:
            log.info("  round %d setting %d disturbed: %s; measured again", round_ + 1, setting, reason)
            out.append(Visit(setting, round_, position, window, seen, dropped=reason))
            continue
        out.append(Visit(setting, round_, position, window, seen))
        break
    return out


def run(visit: VisitFn, schedule: Schedule, monitor: MonitorFn | None = interference.snapshot,
        clock: Callable[[], float] = time.perf_counter) -> Rounds:
    """Measure every setting in rounds of random order until decided, max_rounds or budget."""
    rng = np.random.default_rng(schedule.seed)
    started = clock()
    orders: list[list[int]] = []
    visits: list[Visit] = []
    last_round_s = 0.0
    stopped = "max_rounds"
    stretched = 0

    def so_far(stop: str) -> Rounds:
        return Rounds(schedule.settings, schedule.seed, [list(o) for o in orders], list(visits),
                      stop, clock() - started, schedule.budget_s, schedule.max_interference,
                      schedule.min_rounds, stretched)

    for round_ in range(schedule.max_rounds):
        spent = clock() - started
        if (round_ >= schedule.min_rounds and schedule.budget_s is not None
                and spent + last_round_s > schedule.budget_s):
            if not _stretch(schedule, so_far("budget"), round_, spent, last_round_s):
                stopped = "budget"
                break
            stretched += 1
        # no verdict before min_rounds (fewer make no interval worth the name)
        gone = (schedule.leaves(so_far("decided")) - {0}
                if len(orders) >= schedule.min_rounds else set())
        still = [i for i in range(schedule.settings) if i not in gone]
        if gone:
            log.info("settled, out of the race: settings %s", sorted(gone))
        order = [still[int(i)] for i in rng.permutation(len(still))]
        orders.append(order)
        round_started = clock()
        for position, setting in enumerate(order):
            visits.extend(_visit(visit, setting, round_, position, schedule.max_interference,
                                 monitor))
        last_round_s = clock() - round_started
        log.info("round %d of at most %d done in %.0f s (order %s)", round_ + 1,
                 schedule.max_rounds, last_round_s, order)
        if round_ + 1 >= schedule.min_rounds and schedule.decided(so_far("decided")):
            stopped = "decided"
            break
    return so_far(stopped)


def _stretch(schedule: Schedule, rounds: Rounds, done: int, spent: float, round_s: float) -> bool:
    """Past the budget: does the estimate of the rounds still needed fit in the stretch?"""
    if schedule.stretch_s is None:
        return False
    needed = schedule.needed(rounds)
    if needed is None or needed <= done or needed > schedule.max_rounds:
        return False
    fits = spent + (needed - done) * round_s <= schedule.stretch_s
    log.info("budget spent after %d rounds; %d rounds would settle it: %s", done, needed,
             "stretched" if fits else "past the stretch, stopped")
    return fits


@dataclass(frozen=True)
class Comparison:
    """One setting against the reference over the paired rounds: ratio, interval, outcome."""

    setting: int = doc("the setting's index in the plan")
    rounds: int = doc("paired rounds behind it (both settings steady)")
    ratio: float | None = doc("its step / the reference's, geometric mean over the rounds "
                              "(None: no paired round)")
    low: float | None = doc("the interval's low end (None below 2 rounds)")
    high: float | None = doc("the interval's high end (None below 2 rounds)")
    level: float = doc("the interval's coverage")
    outcome: str = doc("faster | slower | equivalent | inconclusive, at the margin")
    margin: float = doc("the gain that decides (a ratio beyond 1 / (1 + margin) or 1 + margin)")
    rounds_needed: int | None = doc("about how many rounds would decide it, when inconclusive",
                                    default=None)
    runs: int = doc("the runs whose rounds it pools (2: this run's and an earlier run's of the "
                    "same pair, verify.reuse_from)", default=1)

    @property
    def interval(self) -> RatioInterval | None:
        if self.ratio is None:
            return None
        return RatioInterval(self.rounds, self.ratio, self.low or math.nan, self.high or math.nan,
                             self.level, math.nan)

    @property
    def decided(self) -> bool:
        return self.outcome != Outcome.INCONCLUSIVE.value

    @property
    def rules_out_gain(self) -> bool:
        """Its whole interval is short of a gain of the margin: it cannot be faster by it."""
        return self.low is not None and self.low >= 1 / (1 + self.margin)

    @property
    def settled(self) -> bool:
        """What it means for a recommendation is known: faster by the margin, or it cannot be
        (more rounds would not change which setting is recommended)."""
        return self.outcome == Outcome.FASTER.value or self.rules_out_gain

    def words(self) -> str:
        """'0.81x (0.74-0.88, 95 %, 6 rounds)'; pooled: '... 6 rounds of 2 runs)'."""
        if not self.interval:
            return "not measured in any paired round"
        text = self.interval.words()
        return text[:-1] + f" of {self.runs} runs)" if self.runs > 1 and text.endswith("rounds)") else text


# Earlier runs' intervals of a setting against this run's reference (the same pair of
# settings, measured in their own rounds): setting index -> intervals (verify.reuse_from)
Prior = Mapping[int, Sequence[RatioInterval]]


def compare(rounds: Rounds, reference: int, candidate: int, margin: float,
            level: float = LEVEL, prior: Sequence[RatioInterval] = ()) -> Comparison:
    """The candidate's paired ratio to the reference over the rounds, and its outcome. With
    `prior` (earlier runs' intervals of the same pair), once these rounds make an interval of
    their own it is pooled with theirs (random effects, perfstudy.measure.intervals.pooled):
    more evidence, the spread between the runs a variance component, never a union."""
    ref, cand = rounds.paired(reference, candidate)
    if not ref:
        return Comparison(candidate, 0, None, None, None, level, Outcome.INCONCLUSIVE.value, margin)
    found, runs = ratio_interval(ref, cand, level), 1
    earlier = [p for p in prior if p.rounds >= 2 and math.isfinite(p.low)]
    if earlier and found.rounds >= 2 and math.isfinite(found.low):
        both = pooled([found, *earlier], level)
        found, runs = both.interval, both.runs
    decided = outcome(found, margin)
    finite = math.isfinite(found.low)
    return Comparison(candidate, found.rounds, found.ratio, found.low if finite else None,
                      found.high if finite else None, level, decided.value, margin,
                      None if decided.decided else rounds_for(found, margin, level), runs)


def compare_all(rounds: Rounds, margin: float, reference: int = 0,
                level: float = LEVEL, prior: Prior | None = None) -> list[Comparison]:
    """Every other setting against the reference (each pooled with its `prior`, where given)."""
    prior = prior or {}
    return [compare(rounds, reference, i, margin, level, prior.get(i, ()))
            for i in range(rounds.settings) if i != reference]


def all_decided(margin: float, reference: int = 0, level: float = LEVEL) -> Callable[[Rounds], bool]:
    """A stopping rule: every setting's comparison with the reference is decided."""
    return lambda rounds: all(c.decided for c in compare_all(rounds, margin, reference, level))


def settled_settings(comparisons: list[Comparison], margin: float) -> set[int]:
    """The candidates whose comparison can no longer change the answer: settled (faster, or
    their gain ruled out), or unable to beat the fastest "faster" one by the margin (the low
    end of their interval at or above its ratio / (1 + margin))."""
    out = {c.setting for c in comparisons if c.settled}
    faster = [c.ratio for c in comparisons if c.outcome == Outcome.FASTER.value and c.ratio]
    if faster:
        bar = min(faster) / (1 + margin)
        out |= {c.setting for c in comparisons if c.low is not None and c.low >= bar}
    return out


def race(margin: float, reference: int = 0, level: float = LEVEL,
         prior: Prior | None = None) -> Callable[[Rounds], set[int]]:
    """The verification's race: the settled candidates leave the rounds (settled_settings;
    `prior`: earlier runs' rounds of a pair pooled with these)."""
    return lambda rounds: settled_settings(compare_all(rounds, margin, reference, level, prior), margin)


def all_settled(margin: float, reference: int = 0, level: float = LEVEL,
                prior: Prior | None = None) -> Callable[[Rounds], bool]:
    """The verification's stopping rule: every candidate is settled (settled_settings)."""
    def done(rounds: Rounds) -> bool:
        comparisons = compare_all(rounds, margin, reference, level, prior)
        return len(settled_settings(comparisons, margin)) == len(comparisons)
    return done


def rounds_to_settle(margin: float, reference: int = 0, level: float = LEVEL,
                     prior: Prior | None = None) -> Callable[[Rounds], int | None]:
    """The rounds that would settle the open comparison that can change the answer: the most
    promising (lowest ratio) of those still open. Read "faster", it becomes the pick and any
    candidate that cannot beat it by the margin leaves; read otherwise, the next most promising
    is followed the same way on the next check. None when it cannot say (no spread yet, or an
    estimate on the band's edge). Until 2026-12-06 the most any open comparison needed: one
    candidate near 1.0x, needing many rounds, kept the stretch from deciding another that one
    more round would have (mixed_cost, docs/measurement.md)."""
    def needed(rounds: Rounds) -> int | None:
        comparisons = compare_all(rounds, margin, reference, level, prior)
        done = settled_settings(comparisons, margin)
        open_ = [c for c in comparisons if c.setting not in done and c.ratio is not None]
        if not open_:
            return None
        best = min(open_, key=lambda c: c.ratio)
        if best.rounds_needed is None:
            return None
        # paired rounds may be fewer than rounds run (a window not steady pairs nothing)
        return len(rounds.orders) + best.rounds_needed - best.rounds
    return needed


# A target: what one paired ratio's interval still needs, as the rounds in all that would
# meet it at its spread so far (<= its rounds: met; None: it cannot say, e.g. no spread yet).
Target = Callable[[RatioInterval], int | None]


def precision_target(precision: float, level: float = LEVEL) -> Target:
    """Known to +-`precision` (log; Criterion's kind of stop: measure until the estimate is
    this sure). It looks at the interval's width, never at where it lies, so it cannot be
    "rerun until significant"."""
    return lambda interval: rounds_for_precision(interval, precision, level)


def bounds_target(bounds: Sequence[float], level: float = LEVEL) -> Target:
    """On one side of each bound a claim judges the ratio by (e.g. a remedy's "5x"): a
    sequential test of the same kind as the 10 % band's, calibrated the same way. An estimate
    within 1 % of a bound is met as it is: no count of rounds would decide it."""
    def need(interval: RatioInterval) -> int | None:
        if not math.isfinite(interval.low):
            return None
        counts = [rounds_for_precision(interval, abs(math.log(interval.ratio / b)), level)
                  for b in bounds if interval.low <= b <= interval.high
                  and abs(math.log(interval.ratio / b)) >= 0.01]
        if any(c is None for c in counts):
            return None
        return max(counts, default=interval.rounds)
    return need


def _intervals(rounds: Rounds, reference: int, level: float,
               only: frozenset[int] | None = None) -> dict[int, RatioInterval]:
    """Every other setting's paired interval to the reference (those with a paired round;
    `only`: of these settings alone)."""
    out = {}
    for setting in range(rounds.settings):
        if only is not None and setting not in only:
            continue
        ref, cand = rounds.paired(reference, setting) if setting != reference else ([], [])
        if ref:
            out[setting] = ratio_interval(ref, cand, level)
    return out


def target_met(target: Target, reference: int = 0, level: float = LEVEL,
               only: frozenset[int] | None = None) -> Callable[[Rounds], bool]:
    """A stopping rule: every setting's ratio to the reference meets the target (`only`: the
    target is these settings', e.g. the model's pick alone)."""
    def done(rounds: Rounds) -> bool:
        found = _intervals(rounds, reference, level, only)
        return bool(found) and all(_met(target, i) for i in found.values())
    return done


def target_leaves(target: Target, reference: int = 0, level: float = LEVEL,
                  only: frozenset[int] | None = None) -> Callable[[Rounds], set[int]]:
    """The settings whose ratio meets the target already (free to leave a race); with `only`,
    every other setting too (the target does not hold them)."""
    def leaves(rounds: Rounds) -> set[int]:
        met = {s for s, i in _intervals(rounds, reference, level, only).items() if _met(target, i)}
        return met if only is None else met | (set(range(rounds.settings)) - set(only))
    return leaves


def target_needed(target: Target, reference: int = 0, level: float = LEVEL,
                  only: frozenset[int] | None = None) -> Callable[[Rounds], int | None]:
    """The rounds that would bring every ratio (`only`: these settings') to the target at its
    spread so far (None when one cannot say)."""
    def needed(rounds: Rounds) -> int | None:
        found = _intervals(rounds, reference, level, only)
        counts = [(target(i), i) for i in found.values()]
        if not counts or any(c is None for c, _ in counts):
            return None
        return max(len(rounds.orders) + c - i.rounds for c, i in counts)
    return needed


def _met(target: Target, interval: RatioInterval) -> bool:
    needed = target(interval)
    return needed is not None and needed <= interval.rounds


def every(*rules: Callable[[Rounds], bool]) -> Callable[[Rounds], bool]:
    """Stop when every rule says so (e.g. settled against the band and precise)."""
    return lambda rounds: all(rule(rounds) for rule in rules)


def most_needed(*estimates: Callable[[Rounds], int | None]) -> Callable[[Rounds], int | None]:
    """The largest of the estimates of rounds still needed that can say one (None: none can)."""
    def needed(rounds: Rounds) -> int | None:
        found = [n for n in (e(rounds) for e in estimates) if n is not None]
        return max(found) if found else None
    return needed


def both_leave(*rules: Callable[[Rounds], set[int]]) -> Callable[[Rounds], set[int]]:
    """A race under several stop rules: a setting leaves the rounds once every rule lets it go
    (settled against the band and its target met), never while one still needs its rounds."""
    def leaves(rounds: Rounds) -> set[int]:
        sets = [rule(rounds) for rule in rules]
        return set.intersection(*sets) if sets else set()
    return leaves
