"""How sure a comparison of two timings is: paired log ratios, their interval, a 3-way outcome.

The unit of replication is the *round* (Kalibera & Jones 2013: repeat at the level where the
variance arises; Abedi & Brecht 2017: randomized multiple interleaved trials). In each round
every setting is measured once, in a random order, so drift and start-up bias fall on all of
them alike; the round's log ratio log(candidate / reference) is then one independent draw.
Steps inside one window are not independent (a slow step lets the queue fill and the next ones
are fast), so they are never the unit here: a window contributes one number, its mean step.

Over n rounds the mean log ratio has a Student-t interval (n - 1 degrees of freedom). The
outcome is decided against a margin m (a gain that matters, 10 %), in the ratio's own terms
(r = candidate step / reference step; a gain g means r = 1 / (1 + g)), by the rule its
calibration chose (perfstudy.measure.decision_rules.CHOSEN, "half" at 95 %):
    faster        the estimate below 1 / (1 + m) and the whole interval below 1 / (1 + m/2)
                  (a gain of at least m/2 for sure, estimated at m or more)
    slower        mirrored: the estimate above 1 + m, the whole interval above 1 + m/2
    equivalent    the whole interval inside [1 / (1 + m), 1 + m]
    inconclusive  otherwise: more rounds may decide it
(asv's rule asks the estimate to pass the step and the difference to be significant, Criterion's
the whole interval beyond a noise band; scripts/compare_decision_rules.py set both, and today's
"whole interval beyond m", on the recorded rounds: this one decides most while a family of
candidates no different from the reference reads "changed" in <= 5 % of studies. The
equivalence outcome is the two one-sided tests' reading of the interval.)

Where several processes measured the same pair (the baseline's rounds and the tuned arm's, or a
study's repeats), their estimates are pooled, never their intervals joined: each run's mean log
ratio with its within-run variance, and the variance between runs as a component
(DerSimonian-Laird random effects): runs that agree narrow the interval, runs that disagree by
more than their rounds' noise widen it by that disagreement (`pooled`).

Medians of a few repeats (a claim measured in 3 runs of a study) get the exact
order-statistic interval (benchstat's): it exists at 95 % only from 6 values on; below that
the honest statement is the range, labelled as such.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

from perfstudy.common.thresholds import pct
from perfstudy.measure import decision_rules
from perfstudy.measure.decision_rules import CHOSEN, Rule

LEVEL = 0.95  # every interval of the product is a 95 % interval unless it says otherwise


class Outcome(StrEnum):
    """What a comparison decides (its value is the word every sentence and table uses)."""

    FASTER = "faster"
    SLOWER = "slower"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"

    @property
    def decided(self) -> bool:
        return self is not Outcome.INCONCLUSIVE


@dataclass(frozen=True)
class RatioInterval:
    """A ratio (candidate / reference) estimated over paired rounds, with its interval."""

    rounds: int  # paired rounds behind it
    ratio: float  # geometric mean of the per-round ratios
    low: float  # interval bounds on the ratio (nan with fewer than 2 rounds)
    high: float
    level: float  # e.g. 0.95
    sd_log: float  # standard deviation of the per-round log ratios (nan below 2 rounds)

    @property
    def half_width(self) -> float:
        """Half the interval's width, as a share of the ratio (in log terms: +- this)."""
        if not math.isfinite(self.low):
            return math.inf
        return (math.log(self.high) - math.log(self.low)) / 2

    def gain(self) -> tuple[float, float, float]:
        """(gain, lowest, highest) of the candidate over the reference: reference / candidate - 1."""
        return 1 / self.ratio - 1, 1 / self.high - 1, 1 / self.low - 1

    def words(self) -> str:
        """'0.81x (0.74-0.88, 95 %, 6 rounds)': what every sentence shows."""
        if not math.isfinite(self.low):
            return f"{self.ratio:.2f}x (no interval from {self.rounds} round(s))"
        return (f"{self.ratio:.2f}x ({self.low:.2f}-{self.high:.2f}, {pct(self.level)}, "
                f"{self.rounds} rounds)")


def ratio_interval(reference: Sequence[float], candidate: Sequence[float],
                   level: float = LEVEL) -> RatioInterval:
    """The paired interval of candidate / reference over rounds (round i: reference[i] with
    candidate[i]); Student-t on the mean of the log ratios."""
    ref = np.asarray(reference, dtype=float)
    cand = np.asarray(candidate, dtype=float)
    if ref.shape != cand.shape or not len(ref):
        raise ValueError(f"paired rounds need equal, non-empty series ({len(ref)} vs {len(cand)})")
    if (ref <= 0).any() or (cand <= 0).any():
        raise ValueError("step times must be positive")
    logs = np.log(cand) - np.log(ref)
    return log_interval(logs, level)


def log_interval(logs: Sequence[float], level: float = LEVEL) -> RatioInterval:
    """The interval of exp(mean) of per-round log ratios."""
    logs = np.asarray(logs, dtype=float)
    n, mean = len(logs), float(np.mean(logs))
    if n < 2:
        return RatioInterval(n, math.exp(mean), math.nan, math.nan, level, math.nan)
    sd = float(np.std(logs, ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return RatioInterval(n, math.exp(mean), math.exp(mean - half), math.exp(mean + half), level, sd)


def standard_error(part: RatioInterval) -> float:
    """The standard error of a t-interval's mean log ratio (its half width / t at n - 1)."""
    if part.rounds < 2 or not math.isfinite(part.low):
        return math.inf
    return (math.log(part.high) - math.log(part.low)) / 2 / float(
        stats.t.ppf(0.5 + part.level / 2, part.rounds - 1))


@dataclass(frozen=True)
class Pooled:
    """Several runs' estimates of one ratio pooled (random effects), with what they share."""

    interval: RatioInterval  # the pooled ratio and its interval; rounds: all runs' rounds
    runs: int  # the runs pooled
    between_sd_log: float  # the spread between runs beyond their rounds' noise (log ratio)

    @property
    def agree(self) -> bool:
        """The runs differ by no more than their own rounds' noise (no between-run spread)."""
        return self.between_sd_log == 0.0


def pooled(parts: Sequence[RatioInterval], level: float = LEVEL) -> Pooled:
    """One estimate from several runs that measured the same ratio, each over its own rounds
    (a one-way random-effects model: run k's mean log ratio m_k over its n_k rounds).

    The rounds' noise is the runs' pooled within-run variance s^2 (sum (n_k - 1) sd_k^2 over
    sum (n_k - 1)), so run k's mean has variance v_k = s^2 / n_k. The between-run variance
    tau^2 is the DerSimonian-Laird estimate max(0, (Q - (K - 1)) / (sum w - sum w^2 / sum w)),
    Q = sum w_k (m_k - m_fixed)^2, w_k = 1 / v_k. The pooled mean weighs each run by
    1 / (v_k + tau^2); its interval is Student-t on sum(n_k - 1) degrees of freedom. One run:
    its own interval, unchanged. Coverage of the true ratio, simulated for two runs of 3-5
    rounds (docs/measurement.md): 95-97 % where the runs share one ratio, about 90 % where the
    runs themselves differ by as much as their rounds' noise (two runs cannot measure that
    spread well)."""
    parts = [p for p in parts if p.rounds >= 2 and math.isfinite(p.low)]
    if not parts:
        raise ValueError("no interval to pool (each run needs 2 rounds or more)")
    if len(parts) == 1:
        return Pooled(parts[0], 1, 0.0)
    n = np.array([p.rounds for p in parts], dtype=float)
    means = np.log([p.ratio for p in parts])
    per_round = np.array([standard_error(p) ** 2 for p in parts]) * n
    var = max(float(np.sum((n - 1) * per_round) / np.sum(n - 1)), 1e-12) / n
    w = 1 / var
    fixed = float(np.sum(w * means) / np.sum(w))
    q = float(np.sum(w * (means - fixed) ** 2))
    scale = float(np.sum(w) - np.sum(w ** 2) / np.sum(w))
    tau2 = max(0.0, (q - (len(parts) - 1)) / scale) if scale > 0 else 0.0
    w_star = 1 / (var + tau2)
    mean = float(np.sum(w_star * means) / np.sum(w_star))
    se = math.sqrt(1 / float(np.sum(w_star)))
    rounds = int(n.sum())
    half = float(stats.t.ppf(0.5 + level / 2, rounds - len(parts))) * se
    return Pooled(RatioInterval(rounds, math.exp(mean), math.exp(mean - half), math.exp(mean + half),
                                level, se * math.sqrt(rounds)), len(parts), math.sqrt(tau2))


def outcome(interval: RatioInterval, margin: float, rule: Rule = CHOSEN) -> Outcome:
    """Faster, slower, equivalent or inconclusive at a margin, by `rule` (the module's doc)."""
    if not math.isfinite(interval.low):
        return Outcome.INCONCLUSIVE
    mean, half = _log_mean_half(interval)
    return Outcome(str(decision_rules.outcomes(np.array([mean]), np.array([half]), rule, margin)[0]))


def _log_mean_half(interval: RatioInterval) -> tuple[float, float]:
    low, high = math.log(interval.low), math.log(interval.high)
    return (low + high) / 2, (high - low) / 2


def _rounds_within(interval: RatioInterval, width: float, level: float) -> int | None:
    """The fewest rounds, more than the interval's, whose Student-t half width at its spread
    is within `width` (log); None past 1000."""
    for n in range(interval.rounds + 1, 1001):
        if float(stats.t.ppf(0.5 + level / 2, n - 1)) * interval.sd_log / math.sqrt(n) <= width:
            return n
    return None


def rounds_for(interval: RatioInterval, margin: float, level: float = LEVEL) -> int | None:
    """About how many rounds would let an interval this noisy decide at `margin`: the fewest,
    more than now, whose Student-t half width (at this spread) is within the distance from the
    estimate to the band's edge (None without a spread, when the estimate sits on the edge,
    where no number of rounds decides it, or past 1000)."""
    if not math.isfinite(interval.sd_log) or interval.sd_log <= 0:
        return None
    estimate, near = CHOSEN.bounds(margin)
    size = abs(math.log(interval.ratio))
    # past the step the interval's near end must pass `near`; short of it, the band's edge
    room = size - near if size > estimate else abs(size - math.log(1 + margin))
    if room < 0.01:
        return None
    return _rounds_within(interval, room, level)  # more than now: they did not decide it


def rounds_for_precision(interval: RatioInterval, precision: float, level: float = LEVEL) -> int | None:
    """About how many rounds would bring an interval this noisy within +-`precision` (log) of
    its estimate: the fewest, at least as many as now, whose Student-t half width at this spread
    is within it (now's count: it is there already; None without a spread, or past 1000)."""
    if interval.half_width <= precision:
        return interval.rounds
    if not math.isfinite(interval.sd_log) or interval.sd_log <= 0 or precision <= 0:
        return None
    return _rounds_within(interval, precision, level)


@dataclass(frozen=True)
class MedianInterval:
    """A median of repeats and what can honestly be said about where it lies."""

    n: int
    median: float
    low: float
    high: float
    level: float | None  # the interval's exact coverage (None: only the range is given)

    def words(self, unit: str = "", of: str = "runs") -> str:
        """'610 ms (range 602-662, 4 rounds)' or '1630 ms (1190-1880, 96 %, 8 rounds)'."""
        med, low, high = (_figure(v) for v in (self.median, self.low, self.high))
        if self.level is None:
            return f"{med}{unit} (range {low}-{high}, {self.n} {of})"
        return f"{med}{unit} ({low}-{high}, {pct(self.level)}, {self.n} {of})"


def _figure(value: float) -> str:
    """A measured value as a sentence writes it: whole numbers from 100, else 3 figures."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def median_interval(values: Sequence[float], level: float = LEVEL) -> MedianInterval:
    """The median with the exact distribution-free interval between two order statistics
    (binomial: the median lies between the j-th and k-th smallest with the coverage stated);
    the narrowest symmetric one whose coverage reaches `level`. With too few values for that
    (fewer than 6 at 95 %), the range, labelled as a range (level None)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if not n:
        raise ValueError("no values")
    med = float(np.median(x))
    for j in range(n // 2, 0, -1):  # j-th smallest to j-th largest (1-based), widening
        coverage = float(stats.binom.cdf(n - j, n, 0.5) - stats.binom.cdf(j - 1, n, 0.5))
        if coverage >= level:
            return MedianInterval(n, med, float(x[j - 1]), float(x[n - j]), coverage)
    return MedianInterval(n, med, float(x[0]), float(x[-1]), None)


@dataclass(frozen=True)
class BatchMeans:
    """A window's ratio of sums (e.g. time waiting for data over the step's time) with the
    interval of the batch-means method: the window cut into contiguous batches of steps, each
    batch one value, the Student-t interval of their mean. A batch spans several of the
    pipeline's cycles (a slow step lets the queue fill, the next ones are fast), so batches are
    close to independent where single steps are not."""

    value: float  # sum(numerator) / sum(denominator) over the whole window
    low: float
    high: float
    batches: int
    level: float


MIN_BATCH = 3  # steps per batch at least; and at least MIN_BATCH batches


def batch_means(numerator: Sequence[float], denominator: Sequence[float] | None = None,
                level: float = LEVEL) -> BatchMeans | None:
    """The ratio of sums over a window and its batch-means interval; None with fewer than
    MIN_BATCH batches of MIN_BATCH steps (too few steps to say anything about the spread).
    Without a denominator, the mean of the numerator. The window is cut into
    min(8, n // 5) batches, at least MIN_BATCH (n // 5: batches of about five steps, a few queue
    cycles each; 8 at most, so a long window's batches grow rather than shrink)."""
    num = np.asarray(numerator, dtype=float)
    den = np.ones_like(num) if denominator is None else np.asarray(denominator, dtype=float)
    n = len(num)
    k = max(MIN_BATCH, min(8, n // 5))
    if n < k * MIN_BATCH or den.sum() <= 0:
        return None
    cuts = np.array_split(np.arange(n), k)
    values = np.array([num[c].sum() / den[c].sum() for c in cuts])
    value = float(num.sum() / den.sum())
    half = float(stats.t.ppf(0.5 + level / 2, k - 1)) * float(np.std(values, ddof=1)) / math.sqrt(k)
    mean = float(values.mean())
    # centred on the batches' mean; widened to hold the window's own ratio where they differ
    return BatchMeans(value, min(value, mean - half), max(value, mean + half), k, level)
