"""Ground truth measured like a verification: every setting of one operator, in interleaved rounds.

A diagnosis benchmark needs to know which settings of the culprit's operator are within 10 % of
the best. One training run per setting, run one after another, is the sequential design that
let a sweep's steps move 25-40 % between runs (docs/measurement.md). Here one run (its graphs
compiled, its own window measured first) measures every swept setting in rounds: each round
visits every setting once, in a seeded random order, each visit a window on a fresh pipeline
(perfstudy.run.verify.measure_window), a disturbed window measured again once; rounds are added
until every setting is placed within the margin of the best or not
(perfstudy.measure.nearbest), `sweep.max_rounds`, or the budget.
"""

from __future__ import annotations

import logging

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.measure import nearbest
from perfstudy.run import verify
from perfstudy.run.settings import Settings
from perfstudy.run.sweep_record import Sweep, points

log = logging.getLogger(__name__)


def values(cfg, cpus: int) -> list[int]:
    """sweep.workers, or 1..the CPUs."""
    return [int(v) for v in cfg.sweep.workers] or list(range(1, cpus + 1))


def total_steps(cfg, cpus: int) -> int:
    """The most steps the sweep's rounds can take (the optimizer's schedule counts them)."""
    if not cfg.sweep.key:
        return 0
    count = len(values(cfg, cpus)) * (2 if cfg.sweep.processes else 1)
    return count * cfg.sweep.max_rounds * verify.RETRIES * verify.window_steps(cfg.verify)


def run(step_fn: verify.StepFn, source: str, cfg, own: Settings, cpus: int, base_seed: int,
        first_index: int, training_wall_s: float) -> Sweep:
    """Measure the sweep (cfg.sweep) in interleaved rounds after the run's own window."""
    swept = points(cfg.sweep.key, values(cfg, cpus), cfg.sweep.processes, own)
    log.info("sweep of %s: %s, in interleaved rounds", cfg.sweep.key,
             ", ".join(p.label for p in swept))
    found = verify.measure_rounds(step_fn, source, cfg, swept, base_seed, first_index,
                                  budget_s=verify.budget(cfg.sweep.budget_share, training_wall_s),
                                  max_rounds=cfg.sweep.max_rounds,
                                  decided=nearbest.all_placed(GAIN_THAT_MATTERS),
                                  leaves=nearbest.eliminated(GAIN_THAT_MATTERS))
    result = Sweep(cfg.sweep.key, swept, found, training_wall_s, cfg.sweep.budget_share)
    for point, placed in zip(swept, result.placed(), strict=True):
        log.info("  %s=%s: %s; within %s of the best: %s", cfg.sweep.key, point.label,
                 placed.step.words(" ms", "rounds") if placed.step else "never steady",
                 pct(GAIN_THAT_MATTERS), placed.near.value)
    return result
