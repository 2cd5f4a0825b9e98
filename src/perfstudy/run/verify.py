"""The verification's measurement: the run's own setting and the model's candidates, measured
in interleaved rounds inside the training (its graphs already compiled).

Each round visits every planned setting once, in a random order drawn from a seeded generator
and recorded (perfstudy.measure.rounds); each visit is a window on a freshly built pipeline at
that setting: step 0 waits for the pipeline's start-up, `verify.warmup_steps` (0) more are
dropped, then the batches the pipeline buffered meanwhile are drained (the drain rule of
perfstudy.measure.steptrace: the first step whose gap reaches half the window's steady gap) and
`verify.min_steps` steps are counted. The window's estimate is the mean of its counted steps: a
whole stretch of the pipeline's cycles, never its steps taken one by one as independent (a slow
step lets the queue fill and the next ones are fast). A window not drained within
`verify.max_steps` is not steady: it pairs nothing in its round.

The run's own setting is measured in the same rounds as the candidates (not taken from the run's
long window measured earlier: that is the sequential A-then-B design that puts drift on one
side). Rounds are added until every candidate is settled (perfstudy.decide's rule: an interval
wholly beyond a 10 % gain, or one that excludes it), `verify.max_rounds`, or the budget
(`verify.budget_share` x the training's wall time). What each window measured is returned;
which setting wins is decide/'s (perfstudy.decide.verification).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable
from typing import Any

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


def _judge(records: list[steptrace.StepTimes], batch_size: int, ver_cfg):
    """(phased frame, drain rule, steady) of a window so far."""
    frame = steptrace.steps_frame(records, batch_size)
    frame, rule = steptrace.assign_phases(frame, ver_cfg.warmup_steps, first_phase="startup",
                                          min_measured_steps=ver_cfg.min_steps)
    counted = int((frame["phase"] == "measured").sum())
    return frame, rule, counted >= ver_cfg.min_steps and "capped" not in rule


def measure_window(step_fn: StepFn, source: str, cfg, settings: Settings, seed: int,
                   first_index: int) -> Window:
    """One window at `settings` on a fresh pipeline; its steps are numbered from first_index.
    It ends once drained with verify.min_steps counted steps, or at verify.max_steps (not
    steady: no estimate)."""
    pipe_cfg = apply_settings(cfg.pipeline, settings)
    most = window_steps(cfg.verify)
    surplus = pipe_cfg.prefetch_size or 2
    started = time.perf_counter()
    dataset = pipeline.create_train_dataset(source, pipe_cfg, most + surplus, seed)
    iterator = dataset.create_tuple_iterator(num_epochs=1)
    records: list[steptrace.StepTimes] = []
    frame, rule, steady = None, "", False
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
            if len(records) >= 1 + cfg.verify.warmup_steps + cfg.verify.min_steps:
                frame, rule, steady = _judge(records, pipe_cfg.batch_size, cfg.verify)
                if steady:
                    break
    finally:
        iterator.stop()
    if frame is None:
        frame, rule, steady = _judge(records, pipe_cfg.batch_size, cfg.verify)
    counted = frame[frame["phase"] == "measured"]
    wall = time.perf_counter() - started
    return Window(step_ms=float(counted["step_ms"].mean()) if steady else None,
                  steps=len(records), steps_counted=int(len(counted)) if steady else 0,
                  wall_s=wall, step_ms_each=[round(float(v), 1) for v in frame["step_ms"]],
                  phases=[str(p) for p in frame["phase"]], drain_rule=rule,
                  gap_share=float(counted["gap_ms"].sum() / counted["step_ms"].sum())
                  if steady and counted["step_ms"].sum() > 0 else None)


def run_rounds(step_fn: StepFn, source: str, cfg, plan: list[Planned], base_seed: int,
               first_index: int, training_wall_s: float) -> Rounds:
    """Measure every planned setting (plan[0]: the run's own) in interleaved rounds."""
    state = {"index": first_index}

    def visit(setting: int, round_: int) -> Window:
        entry = plan[setting]
        window = measure_window(step_fn, source, cfg, entry.settings,
                                base_seed + 1000 * round_ + setting, state["index"])
        state["index"] += window.steps
        log.info("  round %d, %s: %s", round_ + 1, entry.label,
                 f"{window.step_ms:.0f} ms per step over {window.steps_counted} counted steps "
                 f"of {window.steps}" if window.step_ms else f"not steady in {window.steps} steps")
        return window

    ver = cfg.verify
    schedule = Schedule(len(plan), seed=base_seed, min_rounds=ver.min_rounds,
                        max_rounds=ver.max_rounds,
                        budget_s=ver.budget_share * training_wall_s
                        if math.isfinite(training_wall_s) else None,
                        max_interference=ver.max_interference,
                        decided=rounds_mod.all_settled(GAIN_THAT_MATTERS))
    return rounds_mod.run(visit, schedule)
