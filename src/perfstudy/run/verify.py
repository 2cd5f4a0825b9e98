"""Verification windows: the run's own setting and the model's best candidates, each measured.

After the measured window, the profile and the calibration, the training process (its graphs
already compiled) runs one short window per setting, each on a freshly built pipeline:
step 0 waits for the new pipeline's start-up, `verify.warmup_steps` (0) more are dropped (the
graphs are warm; batches made in parallel during step 0 are what the drain rule drops), then
steps are added until the window is steady and its mean is known well enough:
* steady: the drain rule (perfstudy.measure.steptrace) leaves at least verify.min_steps
  measured steps after the batches buffered at the pipeline's start are gone;
* known: the standard error of the mean measured step is at most verify.target_rse of it,
  or verify.max_steps measured steps were taken;
* or, once steady, its share of the budget is spent: what is left of verify.budget_share x
  the training's wall time, divided among the windows still to run (a window that ends early
  leaves its time to the next). Its standard error is then what it is, and the verdict's
  bar widens with it.
The run's own setting is measured by the run's own window (its measured steps, all of them:
the best-known step of the lot), unless verify.own_window asks for a short window of it too
(a check that short windows read like long ones, at the cost of one more window). The others
run in the order given, and a window that would start once the windows have used
verify.budget_share of the training's wall time is skipped (the first two never are). What
each window measured, its spread and its cost is returned; which setting wins is decide/'s
(perfstudy.decide.verification).
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import open_dict

from perfstudy.common.thresholds import pct
from perfstudy.measure import steptrace
from perfstudy.run import pipeline
from perfstudy.run.settings import ADDRESSED, MP, Settings

log = logging.getLogger(__name__)

# settings key -> the pipeline config field that switches its Python to worker processes
PROCESS_FIELDS = {"pipeline.extra_transform_workers": "extra_transform_multiprocessing",
                  "pipeline.batch_transform_workers": "batch_transform_multiprocessing"}
# a step function: (images, labels) -> (loss, fwd_bwd_end_s, end_s), as train._timed_step
StepFn = Callable[[Any, Any], tuple[float, float, float]]
ALWAYS_RUN = 2  # the first two short windows run whatever the budget says


def window_steps(ver_cfg) -> int:
    """The most steps one window can take (start-up, warm-up, max_steps measured)."""
    return 1 + ver_cfg.warmup_steps + ver_cfg.max_steps


def total_steps(cfg) -> int:
    """The most steps all windows together can take (the optimizer's schedule counts them)."""
    return (cfg.verify.candidates + int(cfg.verify.own_window)) * window_steps(cfg.verify)


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


def rse(values: pd.Series) -> float:
    """Standard error of the mean, as a share of the mean (inf with fewer than 2 values)."""
    if len(values) < 2 or values.mean() <= 0:
        return math.inf
    return float(values.std(ddof=1) / math.sqrt(len(values)) / values.mean())


def _judge(records: list[steptrace.StepTimes], batch_size: int,
           ver_cfg) -> tuple[pd.DataFrame, str, bool, bool]:
    """(phased frame, drain rule, steady, known) of a window so far."""
    frame = steptrace.steps_frame(records, batch_size)
    frame, rule = steptrace.assign_phases(frame, ver_cfg.warmup_steps, first_phase="startup",
                                          min_measured_steps=ver_cfg.min_steps)
    measured = frame[frame["phase"] == "measured"]["step_ms"]
    steady = len(measured) >= ver_cfg.min_steps and "capped" not in rule
    known = steady and (rse(measured) <= ver_cfg.target_rse or len(measured) >= ver_cfg.max_steps)
    return frame, rule, steady, known


def measure_window(step_fn: StepFn, source: str, cfg, settings: Settings, seed: int,
                   first_index: int, allotted_s: float = math.inf) -> dict[str, Any]:
    """One window at `settings` on a fresh pipeline; its steps are numbered from first_index.
    It ends once steady and either known (target_rse, or max_steps) or past `allotted_s`."""
    pipe_cfg = apply_settings(cfg.pipeline, settings)
    most = window_steps(cfg.verify)
    surplus = pipe_cfg.prefetch_size or 2
    started = time.perf_counter()
    dataset = pipeline.create_train_dataset(source, pipe_cfg, most + surplus, seed)
    iterator = dataset.create_tuple_iterator(num_epochs=1)
    records: list[steptrace.StepTimes] = []
    frame, rule, steady, known = pd.DataFrame(), "", False, False
    ended = "max_steps"
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
                frame, rule, steady, known = _judge(records, pipe_cfg.batch_size, cfg.verify)
                # past its share once another step would not fit in it (a step of the last's length)
                spent = time.perf_counter() - started + (end - start)
                if known or (steady and spent >= allotted_s):
                    ended = "known" if known and rse(frame[frame["phase"] == "measured"]["step_ms"]) \
                        <= cfg.verify.target_rse else "max_steps" if known else "time"
                    break
    finally:
        iterator.stop()
    measured = frame[frame["phase"] == "measured"] if len(frame) else frame
    wall = time.perf_counter() - started
    out = {"settings": settings, "seed": seed, "steps": len(records),
           "steps_measured": int(len(measured)), "steady": bool(steady), "drain_rule": rule,
           "wall_s": wall, "first_step": first_index, "ended": ended,
           "step_ms_each": [round(float(v), 1) for v in frame["step_ms"]] if len(frame) else [],
           "phases": list(frame["phase"]) if len(frame) else [],
           "allotted_s": None if math.isinf(allotted_s) else allotted_s}
    if len(measured):
        out.update(step_ms=float(measured["step_ms"].mean()),
                   step_ms_median=float(measured["step_ms"].median()),
                   rse=rse(measured["step_ms"]),
                   gap_share=float(measured["gap_ms"].sum() / measured["step_ms"].sum()))
    return out


def main_window(entry: dict[str, Any], measured_ms: pd.Series) -> dict[str, Any]:
    """The run's own setting as measured by the run's own window (its measured steps)."""
    return {**entry, "main_window": True, "steps": 0, "steps_measured": int(len(measured_ms)),
            "steady": len(measured_ms) >= 2, "ended": "the run's measured window", "wall_s": 0.0,
            "step_ms": float(measured_ms.mean()), "step_ms_median": float(measured_ms.median()),
            "rse": rse(measured_ms)}


def run_windows(step_fn: StepFn, source: str, cfg, plan: list[dict[str, Any]], base_seed: int,
                first_index: int, training_wall_s: float,
                measured_ms: pd.Series | None = None) -> dict[str, Any]:
    """Measure each planned setting (plan[0]: the run's own) within the budget; returns the
    windows (in plan order, each with the plan's own fields) and their cost. The run's own
    setting is taken from its measured window (`measured_ms`, its steps) unless
    verify.own_window asks for a short window of it too."""
    budget_s = cfg.verify.budget_share * training_wall_s
    started = time.perf_counter()
    windows, index = [], first_index
    own_from_main = not cfg.verify.own_window and measured_ms is not None
    to_run = [e for e in plan if not (own_from_main and e["role"] == "current")]
    ran = 0
    for number, entry in enumerate(plan):
        if own_from_main and entry["role"] == "current":
            windows.append(main_window(entry, measured_ms))
            continue
        spent = time.perf_counter() - started
        if ran >= ALWAYS_RUN and spent + windows[-1]["wall_s"] > budget_s:
            windows.append({**entry, "skipped": (
                f"the windows had used {spent:.0f} s of the {budget_s:.0f} s budget "
                f"({pct(cfg.verify.budget_share)} of the training's {training_wall_s:.0f} s)")})
            continue
        log.info("verification window %d/%d: %s", ran + 1, len(to_run), entry.get("label", entry["settings"]))
        # what is left of the budget, shared by the windows still to run
        allotted = max(budget_s - spent, 0.0) / (len(to_run) - ran)
        window = measure_window(step_fn, source, cfg, entry["settings"], base_seed + number, index,
                                allotted)
        ran += 1
        index += window["steps"]
        windows.append({**entry, **window})
        if "step_ms" in window:
            log.info("  measured %.0f ms per step over %d steps (+-%.1f %%)%s", window["step_ms"],
                     window["steps_measured"], 100 * window["rse"],
                     "" if window["steady"] else ", not steady")
    wall = time.perf_counter() - started
    return {"windows": windows, "wall_s": wall, "training_wall_s": training_wall_s,
            "share_of_training": wall / training_wall_s if training_wall_s > 0 else math.nan,
            "budget_share": cfg.verify.budget_share}
