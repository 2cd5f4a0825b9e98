"""The verification's plan and what its rounds measured, as records (summary.json's
`verification`). Light: read by every later stage without importing MindSpore.

The plan is made by perfstudy.decide.verify.plan (the model proposes), measured by
perfstudy.run.verify (interleaved rounds), decided by perfstudy.decide.verify.verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perfstudy.common.records import doc
from perfstudy.measure.intervals import RatioInterval
from perfstudy.measure.rounds import Comparison, Rounds
from perfstudy.run.settings import Settings


@dataclass(frozen=True)
class Planned:
    """One setting the verification measures (plan[0]: the run's own)."""

    role: str = doc("current (the run's own setting, the reference) | candidate")
    rank: int = doc("its index in the plan")
    settings: Settings = doc("the operator settings (all sized keys)")
    label: str = doc("the settings as a user would type them")
    predicted_ms: float = doc("the model's step at these settings")
    predicted_binding: str = doc("what the model says binds the step there")
    is_model_pick: bool = doc("the model's own pick")


@dataclass(frozen=True)
class Reused:
    """A planned candidate not measured again: an earlier run's rounds settled it against this
    run's own setting, or left it open so far from settled that this run's rounds could not
    settle it either (out of reach: perfstudy.decide.reuse)."""

    label: str = doc("the candidate's settings as a user would type them")
    settings: Settings = doc("its operator settings")
    predicted_ms: float = doc("the model's step there (this run's model)")
    predicted_binding: str = doc("what the model says binds the step there")
    is_model_pick: bool = doc("the model's own pick")
    source_run: str = doc("the run whose rounds measured it (its folder name)")
    comparison: Comparison = doc("its step over this run's own setting, paired by round in the "
                                 "source run's rounds (setting: its index past this run's plan)")
    settled: bool = doc("settled there (False: open there, and more rounds than this run's "
                        "verify.max_rounds would be needed to settle it: out of reach)", default=True)


@dataclass(frozen=True)
class Earlier:
    """A candidate measured here that an earlier run of the same pipeline measured against this
    run's own setting too, without settling it: its rounds there are pooled with this run's."""

    setting: int = doc("the candidate's index in this run's plan")
    label: str = doc("the candidate's settings as a user would type them")
    source_run: str = doc("the run whose rounds measured the pair (its folder name)")
    comparison: Comparison = doc("the candidate's step over this run's own setting, paired by "
                                 "round in the source run's rounds")


def prior_of(earlier: list[Earlier]) -> dict[int, list[RatioInterval]]:
    """The earlier runs' intervals of each candidate, by its index in this run's plan (the
    rounds pool them with this run's: perfstudy.measure.rounds.compare)."""
    out: dict[int, list[RatioInterval]] = {}
    for e in earlier:
        if e.comparison.interval is not None:
            out.setdefault(e.setting, []).append(e.comparison.interval)
    return out


@dataclass(frozen=True)
class Proposal:
    """What the model proposes to measure (perfstudy.orchestrate.analyze.propose)."""

    plan: list[Planned]  # empty: nothing to verify (skipped says why)
    skipped: str | None = None
    model_recommendation: str | None = None
    reused: list[Reused] = field(default_factory=list)  # settled by an earlier run's rounds
    earlier: list[Earlier] = field(default_factory=list)  # open there: pooled with this run's


@dataclass(frozen=True)
class Verification:
    """The run's own setting and the model's candidates, measured in interleaved rounds."""

    plan: list[Planned] = doc("the settings measured (plan[0]: the run's own)")
    rounds: Rounds | None = doc("every round and window (None: nothing was measured)")
    training_wall_s: float = doc("the training's wall time before the verification")
    budget_share: float = doc("verify.budget_share: the rounds' budget as a share of it")
    skipped: str | None = doc("why nothing was measured", default=None)
    model_recommendation: str | None = doc("the model's answer the plan was made from",
                                           default=None)
    stretch_share: float | None = doc("verify.stretch_share: how far the budget may stretch "
                                      "while the rounds still needed fit (None: recorded "
                                      "before it existed)", default=None)
    budget_base_min_s: float = doc("verify.budget_base_min_s: the shares are of at least this "
                                   "many seconds (0: of the training's wall time alone)",
                                   default=0.0)
    prediction_bound: float = doc("verify.prediction_bound: the rounds went on until the model "
                                  "pick's prediction was decided against +-this share (0: not "
                                  "asked)", default=0.0)
    reused: list[Reused] = doc("planned candidates not measured again: an earlier run's rounds "
                               "settled them against this run's own setting (verify.reuse_from)",
                               default_factory=list)
    earlier: list[Earlier] = doc("candidates measured here whose pair an earlier run measured "
                                 "without settling it: its rounds are pooled with this run's "
                                 "(verify.reuse_from)", default_factory=list)

    @property
    def wall_s(self) -> float:
        return self.rounds.wall_s if self.rounds else 0.0

    def prior(self) -> dict[int, list[RatioInterval]]:
        """The earlier runs' intervals of each candidate measured here, by its index."""
        return prior_of(self.earlier)

    @property
    def share_of_training(self) -> float:
        return self.wall_s / self.training_wall_s if self.training_wall_s > 0 else float("nan")


@dataclass(frozen=True)
class AgainstSource:
    """A prepared arm's pipeline and the same pipeline on the source it was prepared from (the
    JPEGs), both at the run's own operator settings, measured in interleaved rounds in the
    prepared arm's process: the remedy's gain as a ratio paired by round, not two arms' windows
    measured minutes apart (perfstudy.run.remedy_rounds)."""

    source_root: str = doc("the source the prepared copy was made from (an ImageFolder)")
    source_dataset_sha256: str | None = doc("the source dataset's content hash")
    rounds: Rounds | None = doc("setting 0: the prepared source (this run's), 1: the source "
                                "(None: nothing was measured)")
    training_wall_s: float = doc("the training's wall time before the rounds")
    budget_share: float = doc("verify.budget_share: the rounds' budget as a share of it")
    skipped: str | None = doc("why nothing was measured", default=None)
    budget_base_min_s: float = doc("the share is of at least this many seconds "
                                   "(verify.against_source_budget_min_s, else "
                                   "verify.budget_base_min_s; 0: the training's wall time alone)",
                                   default=0.0)

    PREPARED = 0
    SOURCE = 1

    @property
    def wall_s(self) -> float:
        return self.rounds.wall_s if self.rounds else 0.0
