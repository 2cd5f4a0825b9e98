"""Which settings of a sweep are within a margin of the best, decided from interleaved rounds.

A sweep measures every setting of one operator in rounds (perfstudy.measure.rounds). "Setting s
is within m of the best" means: for every other setting t, step(s) / step(t) <= 1 + m. Over the
paired rounds each ratio s / t has its interval (perfstudy.measure.intervals), so:

    holds           every interval s / t lies wholly at or below 1 + m;
    does not hold   some interval s / t lies wholly above 1 + m (s is slower than t by more);
    undecided       otherwise (more rounds may decide it).

"Holds" needs all of its k - 1 comparisons (an intersection: each at the 95 % level keeps the
whole at 95 %); "does not hold" needs any one of them, so its intervals are widened for the
k - 1 chances (Bonferroni: each at 1 - 0.05 / (k - 1)). No setting is called "the best" from a
point estimate: the fastest one's own place is decided the same way as every other's.

The stopping rule `all_placed` ends a sweep's rounds once every setting is placed (holds or does
not hold). A sweep is a race (F-Race): a setting that does not hold leaves the rounds
(`eliminated`), and "holds" is then judged against the settings still in it (an eliminated one
is slower than some survivor by the margin); the rounds go on for the settings still undecided.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from perfstudy.common.records import doc
from perfstudy.measure.intervals import LEVEL, MedianInterval, RatioInterval, median_interval, ratio_interval
from perfstudy.measure.rounds import Rounds


class Near(StrEnum):
    """A setting's place against the best of its sweep (the word every table shows)."""

    HOLDS = "holds"
    FAILS = "does not hold"
    UNDECIDED = "undecided"
    NOT_SWEPT = "not swept"

    @property
    def decided(self) -> bool:
        return self in (Near.HOLDS, Near.FAILS)


@dataclass(frozen=True)
class Placed:
    """One swept setting: its step over the rounds and whether it is within the margin of the best."""

    setting: int = doc("the setting's index in the sweep")
    step: MedianInterval | None = doc("its median step over the rounds, with the median's "
                                      "interval (None: never steady)")
    vs_fastest: RatioInterval | None = doc("its step over the fastest setting's (geometric mean "
                                           "of the paired rounds), with its interval")
    near: Near = doc("within the margin of the best: holds | does not hold | undecided")
    margin: float = doc("the margin (a share: 0.10)")


def _pair(rounds: Rounds, mine: int, other: int, level: float) -> RatioInterval | None:
    ref, cand = rounds.paired(other, mine)
    return ratio_interval(ref, cand, level) if ref else None


def place(rounds: Rounds, margin: float, level: float = LEVEL) -> list[Placed]:
    """Every setting of the sweep placed against the best (see the module's doc)."""
    k = rounds.settings
    steps = {}
    for s in range(k):
        values = [v for v in rounds.series(s) if v is not None]
        steps[s] = median_interval(values, level) if values else None
    # a setting never steady has no step: it is undecided itself and no rival of the others
    ranked = [s for s in range(k) if steps[s] is not None]
    wide = 1 - (1 - level) / max(len(ranked) - 1, 1)  # "does not hold": any of the chances
    fastest = min(ranked, key=lambda s: steps[s].median) if ranked else None
    failing = {s for s in ranked if _fails(rounds, s, ranked, margin, wide)}
    out = []
    for s in range(k):
        near = Near.UNDECIDED
        if steps[s] is not None and len(ranked) > 1:
            holds = True
            for t in ranked:
                if t == s or t in failing:  # out of the race: slower than another by the margin
                    continue
                strict = _pair(rounds, s, t, level)
                if strict is None or not math.isfinite(strict.high) or strict.high > 1 + margin:
                    holds = False
            near = Near.FAILS if s in failing else Near.HOLDS if holds else Near.UNDECIDED
        elif steps[s] is not None:
            near = Near.HOLDS  # a sweep of one setting: it is its own best
        versus = None
        if fastest is not None and steps[s] is not None:
            versus = (_pair(rounds, s, fastest, level) if s != fastest
                      else RatioInterval(steps[s].n, 1.0, 1.0, 1.0, level, 0.0))
        out.append(Placed(s, steps[s], versus, near, margin))
    return out


def _fails(rounds: Rounds, s: int, ranked: list[int], margin: float, wide: float) -> bool:
    """Some interval s / t lies wholly above 1 + margin (at the widened level)."""
    for t in ranked:
        loose = _pair(rounds, s, t, wide) if t != s else None
        if loose is not None and math.isfinite(loose.low) and loose.low > 1 + margin:
            return True
    return False


def eliminated(margin: float, level: float = LEVEL) -> Callable[[Rounds], set[int]]:
    """A sweep's race: the settings that do not hold leave the rounds (never setting 0, the
    rounds' reference)."""
    return lambda rounds: {p.setting for p in place(rounds, margin, level)
                           if p.near is Near.FAILS} - {0}


def all_placed(margin: float, level: float = LEVEL) -> Callable[[Rounds], bool]:
    """A sweep's stopping rule: every setting holds or does not hold."""
    return lambda rounds: all(p.near.decided for p in place(rounds, margin, level))
