"""Claims read paired by round: a ratio two settings' windows gave in the same interleaved rounds
of one run (a verification's, or a prepared arm's against its source), with its interval, in
place of two arms' windows measured minutes apart (docs/report-and-claims.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.decide.whatif import canonical
from perfstudy.measure import rounds as rounds_mod
from perfstudy.measure.intervals import RatioInterval, log_interval, pooled
from perfstudy.measure.rounds import Window


@dataclass(frozen=True)
class Paired:
    """A ratio measured paired by round inside one run (its verification's interleaved rounds),
    with its interval: a claim is judged on the whole interval, not on the point."""

    value: float
    low: float
    high: float
    rounds: int  # the interleaved rounds (basis "paired") or the window's batches ("batches")
    level: float
    # or "batches": one window's batch means (perfstudy.measure.intervals); "rounds": one
    # setting's windows over a verification's rounds (a quantity of one arm, not a ratio of two);
    # "batches+rounds": a window's batches pooled with rounds' windows of its setting
    basis: str = "paired"
    runs: int = 1  # the runs (processes) whose rounds were pooled
    between_sd_log: float = 0.0  # their spread beyond their rounds' noise (0: they agree)

    def __float__(self) -> float:
        return self.value

    def as_interval(self) -> RatioInterval:
        """The ratio and its interval as the rounds gave them (for pooling)."""
        return RatioInterval(self.rounds, self.value, self.low, self.high, self.level, float("nan"))


def pool(parts: list[Paired]) -> Paired:
    """Several runs' paired ratios of one pair of settings as one estimate: their rounds pooled,
    the spread between the runs a variance component (perfstudy.measure.intervals.pooled), never
    the union of their intervals."""
    found = pooled([p.as_interval() for p in parts])
    i = found.interval
    return Paired(i.ratio, i.low, i.high, i.rounds, i.level, parts[0].basis, found.runs,
                  found.between_sd_log)


def pool_shares(parts: list[Paired]) -> Paired:
    """Several sources' estimates of one share (a fraction of time, such as the gap's) as one,
    pooled like `pool` but on the share's own scale: time adds, so a share is averaged, not its
    logarithm (a window at 0.3 % beside one at 11 % made a log-scale interval of 0-186 %, and
    a share near 0 has no log at all). Each part's value, low and high are shares; `pool`
    reads exp(share) as its ratio, so its log-scale mean is the shares' mean."""
    mapped = [replace(p, value=math.exp(p.value), low=math.exp(p.low), high=math.exp(p.high)) for p in parts]
    both = pool(mapped)
    return replace(both, value=math.log(both.value), low=max(0.0, math.log(both.low)),
                   high=min(1.0, math.log(both.high)))


def share_over_rounds(shares: list[float]) -> Paired:
    """One run's per-round values of a share (basis "rounds"), with their t interval on the
    share's own scale."""
    i = log_interval(shares)  # the t interval of the mean of `shares`, returned as exp()
    return Paired(math.log(i.ratio), math.log(i.low), math.log(i.high), i.rounds, i.level, basis="rounds")


def _only_settings_differ(a, b) -> bool:
    """Same data, model and pipeline code, size and batch: the arms differ in operator settings
    at most, so one run's windows at the other's settings measure the other arm."""
    x, y = a.summary, b.summary
    return (x.dataset_sha256 == y.dataset_sha256 and x.factories == y.factories
            and (x.size, x.batch_size, x.image_size) == (y.size, y.batch_size, y.image_size))


def paired_speedup(arm, against) -> tuple[Paired, str] | None:
    """The arm's speedup over `against`, paired by round: from every verification of the two
    that measured the other arm's settings beside its own (the other's inverted). The arms' own
    windows ran minutes apart, and the host drifts between them (+16 % on one arm's setting
    within a run, docs/measurement.md); None where neither run measured the other.

    Two runs that measured the pair each give a within-run estimate, and two processes can
    differ by more than either says (1.51x, 1.48-1.53 against 1.41x, 1.34-1.49 in one make
    run): the two are pooled (`pool`: their rounds together, the spread between the runs a
    variance component), so agreeing runs narrow the interval and disagreeing ones widen it."""
    if not _only_settings_differ(arm, against):
        return None
    found: list[tuple[Paired, str]] = []
    for source, other, flip in ((arm, against, False), (against, arm, True)):
        checked = source.diagnosis.recommendation.verification if source.diagnosis else None
        target = canonical(other.summary.operator_settings or {})
        for row in (checked.settings[1:] if checked else []):
            c = row.this_run  # the verdict's may pool an earlier run's rounds: each run once here
            if c is None or c.ratio is None or c.low is None or c.high is None \
                    or canonical(row.settings) != target or row.reused_from:  # counted at its source
                continue
            found.append((Paired(c.ratio, c.low, c.high, c.rounds, c.level) if not flip else
                          Paired(1 / c.ratio, 1 / c.high, 1 / c.low, c.rounds, c.level), source.name))
            break
    if not found:
        return None
    if len(found) == 1:
        (one, name), = found
        return one, (f"paired by round in {name}'s verification ({one.rounds} interleaved rounds: "
                     f"{(against if name == arm.name else arm).name}'s settings beside {name}'s)")
    both = pool([p for p, _ in found])
    each = "; ".join(f"{name}'s {p.value:.2f}x ({p.low:.2f}-{p.high:.2f}, {p.rounds} rounds)"
                     for p, name in found)
    return both, (f"paired by round in {len(found)} runs' verifications, each measuring both "
                  f"settings: {each}; pooled over their {both.rounds} rounds ("
                  + between(both) + ")")


def between(found: Paired, what: str = "runs", noise: str = "their rounds' noise") -> str:
    """What the spread between pooled runs (or sources) did to the interval, in words."""
    if found.between_sd_log == 0:
        return f"the {what} agree within {noise}"
    return (f"the {what} differ by more than {noise}: a between-run spread of "
            f"{found.between_sd_log:.0%} widens the interval")


def over_rounds(logs: list[float]) -> Paired:
    """One run's per-round logs of a quantity of one arm (basis "rounds"), with their t interval."""
    i = log_interval(logs)
    return Paired(i.ratio, i.low, i.high, i.rounds, i.level, basis="rounds")


def setting_windows(arm, runs) -> list[tuple[str, list[Window]]]:
    """Every run's windows at the arm's own settings, one a round (those that reached a steady
    estimate): the arm's verification's own setting (plan[0]) first, then each other run of the
    same data and code (only settings differ) whose verification measured the arm's settings as
    a candidate (the baseline's rounds measure the tuned arm's setting too). Runs with no such
    window are left out."""
    found: list[tuple[str, list[Window]]] = []
    ver = arm.summary.verification
    if ver is not None and ver.rounds is not None:
        found.append((arm.name, _steady(ver.rounds, 0)))
    target = canonical(arm.summary.operator_settings or {})
    for other in runs:
        ver = other.summary.verification
        if other is arm or ver is None or ver.rounds is None or not _only_settings_differ(arm, other):
            continue
        rank = next((p.rank for p in ver.plan[1:] if canonical(p.settings) == target), None)
        if rank is not None:
            found.append((other.name, _steady(ver.rounds, rank)))
    return [(name, windows) for name, windows in found if windows]


def _steady(rounds, setting: int) -> list[Window]:
    """The setting's kept windows that reached a step, in round order."""
    return [v.window for v in sorted(rounds.kept(), key=lambda v: v.round)
            if v.setting == setting and v.window.step_ms is not None]


def prediction_error(relative: float, value: float, low: float, high: float) -> list[float]:
    """A prediction's signed error against a speedup measured paired by round (and at its
    interval's ends): `relative` is the predicted step over the step of the run it was made
    from, so relative x speedup - 1 (0: the prediction met the paired measurement)."""
    return [relative * v - 1 for v in (value, low, high)]


def absolute(value: float, low: float, high: float) -> tuple[float, float, float]:
    """|error| and its interval from a signed error's (0 inside it where it changes sign)."""
    ends = sorted((abs(low), abs(high)))
    return abs(value), (0.0 if low <= 0 <= high else ends[0]), ends[1]


def paired_pick(source, picked_settings, best) -> tuple[Paired, str] | None:
    """The picked setting's step over the best arm's setting, paired by round in the source
    arm's verification where it measured both (same data and code: only settings differ);
    None where it did not. Percent kind: ratio - 1 and its interval."""
    ver = source.summary.verification
    if ver is None or ver.rounds is None or not _only_settings_differ(source, best):
        return None
    at_pick = _rank(ver.plan, picked_settings)
    at_best = _rank(ver.plan, best.summary.operator_settings or {})
    if at_pick is None or at_best is None or at_pick == at_best:
        return None
    c = rounds_mod.compare(ver.rounds, at_best, at_pick, GAIN_THAT_MATTERS)
    if c.ratio is None or c.low is None or c.high is None:
        return None
    return Paired(c.ratio - 1, c.low - 1, c.high - 1, c.rounds, c.level), (
        f"{source.name}'s recommendation ({ver.plan[at_pick].label}) against the best arm's "
        f"setting ({best.name}: {ver.plan[at_best].label}), paired by round in {source.name}'s "
        f"verification ({c.rounds} interleaved rounds)")


def _rank(plan, settings) -> int | None:
    """The plan's index of these settings (None: not measured)."""
    target = canonical(settings)
    return next((p.rank for p in plan if canonical(p.settings) == target), None)
