"""Decision rules compared on the same evidence, and the one the product decides by.

A rule reads a candidate's paired per-round log ratios (candidate / reference) and says faster,
slower, equivalent or inconclusive at a margin m (a gain that matters, 10 %). The kinds the
best harnesses use:
* `interval`  the whole interval beyond the margin (Criterion's reading of a noise band as wide
              as m; the product's rule until 2026-12): "faster" promises a gain of at least m;
* `asv`       the estimate beyond the margin and the difference significant (the interval
              excludes 1; asv's `compare`: a change counts when it passes the step and is
              significant): "faster" promises a real gain, estimated at m or more;
* `criterion` significant and the estimate beyond a small noise threshold (1 %, Criterion's
              default): "faster" promises a real gain of any size;
* `half`      the whole interval beyond m / 2 and the estimate beyond m: a real gain of at
              least half the margin, estimated at m or more.
Each at a two-sided level (90, 95 or 99 %), a one-sided test at half the rest. Every kind rules
a gain out the same way, so "no gain" keeps one meaning: the interval's faster end is short of
the margin (`rules_out_gain`).

Which rule decides is a measurement (`simulate`, `replay`; scripts/compare_decision_rules.py):
on the recorded A/A and injected rounds (docs/benchmarks/decision-*.json), the rule that decides
most while a family of candidates, none of them different, reads "changed" in at most 5 % of
studies, and a 25 % gain is never ruled out. `CHOSEN` names it; docs/measurement.md says what
its "faster" promises.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from perfstudy.common.records import doc

KINDS = ("interval", "asv", "criterion", "half")
FASTER, SLOWER, EQUIVALENT, INCONCLUSIVE = "faster", "slower", "equivalent", "inconclusive"
CRITERION_NOISE = 0.01  # Criterion's default noise threshold


@dataclass(frozen=True)
class Rule:
    """One way to turn a paired interval into a verdict."""

    kind: str = doc("interval | asv | criterion | half (the module's doc)")
    level: float = doc("the interval's two-sided coverage")
    estimator: str = doc("mean (Student-t) | trimmed (Yuen's 20 % trimmed mean)", default="mean")

    @property
    def name(self) -> str:
        return f"{self.kind}@{round(self.level * 100)}" + ("" if self.estimator == "mean"
                                                            else f"-{self.estimator}")

    def cumulative(self, logs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """After each round: the estimate so far and its interval's half width."""
        return (cumulative(logs, self.level) if self.estimator == "mean"
                else cumulative_trimmed(logs, self.level))

    def bounds(self, margin: float) -> tuple[float, float]:
        """(the log ratio the estimate must pass, the log ratio the interval's near end must
        pass) for "faster"; "slower" mirrors them."""
        step = math.log(1 + margin)
        return {"interval": (step, step), "asv": (step, 0.0),
                "criterion": (math.log(1 + CRITERION_NOISE), 0.0),
                "half": (step, math.log(1 + margin / 2))}[self.kind]

    def bar_words(self, margin: float) -> str:
        """What a candidate's gain must show to be called faster, as a sentence's clause."""
        gain, near = f"{round(margin * 100)} %", math.exp(self.bounds(margin)[1]) - 1
        if self.kind == "interval":
            return f"a gain over {gain} across the whole interval"
        return (f"a gain estimated at {gain if self.kind != 'criterion' else pct_words(CRITERION_NOISE)}"
                f" or more and over {pct_words(near)} across the whole interval")

    def promise(self, margin: float) -> str:
        """What its "faster" promises, in words."""
        gain = f"{round(margin * 100)} %"
        return {"interval": f"a gain of at least {gain} (the whole interval beyond it)",
                "asv": f"a real gain (the interval excludes none), estimated at {gain} or more",
                "criterion": f"a real gain (the interval excludes none), estimated above "
                             f"{round(CRITERION_NOISE * 100)} %",
                "half": f"a gain of at least {round(margin * 50)} % (the whole interval beyond "
                        f"it), estimated at {gain} or more"}[self.kind]


def pct_words(share: float) -> str:
    return f"{share * 100:.0f} %" if share >= 0.01 - 1e-9 else "0 %"


def outcomes(mean: np.ndarray, half: np.ndarray, rule: Rule, margin: float) -> np.ndarray:
    """Each (mean log ratio, interval half width) read by `rule` (arrays of one shape; a
    half width of inf: no interval yet)."""
    estimate, near = rule.bounds(margin)
    step = math.log(1 + margin)
    out = np.full(mean.shape, INCONCLUSIVE, dtype=object)
    low, high = mean - half, mean + half
    out[(low >= -step) & (high <= step)] = EQUIVALENT
    out[(mean < -estimate) & (high < -near)] = FASTER
    out[(mean > estimate) & (low > near)] = SLOWER
    return out


def rules_out_gain(mean: np.ndarray, half: np.ndarray, margin: float) -> np.ndarray:
    """The interval's faster end is short of a gain of the margin (the same for every rule)."""
    return mean - half >= -math.log(1 + margin)


def cumulative(logs: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Over the last axis (rounds): after each round, the mean log ratio so far and its
    Student-t half width (inf before 2 rounds)."""
    n = np.arange(1, logs.shape[-1] + 1, dtype=float)
    total = np.cumsum(logs, axis=-1)
    mean = total / n
    squares = np.cumsum(logs ** 2, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(squares - n * mean ** 2, 0.0) / (n - 1)
        t = np.array([stats.t.ppf(0.5 + level / 2, k - 1) if k > 1 else np.inf for k in n])
        half = np.where(n > 1, t * np.sqrt(var / n), np.inf)
    return mean, half


def cumulative_trimmed(logs: np.ndarray, level: float, trim: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """As `cumulative`, by Yuen's trimmed mean: floor(trim x n) rounds cut from each end, the
    winsorised spread, Student-t on the h - 1 degrees of freedom of the h rounds kept (a heavy
    tail's few rounds weigh less; below 5 rounds nothing is cut)."""
    means, halves = [], []
    for n in range(1, logs.shape[-1] + 1):
        x = np.sort(logs[..., :n], axis=-1)
        cut = int(math.floor(trim * n))
        kept = n - 2 * cut
        means.append(x[..., cut:n - cut].mean(axis=-1))
        if kept < 2:
            halves.append(np.full(x.shape[:-1], np.inf))
            continue
        wins = np.concatenate([np.repeat(x[..., cut:cut + 1], cut, axis=-1), x[..., cut:n - cut],
                               np.repeat(x[..., n - cut - 1:n - cut], cut, axis=-1)], axis=-1)
        se = wins.std(axis=-1, ddof=1) / ((1 - 2 * trim) * math.sqrt(n))
        halves.append(float(stats.t.ppf(0.5 + level / 2, kept - 1)) * se)
    return np.stack(means, axis=-1), np.stack(halves, axis=-1)


@dataclass(frozen=True)
class Sequential:
    """Candidates read round by round, each leaving once settled (a race) or all at the end."""

    outcome: np.ndarray  # (trials, candidates): the verdict each candidate left with
    rounds: np.ndarray  # (trials, candidates): the rounds it was measured in


def run_sequential(logs: np.ndarray, rule: Rule, margin: float, min_rounds: int,
                   race: bool = True) -> Sequential:
    """Sequential stopping on per-round log ratios (trials, candidates, rounds): a candidate is
    settled once faster or its gain ruled out (from `min_rounds` on). In a race it leaves then,
    with that verdict; otherwise every candidate is read when the last one settles (or at the
    last round)."""
    mean, half = rule.cumulative(logs)
    said = outcomes(mean, half, rule, margin)
    settled = (said == FASTER) | rules_out_gain(mean, half, margin)
    settled[..., : min_rounds - 1] = False
    rounds = logs.shape[-1]
    first = np.where(settled.any(axis=-1), settled.argmax(axis=-1), rounds - 1)
    if not race:
        first = np.repeat(first.max(axis=-1, keepdims=True), logs.shape[1], axis=-1)
    verdict = np.take_along_axis(said, first[..., None], axis=-1)[..., 0]
    return Sequential(verdict, first + 1)


def family_noise(residuals: np.ndarray, trials: int, candidates: int, rounds: int,
                 seed: int) -> np.ndarray:
    """Per-round log ratios of `candidates` settings no different from the reference, resampled
    from recorded A/A residuals (heavy tails kept): each setting's window draws its own
    residual / sqrt 2, so the candidates share the reference's noise as in real rounds."""
    rng = np.random.default_rng(seed)
    draws = rng.choice(residuals, size=(trials, candidates + 1, rounds)) / math.sqrt(2)
    return draws[:, 1:, :] - draws[:, :1, :]


@dataclass(frozen=True)
class RuleScore:
    """One rule on one noise source: its error and decision rates, simulated."""

    rule: str = doc("kind@level")
    source: str = doc("whose recorded A/A residuals made the noise")
    sd_log: float = doc("the residuals' standard deviation (per-round log ratio)")
    candidates: int = doc("candidates per study (the family)")
    aa_false_changed_family: float = doc("A/A: share of studies where any candidate read "
                                         "faster or slower")
    aa_false_changed: float = doc("A/A: share of single comparisons read faster or slower")
    aa_decided: float = doc("A/A: share of comparisons decided (not inconclusive)")
    detect_10: float = doc("a true 10 % gain read faster")
    detect_25: float = doc("a true 25 % gain read faster")
    ruled_out_25: float = doc("a true 25 % gain ruled out (a wrong 'no gain')")
    decided: float = doc("share decided over A/A, 10 % and 25 % comparisons")
    rounds_median: float = doc("median rounds a comparison took (A/A, 10 %, 25 % alike)")


def score(rule: Rule, residuals: np.ndarray, source: str, *, margin: float, candidates: int,
          min_rounds: int, max_rounds: int, trials: int = 4000, seed: int = 0,
          race: bool = True) -> RuleScore:
    """`rule` simulated on resampled noise: a family of A/A candidates, and one candidate truly
    10 % and 25 % faster (its log ratio shifted by log(1 / 1.1), log(1 / 1.25))."""
    aa = run_sequential(family_noise(residuals, trials, candidates, max_rounds, seed), rule,
                        margin, min_rounds, race)
    single = family_noise(residuals, trials, 1, max_rounds, seed + 1)
    gains = {g: run_sequential(single + math.log(1 / (1 + g)), rule, margin, min_rounds, race)
             for g in (0.10, 0.25)}
    changed = (aa.outcome == FASTER) | (aa.outcome == SLOWER)
    every = np.concatenate([aa.outcome.ravel(), *(s.outcome.ravel() for s in gains.values())])
    rounds = np.concatenate([aa.rounds.ravel(), *(s.rounds.ravel() for s in gains.values())])
    ruled_out = run_sequential(single + math.log(1 / 1.25), rule, margin, min_rounds, race)
    mean, half = rule.cumulative(single + math.log(1 / 1.25))
    wrong = rules_out_gain(mean, half, margin)[np.arange(trials), 0, ruled_out.rounds[:, 0] - 1]
    return RuleScore(rule.name, source, float(np.std(residuals, ddof=1)), candidates,
                     float(changed.any(axis=1).mean()), float(changed.mean()),
                     float((aa.outcome != INCONCLUSIVE).mean()),
                     float((gains[0.10].outcome == FASTER).mean()),
                     float((gains[0.25].outcome == FASTER).mean()), float(wrong.mean()),
                     float((every != INCONCLUSIVE).mean()), float(np.median(rounds)))


def residuals_of(trials: Sequence[Sequence[float]]) -> np.ndarray:
    """Recorded A/A comparisons' per-round log ratios, centred on their overall mean (what is
    left is the rounds' noise, the comparisons' drift between them included)."""
    logs = np.concatenate([np.asarray(t, dtype=float) for t in trials if len(t)])
    return logs - logs.mean()


def replay(rule: Rule, logs: Sequence[float], margin: float, min_rounds: int) -> tuple[str, int, bool]:
    """A recorded comparison's rounds read by `rule` in their order: (verdict, rounds, whether
    it settled within the recorded rounds; if not, the verdict at the last recorded round)."""
    found = run_sequential(np.asarray(logs, dtype=float)[None, None, :], rule, margin, min_rounds)
    mean, half = rule.cumulative(np.asarray(logs, dtype=float))
    said = outcomes(mean, half, rule, margin)
    settled = ((said == FASTER) | rules_out_gain(mean, half, margin))[min_rounds - 1:].any()
    return str(found.outcome[0, 0]), int(found.rounds[0, 0]), bool(settled)


# the rule the product decides by: the one scripts/compare_decision_rules.py chose on the
# recorded rounds (docs/benchmarks/decision-rules.json; a test keeps the two the same)
CHOSEN = Rule("half", 0.95)


def every_rule(levels: Sequence[float] = (0.90, 0.95, 0.99)) -> list[Rule]:
    """Every kind at every level on the mean; the old and the chosen kinds on the trimmed mean
    too (is a heavy tail's round better weighed less?)."""
    return ([Rule(kind, level) for kind in KINDS for level in levels]
            + [Rule(kind, 0.95, "trimmed") for kind in ("interval", "half")])


def acceptable(scores: Sequence[RuleScore], false_changed: float = 0.05,
               ruled_out_25: float = 0.05) -> bool:
    """A rule may be chosen when on every noise source a family of A/A candidates reads
    "changed" in at most `false_changed` of studies and a true 25 % gain is ruled out in at
    most `ruled_out_25` of them."""
    return all(s.aa_false_changed_family <= false_changed and s.ruled_out_25 <= ruled_out_25
               for s in scores)


def choose(scores: Sequence[RuleScore]) -> str | None:
    """Among the acceptable rules, the one that decides most (mean over the noise sources);
    ties: the one that detects a 10 % gain most, then the interval rule (the stricter promise)."""
    by_rule: dict[str, list[RuleScore]] = {}
    for s in scores:
        by_rule.setdefault(s.rule, []).append(s)
    ok = {name: group for name, group in by_rule.items() if acceptable(group)}
    if not ok:
        return None
    return max(ok, key=lambda name: (round(float(np.mean([s.decided for s in ok[name]])), 3),
                                     round(float(np.mean([s.detect_10 for s in ok[name]])), 3),
                                     name.startswith("interval")))
