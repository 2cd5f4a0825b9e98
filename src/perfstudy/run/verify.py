"""The verification's measurement: the run's own setting and the model's candidates, measured
in interleaved rounds inside the training (its graphs already compiled).

Each round visits every planned setting once, in a random order drawn from a seeded generator
and recorded (perfstudy.measure.rounds); each visit is a window on a freshly built pipeline at
that setting: step 0 waits for the pipeline's start-up, `verify.warmup_steps` (0) more are
dropped, then the window runs until its step is known over whole cycles of the pipeline
(perfstudy.measure.steptrace.cycle_estimate): between the arrivals of two batches the network
waited for (moments when the queue was empty), at least `verify.min_steps` batches apart, so
batches buffered at the start and a bursty pipeline's fast steps are neither dropped by a
fixed count nor taken as independent samples; or, for a pipeline that keeps up, the mean of
`verify.steady_steps` steps (0: 2 x min_steps). A window not settled within `verify.max_steps` is not steady: it pairs
nothing in its round.

The run's own setting is measured in the same rounds as the candidates (not taken from the run's
long window measured earlier: that is the sequential A-then-B design that puts drift on one
side). A settled candidate leaves the rounds (a race: perfstudy.measure.rounds.race); rounds
are added until every candidate is settled (faster by the chosen rule,
perfstudy.measure.decision_rules; its gain ruled out; or unable to beat the fastest by the
margin), `verify.max_rounds`, or the budget
(`verify.budget_share` x the training's wall time). What each window measured is returned;
which setting wins is decide/'s (perfstudy.decide.verify).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from omegaconf import open_dict

from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.measure import rounds as rounds_mod
from perfstudy.measure import steptrace
from perfstudy.measure.rounds import Rounds, Schedule, Window
from perfstudy.run import pipeline
from perfstudy.run.settings import ADDRESSED, MP, Settings
from perfstudy.run.verify_record import Planned

log = logging.getLogger(__name__)

# settings key -> the pipeline config field that switches its Python to worker processes
PROCESS_FIELDS = {"pipeline.extra_transform_workers": "extra_transform_multiprocessing",
                  "pipeline.batch_transform_workers": "batch_transform_multiprocessing"}
# a step function: (images, labels) -> (loss, fwd_bwd_end_s, end_s), as train._timed_step
StepFn = Callable[[Any, Any], tuple[float, float, float]]
RETRIES = 2  # a disturbed window is measured again once (perfstudy.measure.rounds)


def window_steps(ver_cfg) -> int:
    """The most steps one window can take (start-up, warm-up, max_steps)."""
    return 1 + ver_cfg.warmup_steps + ver_cfg.max_steps


def total_steps(cfg) -> int:
    """The most steps all rounds together can take (the optimizer's schedule counts them)."""
    settings = cfg.verify.candidates + 1
    if cfg.data.prepared and cfg.verify.against_source:  # perfstudy.run.remedy_rounds: 2 more
        settings += 2
    return settings * cfg.verify.max_rounds * RETRIES * window_steps(cfg.verify)


def apply_settings(pipe_cfg, settings: Settings):
    """A copy of the pipeline config with `settings` (workers per key, key + MP for processes)."""
    out = copy.deepcopy(pipe_cfg)
    for key, value in settings.items():
        if key.endswith(MP):
            continue
        if key.startswith(ADDRESSED):  # any pipeline's operator, by address (run.factories)
            address = key.removeprefix(ADDRESSED)
            with open_dict(out):  # free-form dicts: any address may be added
                out.workers[address] = int(value)
                if address.startswith("map_"):  # threads unless the settings say processes
                    out.processes[address] = bool(settings.get(key + MP, False))
            continue
        field = key.removeprefix("pipeline.")
        if field not in out:
            raise KeyError(f"{key} is not a pipeline setting")
        out[field] = int(value)
        if key in PROCESS_FIELDS:
            out[PROCESS_FIELDS[key]] = bool(settings.get(key + MP, False))
    return out


def _phases(count: int, warmup: int, found: steptrace.CycleEstimate) -> list[str]:
    """startup, warmup, then drain (before the counted stretch), measured, after."""
    out = []
    for i in range(count):
        if i == 0:
            out.append("startup")
        elif i <= warmup:
            out.append("warmup")
        elif found.step_ms is not None and found.first < i <= found.last:
            out.append("measured")
        else:
            out.append("drain" if found.step_ms is None or i <= found.first else "after")
    return out


def measure_window(step_fn: StepFn, source: str, cfg, settings: Settings, seed: int,
                   first_index: int) -> Window:
    """One window at `settings` on a fresh pipeline; its steps are numbered from first_index.
    It ends once its step is known over whole pipeline cycles (steptrace.cycle_estimate: a
    stretch of verify.min_steps between two steps that waited for their batch, or a pipeline
    that keeps up), or at verify.max_steps (not steady: no estimate)."""
    pipe_cfg = apply_settings(cfg.pipeline, settings)
    ver = cfg.verify
    most = window_steps(ver)
    first = 1 + ver.warmup_steps
    started = time.perf_counter()
    dataset = pipeline.create_train_dataset(source, pipe_cfg, most + pipeline.batches_ahead(pipe_cfg),
                                            seed)
    iterator = dataset.create_tuple_iterator(num_epochs=1)
    records: list[steptrace.StepTimes] = []
    found = steptrace.CycleEstimate(None, first, first, "no steps")
    try:
        previous_end = time.time()
        for index in range(first_index, first_index + most):
            start = previous_end
            images, labels = next(iterator)[:2]
            data_ready = time.time()
            loss, fwd_bwd_end, end = step_fn(images, labels)
            if not np.isfinite(loss):
                raise FloatingPointError(f"The loss became {loss} at verification step {index}; "
                                         "lower optimizer.lr or check the transforms' output.")
            records.append(steptrace.StepTimes(index, start, data_ready, fwd_bwd_end, end, loss))
            previous_end = end
            if len(records) > first + ver.min_steps:
                found = steptrace.cycle_estimate(steptrace.steps_frame(records, pipe_cfg.batch_size),
                                                 first, ver.min_steps, ver.steady_steps,
                                                 final=len(records) == most)
                if found.step_ms is not None:
                    break
    finally:
        iterator.stop()
    frame = steptrace.steps_frame(records, pipe_cfg.batch_size)
    phases = _phases(len(frame), ver.warmup_steps, found)
    counted = frame[[p == "measured" for p in phases]]
    return Window(step_ms=found.step_ms, steps=len(records), steps_counted=int(len(counted)),
                  wall_s=time.perf_counter() - started,
                  step_ms_each=[round(float(v), 1) for v in frame["step_ms"]], phases=phases,
                  drain_rule=found.rule,
                  gap_share=float(counted["gap_ms"].sum() / counted["step_ms"].sum())
                  if len(counted) and counted["step_ms"].sum() > 0 else None)


class Point(Protocol):
    """What a round visits: a setting, and its name in the log (Planned, sweep.SweepPoint)."""

    settings: Settings
    label: str


def measure_rounds(step_fn: StepFn, source: str, cfg, points: Sequence[Point], base_seed: int,
                   first_index: int, *, budget_s: float | None, max_rounds: int,
                   decided: Callable[[Rounds], bool], stretch_s: float | None = None,
                   needed: Callable[[Rounds], int | None] | None = None,
                   sources: Sequence[str] | None = None,
                   leaves: Callable[[Rounds], set[int]] | None = None) -> Rounds:
    """Measure every point's setting in interleaved rounds (windows as measure_window), until
    `decided`, max_rounds or the budget (verify.min_rounds and verify.max_interference apply).
    `sources`: what each point's pipeline reads (default: `source` for all); `leaves`: the
    points settled, left out of the rounds that follow (a race)."""
    state = {"index": first_index}

    def visit(setting: int, round_: int) -> Window:
        entry = points[setting]
        window = measure_window(step_fn, sources[setting] if sources else source, cfg, entry.settings,
                                base_seed + 1000 * round_ + setting, state["index"])
        state["index"] += window.steps
        log.info("  round %d, %s: %s", round_ + 1, entry.label,
                 f"{window.step_ms:.0f} ms per step over {window.steps_counted} counted steps "
                 f"of {window.steps}" if window.step_ms else f"not steady in {window.steps} steps")
        return window

    schedule = Schedule(len(points), seed=base_seed, min_rounds=cfg.verify.min_rounds,
                        max_rounds=max_rounds, budget_s=budget_s,
                        max_interference=cfg.verify.max_interference, decided=decided,
                        stretch_s=stretch_s, needed=needed or (lambda rounds: None),
                        leaves=leaves or (lambda rounds: set()))
    return rounds_mod.run(visit, schedule)


def budget(share: float, training_wall_s: float, base_min_s: float = 0.0) -> float | None:
    """The rounds' budget: a share of the training's wall time, or of `base_min_s` where the
    training was shorter (None: unlimited)."""
    return share * max(training_wall_s, base_min_s) if math.isfinite(training_wall_s) else None


def prediction_bounds(bound: float, plan: list[Planned], own_step_ms: float | None) -> tuple[int, list[float]] | None:
    """(the model pick's index in the plan, the ratios to the own setting between which its
    prediction is within +-`bound`), or None (no bound, no pick among the candidates, no own
    step). A claim reads the prediction's error as relative / ratio - 1, relative being the
    pick's predicted step over the run's own measured one (perfstudy.decide.paired.
    prediction_error): |error| <= bound is the ratio within [relative / (1 + bound),
    relative / (1 - bound)]."""
    pick = next((p.rank for p in plan[1:] if p.is_model_pick), None)
    if not bound or pick is None or own_step_ms is None or not math.isfinite(own_step_ms) or own_step_ms <= 0:
        return None
    relative = plan[pick].predicted_ms / own_step_ms
    return pick, [relative / (1 + bound), relative / (1 - bound)]


def _rules(ver, plan: list[Planned], own_step_ms: float | None, prior: rounds_mod.Prior | None = None):
    """(decided, needed, leaves): every candidate settled against the 10 % band (the race; a
    pair an earlier run measured too is read with its rounds there pooled in, `prior`), and
    where verify.prediction_bound is set, the model pick's ratio on one side of each bound of
    its prediction (perfstudy.measure.rounds.bounds_target): the pick leaves the race
    only once both let it go."""
    band = (rounds_mod.all_settled(GAIN_THAT_MATTERS, prior=prior),
            rounds_mod.rounds_to_settle(GAIN_THAT_MATTERS, prior=prior),
            rounds_mod.race(GAIN_THAT_MATTERS, prior=prior))
    found = prediction_bounds(ver.prediction_bound, plan, own_step_ms)
    if found is None:
        return band
    pick, bounds = found
    target, only = rounds_mod.bounds_target(bounds), frozenset({pick})
    log.info("rounds go on until %s's step over the own one is outside or inside %.2f-%.2f "
             "(its prediction within +-%.0f %%: verify.prediction_bound)", plan[pick].label,
             bounds[0], bounds[1], 100 * ver.prediction_bound)
    return (rounds_mod.every(band[0], rounds_mod.target_met(target, only=only)),
            rounds_mod.most_needed(band[1], rounds_mod.target_needed(target, only=only)),
            rounds_mod.both_leave(band[2], rounds_mod.target_leaves(target, only=only)))


def run_rounds(step_fn: StepFn, source: str, cfg, plan: list[Planned], base_seed: int,
               first_index: int, training_wall_s: float, own_step_ms: float | None = None,
               prior: rounds_mod.Prior | None = None) -> Rounds:
    """The verification: every planned setting (plan[0]: the run's own) in interleaved rounds,
    until every candidate is settled against plan[0] and the model pick's prediction is decided
    against verify.prediction_bound where set (`own_step_ms`: the run's own measured step, which
    the prediction is relative to); the budget stretched to verify.stretch_share while the
    rounds that would settle them fit. `prior`: earlier runs' intervals of a candidate against
    plan[0] (verify.reuse_from), pooled with these rounds where they are read."""
    ver = cfg.verify
    decided, needed, leaves = _rules(ver, plan, own_step_ms, prior)
    return measure_rounds(step_fn, source, cfg, plan, base_seed, first_index,
                          budget_s=budget(ver.budget_share, training_wall_s, ver.budget_base_min_s),
                          max_rounds=ver.max_rounds, decided=decided,
                          stretch_s=budget(ver.stretch_share, training_wall_s, ver.budget_base_min_s),
                          needed=needed, leaves=leaves)
