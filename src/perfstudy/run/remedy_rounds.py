"""The decode remedy measured against its source in one process: a prepared arm's pipeline and
the same pipeline reading the JPEGs it was prepared from, both at the arm's own operator
settings, in interleaved rounds (perfstudy.measure.rounds; windows as the verification's).

Without this, the remedy's gain is the prepared arm's window over its source arm's, two
processes measured minutes apart: on one 2-core host the same claim read 33.9 % then 10.0 %
in two consecutive runs (docs/measurement.md). Paired by round, the host's drift falls on both.
The rounds stop once the ratio is settled against the 10 % band and its interval is within
verify.against_source_precision (+-3 %: a remedy's claimed gain, e.g. "5x", is then decided
unless it sits on the bound), at verify.max_rounds, or at the budget (verify.budget_share x the
training's wall time, stretched as the verification's while the rounds still needed fit).
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


def _decided(precision: float):
    """Settled against the 10 % band and, with a precision target, known to +-precision."""
    settled = rounds_mod.all_settled(GAIN_THAT_MATTERS)
    return rounds_mod.every(settled, rounds_mod.precise(precision)) if precision else settled


def _needed(precision: float):
    """The rounds either stop rule still needs (the budget stretches for them while they fit)."""
    settle = rounds_mod.rounds_to_settle(GAIN_THAT_MATTERS)
    return rounds_mod.most_needed(settle, rounds_mod.rounds_to_precision(precision)) if precision else settle


def run(step_fn: verify.StepFn, prepared_root: str, manifest: dict[str, Any], cfg,
        settings: Settings, base_seed: int, first_index: int,
        training_wall_s: float) -> AgainstSource:
    """The prepared pipeline (setting 0) and its source's (setting 1) at `settings`, in rounds."""
    recorded = manifest.get("source_manifest") or {}
    base = {"source_root": str(recorded.get("root", "")),
            "source_dataset_sha256": recorded.get("dataset_sha256"),
            "training_wall_s": training_wall_s, "budget_share": cfg.verify.budget_share}
    source, why = source_of(manifest)
    if source is None:
        log.info("the prepared source is not measured against its source: %s", why)
        return AgainstSource(rounds=None, skipped=why, **base)
    points = [_Point(settings, "prepared (this run)"), _Point(settings, "the source JPEGs")]
    ver = cfg.verify
    found = verify.measure_rounds(
        step_fn, prepared_root, cfg, points, base_seed, first_index,
        budget_s=verify.budget(ver.budget_share, training_wall_s, ver.budget_base_min_s),
        max_rounds=ver.max_rounds,
        decided=_decided(ver.against_source_precision),
        stretch_s=verify.budget(ver.stretch_share, training_wall_s, ver.budget_base_min_s),
        needed=_needed(ver.against_source_precision),
        leaves=rounds_mod.race(GAIN_THAT_MATTERS),
        sources=[prepared_root, sources.training_source(source)])
    result = AgainstSource(rounds=found, **base)
    c = rounds_mod.compare(found, AgainstSource.PREPARED, AgainstSource.SOURCE, GAIN_THAT_MATTERS)
    log.info("against its source: %d rounds (%s) in %.0f s; the source's step over the prepared "
             "one %s", len(found.orders), found.stopped, found.wall_s,
             f"{c.ratio:.2f}x ({c.low:.2f}-{c.high:.2f})" if c.low is not None else "not paired")
    return result
