"""The model proposes, a measurement decides.

plan: which settings the training measures (perfstudy.run.verify): the run's own setting first
(the reference), then the model's pick, the slow operator in each mode it can run in (threads,
processes: where the model errs most), then the fastest predicted others, `k` candidates in all.
The model prunes: on a machine with many cores and several sized operators the settings grow as
CPUs^operators (x2 for each Python map), and the settings measured stay k + 1. Its error band
(perfstudy.decide.prediction_band, where one ships) prunes further: a candidate other than the
pick is measured only where the band's optimistic end of its gain reaches the gain that matters
(worth_measuring); where none does, the slow operator's most promising mode is still measured,
so that "no setting helps" is a measurement too.

verdict: what the interleaved rounds decide. Every round measured every setting once, in a
random order; per candidate, the per-round ratio of its step to the own setting's gives a 95 %
interval (perfstudy.measure.intervals, paired by round), and against a gain that matters
(GAIN_THAT_MATTERS, 10 %):
* helps: some candidate is faster by the chosen rule (perfstudy.measure.decision_rules: a gain
  estimated at 10 % or more, its whole interval beyond 5 %); among those not decidedly slower
  than the fastest (the same rule, paired by round against it), the cheapest (fewest changes,
  workers, processes) is chosen;
* no gain: every candidate's whole interval is short of a 10 % gain (each is equivalent,
  slower, or faster by less than what matters), or it cannot beat the chosen one by 10 %;
* inconclusive: otherwise; the setting is kept, and the answer says how many rounds would
  decide it.
Every setting's predicted step is set against its measured one (the model's error, by the kind
of the operator).
"""

from __future__ import annotations

from dataclasses import dataclass

from perfstudy.common.records import doc
from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.decide.advisor import Advice, cost, describe_settings
from perfstudy.decide.whatif import canonical, predict
from perfstudy.measure.intervals import LEVEL
from perfstudy.measure.rounds import Comparison, Rounds, compare, compare_all
from perfstudy.run.settings import MP, Settings
from perfstudy.run.verify_record import Planned, Verification

HELPS, NO_GAIN, INCONCLUSIVE = "helps", "no_gain", "inconclusive"
EARLIER = "earlier"  # no rounds run: earlier runs' rounds settled, or left out of reach, every candidate
# an inconclusive answer names the rounds that would decide it only when they are this few
# (4x the default verify.max_rounds); past that, more rounds are not the remedy
FEW_ROUNDS = 48


@dataclass(frozen=True)
class MeasuredSetting:
    """One planned setting as the rounds measured it."""

    label: str = doc("the settings as a user would type them")
    role: str = doc("current (the reference) | candidate")
    settings: Settings = doc("the operator settings")
    predicted_ms: float = doc("the model's step there")
    measured_ms: float | None = doc("mean of its steady windows' steps (None: never steady)")
    windows: int = doc("its steady windows (one per round at most)")
    steps: int = doc("counted steps over those windows")
    error: float | None = doc("the model's error: predicted / measured - 1")
    comparison: Comparison | None = doc("against the run's own setting, paired by round "
                                        "(None for the own setting)")
    reused_from: str | None = doc("the earlier run whose rounds settled it, not measured "
                                  "again here (None: measured in this run's rounds)", default=None)
    pooled_with: list[str] = doc("the earlier runs whose rounds of this pair `comparison` pools "
                                 "with this run's (verify.reuse_from)", default_factory=list)
    alone: Comparison | None = doc("this run's rounds alone, where `comparison` pools earlier "
                                   "runs' in (None: it does not)", default=None)
    out_of_reach: bool = doc("not measured again: the earlier run left it open, and more rounds "
                             "than this run's verify.max_rounds would be needed to settle it",
                             default=False)

    @property
    def this_run(self) -> Comparison | None:
        """Its comparison from this run's rounds alone (a claim pools runs itself)."""
        return self.alone if self.pooled_with else self.comparison


@dataclass(frozen=True)
class Checked:
    """What the verification's rounds decide (diagnosis.json's recommendation.verification)."""

    outcome: str = doc("helps | no_gain | inconclusive")
    chosen: int = doc("the chosen setting's index (0: the run's own, kept)")
    settings: list[MeasuredSetting] = doc("every planned setting, measured")
    rounds: int = doc("rounds run (0: earlier runs' rounds account for every candidate)")
    stopped: str = doc("decided | max_rounds | budget | earlier (no rounds run here)")
    margin: float = doc("the gain that matters (the chosen rule's step)")
    level: float = doc("the intervals' coverage")
    dropped: list[str] = doc("why each dropped window was measured again")
    disturbed_kept: int = doc("windows kept although disturbed (their second reading)")
    wall_s: float = doc("the rounds' wall time")
    share_of_training: float = doc("their wall time over the training's")
    budget_share: float = doc("verify.budget_share")
    stretched: int = doc("rounds run past the budget: the rounds still needed fit in "
                         "verify.stretch_share", default=0)

    @property
    def own(self) -> MeasuredSetting:
        return self.settings[0]

    @property
    def picked(self) -> MeasuredSetting:
        return self.settings[self.chosen]

    def open_candidate(self) -> MeasuredSetting | None:
        """The candidate that most might still be faster (inconclusive: the best estimate among
        those not ruled out)."""
        open_ = [m for m in self.settings[1:] if m.comparison and m.comparison.ratio is not None
                 and not m.comparison.settled]
        return min(open_, key=lambda m: m.comparison.ratio) if open_ else None


def _same(a: Settings, b: Settings) -> bool:
    return canonical(a) == canonical(b)


def _culprit_modes(advice: Advice, now: Settings) -> list[Settings]:
    """The slow operator (the model's slowest at the run's setting) in each mode it can run in,
    the rest as now: where the model errs most (threads against processes of a Python map).
    Per mode its fastest predicted worker count; where the model sees no difference between
    counts, the most workers (the mode's strongest test)."""
    stage = advice.stage(advice.now_slowest_stage)
    if stage is None:
        return []
    key = stage.key
    modes: dict[bool, tuple] = {}
    for row in advice.predictions:
        settings = canonical(row.settings)
        others = {k: v for k, v in settings.items() if k != key and k != key + MP}
        rest = {k: v for k, v in now.items() if k != key and k != key + MP}
        if others != rest or _same(settings, now):
            continue
        mode = bool(settings.get(key + MP))
        rank = (row.step_ms, -settings.get(key, 1))
        if mode not in modes or rank < modes[mode][0]:
            modes[mode] = (rank, settings)
    return [settings for _, settings in sorted(modes.values(), key=lambda m: m[0])]


def worth_measuring(advice: Advice, settings: Settings) -> bool:
    """Can this setting's measured gain over the run's own reach the gain that matters, at the
    optimistic end of the model's band for a predicted gain? (No band: yes.)"""
    ends = advice.band.gain if advice.band else None
    if ends is None or ends.low is None:
        return True
    ratio = predict(advice, settings).step_ms / predict(advice, advice.now).step_ms
    return ratio * ends.low <= 1 / (1 + GAIN_THAT_MATTERS)


def plan(advice: Advice, k: int) -> list[Planned]:
    """The windows to measure: the run's own setting first, then up to k candidates: the
    model's pick, the slow operator in each mode (threads, processes), the fastest others;
    past the pick, only those whose gain the band lets reach the gain that matters (where none
    does: the slow operator's most promising mode)."""
    now = canonical(advice.now)
    rows = sorted(advice.predictions, key=lambda r: r.step_ms)
    chosen: list[Settings] = []
    pick = canonical(advice.pick)
    modes = _culprit_modes(advice, now)
    others = [s for s in modes + [canonical(r.settings) for r in rows]
              if worth_measuring(advice, s)]
    ordered = ([pick] if not _same(pick, now) else []) + others
    if not any(not _same(s, now) for s in ordered):  # "no setting helps" is measured too:
        fastest = [canonical(r.settings) for r in rows if not _same(canonical(r.settings), now)]
        ordered = (modes or fastest)[:1]  # the slow operator's best mode, else the fastest other
    for settings in ordered:
        if len(chosen) >= k:
            break
        if not _same(settings, now) and not any(_same(settings, c) for c in chosen):
            chosen.append(settings)
    out = []
    for rank, settings in enumerate([now, *chosen]):
        row = predict(advice, settings)
        out.append(Planned("current" if rank == 0 else "candidate", rank, settings,
                           describe_settings(settings, advice), row.step_ms, row.binding,
                           _same(settings, pick)))
    return out


def _measured(verification: Verification, comparisons: dict[int, Comparison],
              alone: dict[int, Comparison]) -> list[MeasuredSetting]:
    kept = verification.rounds.kept() if verification.rounds else []
    sources: dict[int, list[str]] = {}
    for e in verification.earlier:
        sources.setdefault(e.setting, []).append(e.source_run)
    out = []
    for index, entry in enumerate(verification.plan):
        steady = [v.window for v in kept if v.setting == index and v.window.step_ms]
        mean = sum(w.step_ms for w in steady) / len(steady) if steady else None
        comparison = comparisons.get(index)
        pooled = comparison is not None and comparison.runs > 1
        out.append(MeasuredSetting(
            entry.label, entry.role, canonical(entry.settings), entry.predicted_ms, mean,
            len(steady), sum(w.steps_counted for w in steady),
            entry.predicted_ms / mean - 1 if mean else None, comparison,
            pooled_with=sources.get(index, []) if pooled else [],
            alone=alone.get(index) if pooled else None))
    # not measured again (perfstudy.decide.reuse): settled, or out of reach, in an earlier
    # run's rounds; its step is not this run's
    out += [MeasuredSetting(r.label, "candidate", canonical(r.settings), r.predicted_ms, None, 0, 0,
                            None, r.comparison, reused_from=r.source_run, out_of_reach=not r.settled)
            for r in verification.reused]
    return out


def verdict(verification: Verification | None, margin: float = GAIN_THAT_MATTERS) -> Checked | None:
    """What the rounds decide, or None when they cannot (nothing measured, or the run's own
    setting never steady, so nothing pairs). An arm whose every candidate an earlier run's rounds
    settled or left out of reach runs no rounds (perfstudy.decide.reuse): its verdict is theirs."""
    if verification is None or len(verification.plan) + len(verification.reused) < 2:
        return None
    rounds = verification.rounds
    if rounds is None and not verification.reused:
        return None
    if rounds is not None and not any(rounds.series(0)):
        return None
    # a pair an earlier run measured too (verify.reuse_from) is read with its rounds there pooled in
    alone = {c.setting: c for c in compare_all(rounds, margin, 0, LEVEL)} if rounds else {}
    comparisons = ({c.setting: c for c in compare_all(rounds, margin, 0, LEVEL, verification.prior())}
                   if rounds else {})
    comparisons.update({r.comparison.setting: r.comparison for r in verification.reused})
    settings = _measured(verification, comparisons, alone)
    faster = [c for c in comparisons.values() if c.outcome == "faster"]
    chosen, outcome = 0, INCONCLUSIVE
    if faster:
        best = min(faster, key=lambda c: c.ratio)
        near = [c for c in faster if not _decidedly_slower(rounds, best, c, margin)]
        now = canonical(verification.plan[0].settings)
        chosen = min(near, key=lambda c: (cost(settings[c.setting].settings, now), c.ratio)).setting
        outcome = HELPS
    elif all(c.rules_out_gain for c in comparisons.values()):
        outcome = NO_GAIN
    if rounds is None:
        return Checked(outcome, chosen, settings, 0, EARLIER, margin, LEVEL, [], 0, 0.0, 0.0,
                       verification.budget_share)
    return Checked(outcome, chosen, settings, len(rounds.orders), rounds.stopped, margin, LEVEL,
                   [v.dropped for v in rounds.dropped()], rounds.disturbed_kept(), rounds.wall_s,
                   verification.share_of_training, verification.budget_share, rounds.stretched)


def _decidedly_slower(rounds: Rounds | None, best: Comparison, other: Comparison, margin: float) -> bool:
    """Whether `other` is slower than the fastest `best` by the margin: paired by round where
    this run's rounds measured both (the decision rule, the same as against the own setting),
    else by their ratios to the own setting. Two faster candidates 0.65x and 0.72x over 3
    rounds (the seed case, 2026-12-07) are 1.11x apart as estimates but not decidedly apart
    paired (the estimates' noise, not their settings): the cheaper change is chosen, where
    comparing estimates flipped the answer between runs."""
    if other is best:
        return False
    if rounds is not None and other.setting < rounds.settings and best.setting < rounds.settings:
        between = compare(rounds, best.setting, other.setting, margin, LEVEL)
        if between.ratio is not None:
            return between.outcome == "slower"
    return other.ratio > best.ratio * (1 + margin)


def protocol_words(checked: Checked) -> str:
    """How the verdict was measured, in words (every verified answer says it)."""
    measured = [m for m in checked.settings if not m.reused_from]
    if checked.stopped == EARLIER:
        text = "no rounds run here: earlier runs' rounds account for every candidate"
    else:
        text = (f"{checked.rounds} interleaved rounds of {len(measured)} settings (each round "
                f"every setting once, in a random order, on a fresh pipeline; stopped: "
                f"{STOPPED_WORDS.get(checked.stopped, checked.stopped)}"
                + (f", {checked.stretched} of them past the budget, as the rounds needed fit in "
                   "verify.stretch_share" if checked.stretched else "") + ")")
    if checked.dropped:
        text += (f"; {len(checked.dropped)} window(s) measured again, disturbed by "
                 + "; ".join(sorted(set(checked.dropped))))
    if checked.disturbed_kept:
        text += f"; {checked.disturbed_kept} kept although disturbed twice"
    pooled = [m for m in checked.settings if m.pooled_with]
    if pooled:
        text += "; " + "; ".join(
            f"{m.label} read with {' and '.join(m.pooled_with)}'s rounds of the same pair pooled in "
            f"(this run's alone: {m.alone.words() if m.alone else 'none'})" for m in pooled)
    reused = [m for m in checked.settings if m.reused_from]
    if reused:
        text += "; " + "; ".join(_reused_words(m) for m in reused)
    return text


def _reused_words(m: MeasuredSetting) -> str:
    if not m.out_of_reach:
        return (f"{m.label} not measured again: {m.reused_from}'s rounds settled it against this "
                f"setting, {m.comparison.words()}")
    need = m.comparison.rounds_needed
    return (f"{m.label} not measured again: {m.reused_from}'s rounds left it open, "
            f"{m.comparison.words()}, and "
            + (f"about {need} rounds in all would settle it, more than verify.max_rounds adds here"
               if need else "no number of rounds would settle it (its estimate sits on the band's edge)")
            + " (out of reach)")


STOPPED_WORDS = {"decided": "every candidate settled", "max_rounds": "verify.max_rounds reached",
                 EARLIER: "earlier runs' rounds settled, or left out of reach, every candidate",
                 "budget": "verify.budget_share spent (and the rounds needed did not fit in "
                           "verify.stretch_share)"}


def accuracy_rows(checked: Checked | None) -> list[MeasuredSetting]:
    """Every setting measured steady: the model's predicted against the measured step."""
    return [m for m in (checked.settings if checked else []) if m.measured_ms]


def cost_sentence(verification: Verification | None) -> str | None:
    """What the verification cost, in words (None without rounds)."""
    if not verification or verification.rounds is None:
        return None
    rounds = verification.rounds
    windows = len(rounds.visits)
    steps = sum(v.window.steps for v in rounds.visits)
    return (f"Verification: {len(rounds.orders)} rounds of {rounds.settings} settings, {windows} "
            f"windows of {steps} steps in {rounds.wall_s:.0f} s, "
            f"{pct(verification.share_of_training)} of the training's "
            f"{verification.training_wall_s:.0f} s (budget {pct(verification.budget_share)}"
            + (f" of at least {verification.budget_base_min_s:.0f} s"
               if verification.budget_base_min_s > verification.training_wall_s else "")
            + (f", stretched to at most {pct(verification.stretch_share)} while the rounds needed "
               f"fit: {rounds.stretched} round(s) past it" if verification.stretch_share else "")
            + f"); stopped: {STOPPED_WORDS.get(rounds.stopped, rounds.stopped)}.")


def operator_kind(advice: Advice, settings: Settings) -> str:
    """The kind of the operator a verified setting is about (the one it changes; the run's
    own setting: the slowest at it), as the model's measurements classify it:
    C++ map | waiting | Python computing | Python releasing the GIL | Python mixed, each
    'per-batch' when the map follows batch(), and 'threads' or 'processes' as set."""
    now = canonical(advice.now)
    changed = [s for s in advice.stages
               if settings.get(s.key) != now.get(s.key)
               or bool(settings.get(s.key + MP)) != bool(now.get(s.key + MP))]
    stage = changed[0] if changed else advice.stage(advice.now_slowest_stage) or advice.stages[0]
    busy = stage.busy_per_worker
    if stage.kind != "probed":
        kind = "waiting" if stage.kind == "waits" else "C++ map"
    elif busy < 0.3:
        kind = "Python waiting"
    elif busy < 0.7:
        kind = "Python mixed"
    else:
        threads = {p.workers: p.wall_ms_per_batch for p in stage.points if not p.multiprocessing}
        scales = len(threads) > 1 and threads[min(threads)] / threads[max(threads)] >= 1.3
        kind = "Python releasing the GIL" if scales else "Python computing"
    if stage.key == "pipeline.batch_transform_workers":
        kind += ", per-batch"
    if stage.kind == "probed":
        kind += ", processes" if settings.get(stage.key + MP) else ", threads"
    return kind
