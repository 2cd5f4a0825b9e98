"""Rounds spent where an answer can change: a candidate of this run's plan that an earlier run
of the same data and code already measured against this run's own setting, and settled, is not
measured again (verify.reuse_from).

The case: the tuned arm's plan holds a return to the baseline's setting (one map worker), and
the baseline's own rounds measured exactly that pair (its own setting beside the tuned one,
paired by round) before. When that pair is settled as this run reads it (the candidate faster
by the margin, or its gain ruled out), the tuned arm's rounds go to its other candidates; its
verdict takes the pair from the baseline's rounds, marked so, and the claims do not count it
twice (perfstudy.decide.paired). A pair left open there is measured again here, and the two
runs' rounds are pooled (random effects: perfstudy.measure.rounds.compare with a prior): in this
run's race and stopping rule, in its verdict, and where a claim reads it. Unless it is out of
reach: open there so far from settled that the rounds this run may add (verify.max_rounds) would
not settle it either (the seed case's tuned arm: two workers against two workers and two readers,
1.07x (0.84-1.35) in the baseline's 3 rounds, about 37 rounds to settle, against 12). It is not
measured again; its answer stays open, with the rounds that would settle it. Where no candidate
is left, the arm runs no rounds at all.
"""

from __future__ import annotations

from dataclasses import replace

from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.decide.whatif import canonical
from perfstudy.measure.intervals import LEVEL
from perfstudy.measure.rounds import Comparison, compare
from perfstudy.run.settings import Settings
from perfstudy.run.summary import RunSummary
from perfstudy.run.verify_record import Earlier, Planned, Reused


def same_pipeline(a: RunSummary, b: RunSummary) -> bool:
    """Same data, model and pipeline code, size and batch: the runs differ in operator settings
    at most, so one run's windows at the other's settings measure the other run's setting."""
    return (a.dataset_sha256 == b.dataset_sha256 and a.factories == b.factories
            and (a.size, a.batch_size, a.image_size) == (b.size, b.batch_size, b.image_size))


def _index(plan: list[Planned], settings: Settings) -> int | None:
    target = canonical(settings)
    return next((p.rank for p in plan if canonical(p.settings) == target), None)


def measured_elsewhere(own: Settings, candidate: Settings, earlier: RunSummary,
                       margin: float = GAIN_THAT_MATTERS) -> Comparison | None:
    """The candidate's step over `own`, paired by round in the earlier run's verification, where
    it measured both (in 2 rounds or more: an interval); None otherwise."""
    ver = earlier.verification
    if ver is None or ver.rounds is None:
        return None
    at_own, at_candidate = _index(ver.plan, own), _index(ver.plan, candidate)
    if at_own is None or at_candidate is None or at_own == at_candidate:
        return None
    found = compare(ver.rounds, at_own, at_candidate, margin, LEVEL)
    return found if found.ratio is not None and found.low is not None else None


def out_of_reach(found: Comparison, max_rounds: int) -> bool:
    """An open pair whose rounds so far say that this run's rounds could not settle it: the
    rounds that would (Student-t at its spread so far: Comparison.rounds_needed, in all) are
    more than its rounds there plus `max_rounds`, or none would (its estimate on the band's
    edge). Its answer cannot change here; rounds spent on it are spent for nothing."""
    if found.settled or found.low is None:
        return False
    return found.rounds_needed is None or found.rounds_needed - found.rounds > max_rounds


def decided_elsewhere(plan: list[Planned], own: RunSummary, earlier: list[RunSummary],
                      margin: float = GAIN_THAT_MATTERS, max_rounds: int | None = None
                      ) -> tuple[list[Planned], list[Reused], list[Earlier]]:
    """The plan left to measure (ranks renumbered), the candidates not measured again, and those
    left to measure that an earlier run measured without settling (their rounds there pooled
    with this run's). Not measured again: a candidate an earlier run of the same pipeline
    settled against this run's own setting, and (with `max_rounds`, this run's
    verify.max_rounds) one it left open out of reach (`out_of_reach`). The model's pick is
    always measured here (its prediction is judged on this run's rounds). Where every
    candidate is accounted for, the plan is the own setting alone: no rounds are run, and the
    verdict reads the earlier runs' (perfstudy.decide.verify.verdict)."""
    if len(plan) < 2:
        return plan, [], []
    sources = [s for s in earlier if same_pipeline(own, s)]
    keep, reused = [plan[0]], []
    for entry in plan[1:]:
        found = None if entry.is_model_pick else _elsewhere(plan[0].settings, entry.settings,
                                                            sources, margin, max_rounds)
        if found is None:
            keep.append(entry)
            continue
        source, comparison = found
        reused.append(Reused(entry.label, canonical(entry.settings), entry.predicted_ms,
                             entry.predicted_binding, entry.is_model_pick, source.run, comparison,
                             settled=comparison.settled))
    keep = [replace(p, rank=rank) for rank, p in enumerate(keep)]
    pooled = [Earlier(p.rank, p.label, s.run, replace(c, setting=p.rank))
              for p in keep[1:] for s in sources
              if (c := measured_elsewhere(plan[0].settings, p.settings, s, margin)) is not None]
    return keep, [replace(r, comparison=replace(r.comparison, setting=len(keep) + i))
                  for i, r in enumerate(reused)], pooled


def _elsewhere(own: Settings, candidate: Settings, sources: list[RunSummary], margin: float,
               max_rounds: int | None) -> tuple[RunSummary, Comparison] | None:
    """The first earlier run that settled the pair; else, with `max_rounds`, the first whose
    rounds left it out of reach; else None (measured here)."""
    measured = [(s, c) for s in sources if (c := measured_elsewhere(own, candidate, s, margin))]
    settled = next(((s, c) for s, c in measured if c.settled), None)
    if settled is not None or max_rounds is None:
        return settled
    return next(((s, c) for s, c in measured if out_of_reach(c, max_rounds)), None)
