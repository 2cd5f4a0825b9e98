"""The decode remedy measured against its source in one process: a prepared arm's pipeline and
the same pipeline reading the JPEGs it was prepared from, both at the arm's own operator
settings, in interleaved rounds (perfstudy.measure.rounds; windows as the verification's).

Without this, the remedy's gain is the prepared arm's window over its source arm's, two
processes measured minutes apart: on one 2-core host the same claim read 33.9 % then 10.0 %
in two consecutive runs (docs/measurement.md). Paired by round, the host's drift falls on both.
The rounds stop once the ratio is settled against the 10 % band and against each bound the
study's claims judge it by (verify.against_source_bounds, e.g. [5.0] for "5x faster": a claim
is then decided unless the gain sits on its bound; optionally a precision,
verify.against_source_precision), at verify.max_rounds, or at the budget (verify.budget_share x
the training's wall time, stretched as the verification's while the rounds still needed fit).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.data import dataset as data_mod
from perfstudy.data import sources
from perfstudy.measure import rounds as rounds_mod
from perfstudy.run import verify
from perfstudy.run.settings import Settings
from perfstudy.run.verify_record import AgainstSource

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Point:
    settings: Settings
    label: str


def source_of(manifest: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The source dataset's manifest a prepared manifest was made from, or why there is none
    (its manifest moved, or a file of it changed: never measured silently)."""
    recorded = manifest.get("source_manifest") or {}
    path = recorded.get("path")
    if not path or not Path(path).is_file():
        return None, f"the source's manifest {path or '(not recorded)'} is not there"
    try:
        found = data_mod.load_manifest(path)
        sources.verify(found)
    except data_mod.DatasetError as error:
        return None, f"the source cannot be read as recorded: {error}"
    return found, None


def _targets(ver, extra: tuple[float, ...] = ()) -> list[rounds_mod.Target]:
    """What the remedy's ratio must meet besides the 10 % band: the bounds the study's claims
    judge it by (verify.against_source_bounds, set by the workflow from the claims file; and
    `extra`, the gains at which a claim on the source's prediction turns) and a precision
    (verify.against_source_precision; 0: none)."""
    bounds = sorted({*ver.against_source_bounds, *extra})
    found = [rounds_mod.bounds_target(bounds)] if bounds else []
    return found + ([rounds_mod.precision_target(ver.against_source_precision)]
                    if ver.against_source_precision else [])


def budget_floor_s(ver) -> float:
    """The seconds the rounds' budget shares are of at least: verify.against_source_budget_min_s,
    or the verification's floor where it is 0 (the two apart: a floor sized for the source's slow
    step made the prepared arm's own verification run 12 rounds, 7 past its budget)."""
    return ver.against_source_budget_min_s or ver.budget_base_min_s


def _rules(ver, extra: tuple[float, ...] = ()):
    """(decided, needed, leaves) for the rounds: the band's, and each target's beside it. A
    setting leaves the race only once the band and every target let it go (on the band
    alone, the source left after 3 rounds, and the rounds measured the prepared pipeline by
    itself)."""
    targets = _targets(ver, extra)
    decided = rounds_mod.every(rounds_mod.all_settled(GAIN_THAT_MATTERS),
                               *[rounds_mod.target_met(t) for t in targets])
    needed = rounds_mod.most_needed(rounds_mod.rounds_to_settle(GAIN_THAT_MATTERS),
                                    *[rounds_mod.target_needed(t) for t in targets])
    leaves = rounds_mod.both_leave(rounds_mod.race(GAIN_THAT_MATTERS),
                                   *[rounds_mod.target_leaves(t) for t in targets])
    return decided, needed, leaves


def run(step_fn: verify.StepFn, prepared_root: str, manifest: dict[str, Any], cfg,
        settings: Settings, base_seed: int, first_index: int,
        training_wall_s: float, extra_bounds: tuple[float, ...] = ()) -> AgainstSource:
    """The prepared pipeline (setting 0) and its source's (setting 1) at `settings`, in rounds."""
    recorded = manifest.get("source_manifest") or {}
    base = {"source_root": str(recorded.get("root", "")),
            "source_dataset_sha256": recorded.get("dataset_sha256"),
            "training_wall_s": training_wall_s, "budget_share": cfg.verify.budget_share,
            "budget_base_min_s": budget_floor_s(cfg.verify)}
    source, why = source_of(manifest)
    if source is None:
        log.info("the prepared source is not measured against its source: %s", why)
        return AgainstSource(rounds=None, skipped=why, **base)
    points = [_Point(settings, "prepared (this run)"), _Point(settings, "the source JPEGs")]
    ver = cfg.verify
    floor_s = budget_floor_s(ver)
    decided, needed, leaves = _rules(ver, tuple(extra_bounds))
    found = verify.measure_rounds(
        step_fn, prepared_root, cfg, points, base_seed, first_index,
        budget_s=verify.budget(ver.budget_share, training_wall_s, floor_s),
        max_rounds=ver.max_rounds,
        decided=decided,
        stretch_s=verify.budget(ver.stretch_share, training_wall_s, floor_s),
        needed=needed,
        leaves=leaves,
        sources=[prepared_root, sources.training_source(source)])
    result = AgainstSource(rounds=found, **base)
    c = rounds_mod.compare(found, AgainstSource.PREPARED, AgainstSource.SOURCE, GAIN_THAT_MATTERS)
    log.info("against its source: %d rounds (%s) in %.0f s; the source's step over the prepared "
             "one %s", len(found.orders), found.stopped, found.wall_s,
             f"{c.ratio:.2f}x ({c.low:.2f}-{c.high:.2f})" if c.low is not None else "not paired")
    return result
