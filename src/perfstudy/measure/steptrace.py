"""Step-trace arithmetic: host timestamps of each step -> gap / fwd+bwd / tail, and the summary.

Definitions (the case study's, see DESIGN.md):
  iteration gap     end of the previous step -> batch in hand (the step waited for data)
  forward+backward  batch in hand -> loss and gradients computed
  iteration tail    gradients computed -> optimizer update done (end of step)
Consecutive steps share a boundary, so the step times add up to the wall time.

Which steps are summarised ("steady state"):
  1. step 0 is excluded: it compiles the graphs, or, when they were compiled on a
     synthetic batch before the pipeline started (trainer.compile_first, the default),
     it waits for the pipeline's start-up;
  2. `warmup_steps` more are excluded;
  3. drain rule: while the pipeline's queues still hold batches buffered during a compile
     (trainer.compile_first=false, as in the article), steps get data at once and the run
     looks compute-bound. The steady gap level
     G is the median gap of the last half of the run. If G is below the noise floor
     (max(5 ms, 5 % of the median step)), the pipeline keeps up and nothing more is dropped.
     Otherwise the queue has drained at the first step, after 1 and 2, whose gap reaches G/2;
     the steps before it are excluded as `drain` steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

STEP_COLUMNS = ["step", "phase", "gap_ms", "fwd_bwd_ms", "tail_ms", "step_ms", "loss",
                "images_per_s", "start_time_s"]
PROFILE_PHASES = ("profile_startup", "profiled")
NOISE_FLOOR_MS = 5.0
NOISE_FLOOR_SHARE = 0.05


@dataclass
class StepTimes:
    """Host timestamps (seconds, time.time() clock) of one training step."""

    step: int
    start_s: float  # end of the previous step (or of the loop's start)
    data_ready_s: float  # batch in hand
    fwd_bwd_end_s: float  # loss and gradients computed (synchronised)
    end_s: float  # optimizer update done (synchronised)
    loss: float


def steps_frame(records: list[StepTimes], batch_size: int) -> pd.DataFrame:
    """One row per step in milliseconds, the `phase` column still unset."""
    rows = []
    for rec in records:
        step_ms = (rec.end_s - rec.start_s) * 1e3
        rows.append({
            "step": rec.step,
            "phase": "",
            "gap_ms": (rec.data_ready_s - rec.start_s) * 1e3,
            "fwd_bwd_ms": (rec.fwd_bwd_end_s - rec.data_ready_s) * 1e3,
            "tail_ms": (rec.end_s - rec.fwd_bwd_end_s) * 1e3,
            "step_ms": step_ms,
            "loss": rec.loss,
            "images_per_s": batch_size / (step_ms / 1e3) if step_ms > 0 else float("nan"),
            "start_time_s": rec.start_s,
        })
    return pd.DataFrame(rows, columns=STEP_COLUMNS)


def assign_phases(frame: pd.DataFrame, warmup_steps: int, first_phase: str = "compile",
                  min_measured_steps: int = 1) -> tuple[pd.DataFrame, str]:
    """Label each step compile|startup / warmup / drain / measured; return frame and reason.

    first_phase is "startup" when the graphs were compiled before the pipeline started
    (step 0 then waits for the pipeline's first batch), "compile" when step 0 compiles.
    """
    frame = frame.copy()
    count = len(frame)
    first_candidate = min(count, 1 + warmup_steps)
    phases = [first_phase] + ["warmup"] * (first_candidate - 1) + [""] * (count - first_candidate)
    phases = phases[:count]
    tail_half = frame["gap_ms"].iloc[max(first_candidate, count // 2):]
    steady_gap = float(tail_half.median()) if len(tail_half) else 0.0
    median_step = float(frame["step_ms"].iloc[first_candidate:].median()) if count > first_candidate else 0.0
    floor = max(NOISE_FLOOR_MS, NOISE_FLOOR_SHARE * median_step)
    drain_end = first_candidate
    if steady_gap < floor:
        reason = (f"steady gap {steady_gap:.1f} ms is below the noise floor {floor:.1f} ms: "
                  "the pipeline keeps up, no drain steps")
    else:
        gaps = frame["gap_ms"].to_numpy()
        reached = [i for i in range(first_candidate, count) if gaps[i] >= steady_gap / 2]
        drain_end = reached[0] if reached else first_candidate
        reason = (f"steady gap {steady_gap:.1f} ms (median of the last half); the queue counts "
                  f"as drained at step {drain_end}, the first whose gap reached half of it")
        latest = max(first_candidate, count - min_measured_steps)
        if drain_end > latest:  # keep a summary rather than lose the run; say so
            drain_end = latest
            reason += (f"; capped at step {latest} to keep {min_measured_steps} measured steps "
                       "(the run may be too short to reach a steady state: raise trainer.steps)")
    for i in range(first_candidate, count):
        phases[i] = "drain" if i < drain_end else "measured"
    frame["phase"] = phases
    return frame, reason


def _spread(values: pd.Series) -> dict[str, float]:
    arr = values.to_numpy(dtype=float)
    return {"median": float(np.median(arr)), "p10": float(np.percentile(arr, 10)),
            "p90": float(np.percentile(arr, 90)), "mean": float(np.mean(arr))}


def summarize(frame: pd.DataFrame, batch_size: int, min_measured_steps: int) -> dict[str, Any]:
    """Summary statistics of the measured steps (frame must carry phases)."""
    measured = frame[frame["phase"] == "measured"]
    if len(measured) < min_measured_steps:
        raise ValueError(
            f"Only {len(measured)} steady-state steps remain after excluding compile, warm-up "
            f"and drain steps (need {min_measured_steps}); raise trainer.steps.")
    window_ms = float(measured["step_ms"].sum())
    steady_step_ms = window_ms / len(measured)
    # Steps of the separate profiling pipeline follow the run: neither measured nor excluded.
    timed = frame[~frame["phase"].isin(PROFILE_PHASES)]
    excluded = timed[timed["phase"] != "measured"]["phase"].value_counts().to_dict()
    return {
        "steps_total": int(len(timed)),
        "steps_measured": int(len(measured)),
        "steps_excluded": int(len(timed) - len(measured)),
        "steps_profiled": int((frame["phase"] == "profiled").sum()),
        "steps_excluded_by_phase": {k: int(v) for k, v in excluded.items()},
        "first_measured_step": int(measured["step"].iloc[0]),
        # wall time from the pipeline's launch to the window (the steps before it)
        "before_window_ms": float(timed[timed["step"] < measured["step"].iloc[0]]["step_ms"].sum()),
        "first_step_ms": float(frame["step_ms"].iloc[0]),
        "step_ms": _spread(measured["step_ms"]),
        "gap_ms": _spread(measured["gap_ms"]),
        "fwd_bwd_ms": _spread(measured["fwd_bwd_ms"]),
        "tail_ms": _spread(measured["tail_ms"]),
        "gap_share": float(measured["gap_ms"].sum() / window_ms) if window_ms > 0 else 0.0,
        "window_wall_s": window_ms / 1e3,
        "steady_step_ms": steady_step_ms,
        "images_per_s": batch_size / (steady_step_ms / 1e3),
        "final_loss": float(frame["loss"].iloc[-1]),
    }


def window_stats(frame: pd.DataFrame, batch_size: int) -> dict[str, Any] | None:
    """Steady step and gap share of a run of steps (e.g. the profiled window), or None."""
    if frame is None or not len(frame):
        return None
    window_ms = float(frame["step_ms"].sum())
    return {"steps": int(len(frame)), "steady_step_ms": window_ms / len(frame),
            "gap_share": float(frame["gap_ms"].sum() / window_ms) if window_ms > 0 else 0.0,
            "images_per_s": batch_size / (window_ms / len(frame) / 1e3) if window_ms > 0 else 0.0}


def cpu_bound(pipeline_cpu_ms: float, compute_cpu_ms: float, cpu_count: int) -> float:
    """Floor on a step when pipeline and network share `cpu_count` cores (ms per batch)."""
    return (pipeline_cpu_ms + compute_cpu_ms) / cpu_count


def step_floor(*, compute_wall_ms: float, compute_cpu_ms: float, pipeline_wall_ms: float,
               pipeline_cpu_ms: float, cpu_count: int) -> dict[str, Any]:
    """The three floors a step cannot beat, and which one binds.

    compute: the network alone (no pipeline running); input: the pipeline alone at this
    arm's worker count; cpu: both sharing the cores. Returns compute_floor_ms,
    input_floor_ms, cpu_floor_ms, floor_ms (the highest) and binding_floor (its name).
    """
    floors = {
        "compute_floor_ms": compute_wall_ms,
        "input_floor_ms": pipeline_wall_ms,
        "cpu_floor_ms": cpu_bound(pipeline_cpu_ms, compute_cpu_ms, cpu_count),
    }
    binding = max(floors, key=floors.get)
    return {**floors, "floor_ms": floors[binding], "binding_floor": binding.replace("_floor_ms", "")}


@dataclass(frozen=True)
class CycleEstimate:
    """A window's step estimated over whole cycles of its pipeline (see cycle_estimate)."""

    step_ms: float | None  # None: no whole stretch of min_steps yet
    first: int  # the counted stretch: steps first+1 .. last (row positions)
    last: int
    rule: str


# A keeping-up pipeline on shared cores fills what it holds ahead (contending with the network:
# slow steps), then blocks while the network drains it alone (a run of fast steps): a step is
# fast within FAST_SHARE of the window's fast steps (its 10th percentile), and a run of
# FAST_RUN of them is the pipeline idle on a full buffer (one fast step can be a burst)
FAST_SHARE = 1.25
FAST_RUN = 3
# steps alike enough to average before a window's last step (coefficient of variation): the
# prepared pipeline's windows vary 3 %, a two-worker fill phase's 30-40 %
ALIKE_CV = 0.25


def buffer_full_points(frame: pd.DataFrame, first_candidate: int) -> tuple[list[int], bool]:
    """The steps at which a keeping-up pipeline's buffer was full again: the first of each run
    of FAST_RUN fast steps that follows a slow step (from first_candidate on); and whether the
    window cycles at all (both slow steps and such runs in it)."""
    steps = frame["step_ms"].to_numpy(dtype=float)
    if len(steps) <= first_candidate:
        return [], False
    fast = steps <= FAST_SHARE * float(np.percentile(steps[first_candidate:], 10))
    points, idles = [], False
    for i in range(first_candidate, len(steps) - FAST_RUN + 1):
        if fast[i:i + FAST_RUN].all():
            idles = True
            if i > first_candidate and not fast[i - 1]:
                points.append(i)
    # a stray slow step (a hiccup) is no fill phase: cycling needs FAST_RUN slow steps too
    # a point counts after a fill (FAST_RUN slow steps since the one before): an idle run cut by
    # one slow step is one idle run, not a cycle (it read 711 ms over 4 steps, the cycle ~1.5 s)
    kept = points[:1]
    for i in points[1:]:
        if int((~fast[kept[-1]:i]).sum()) >= FAST_RUN:
            kept.append(i)
    return kept, idles and int((~fast[first_candidate:]).sum()) >= FAST_RUN


# how a window counted between two steps that waited says so (its drain_rule ends with this):
# its counted stretch is whole cycles from one wait to the next, so its gap share is the
# pipeline's own (a keeping-up window's mean, or its buffer cycles, are not cut at waits)
WAITED_CYCLES = "whole pipeline cycles"


# how a window counted between two steps at which a keeping-up pipeline's buffer was full again
# says so: whole cycles of its fill and drain (cycle_estimate's second rule)
BUFFER_CYCLES = "whole buffer cycles of a pipeline that keeps up"


def counted_over_whole_cycles(drain_rule: str) -> bool:
    """Whether a window (by its recorded drain_rule) was counted between two regeneration points:
    from one waited step to the next (a pipeline that does not keep up), or from one full buffer
    to the next (one that keeps up and cycles). Over whole cycles the pipeline produced exactly
    what was consumed, so the window's step and its gap share are the pipeline's own; a mean
    of steps that stopped mid-cycle is not (a fill counted alone reads high, a drain low)."""
    return drain_rule.endswith((WAITED_CYCLES, BUFFER_CYCLES))


def cycle_estimate(frame: pd.DataFrame, first_candidate: int, min_steps: int,
                   steady_steps: int = 0, final: bool = False) -> CycleEstimate:
    """The step of a window from whole cycles of its pipeline, never from steps taken one by
    one as independent (a slow step lets the queue fill; the next ones are fast).

    Regeneration points: a step that waited for its batch (gap above the noise floor) had an
    empty queue when it asked; its batch's arrival is a moment where the pipeline's state
    starts afresh. Between two such arrivals the pipeline produced exactly the batches in
    between, so (arrival of the last - arrival of the first) / steps between them is its
    step, whatever batches were buffered before the first (the drain) and however bursty its
    workers (two workers finishing together give a slow step then a fast one: both counted).
    A window whose steps rarely wait (at most a quarter of them) is the network's: the mean of
    its steps, once it has run `steady_steps` (0: 2 x min_steps; fast steps alone could still
    be batches buffered at the start: a fresh pipeline holds a few, so the longer run shows
    they are not; the change in what it holds ahead is this mean's error, falling as 1/steps).

    A keeping-up pipeline that cycles (on shared cores it fills its buffer, slowing the
    network, then idles while the network drains it: at cpu_demo 6-9 steps of ~590 ms every
    ~16) has regeneration points too: the first step of each idle run, where its buffer is
    full again (buffer_full_points). Between two of them it produced exactly the batches
    consumed, so (start of the last - start of the first) / steps between them is its step,
    once they are `steady_steps` apart (a keeping-up window's mean is not trusted over fewer);
    a mean of 12 steps from a drained start counts the fill and not the idling, and read the
    two-worker setting 1.6-2.0 s where its whole cycles read 1.5 s. Such a window, and any
    whose steps are not alike (ALIKE_CV: a fill with no idle run yet), waits for a second
    point until its last step (`final`), where it falls back to the mean.
    """
    steady = steady_steps or 2 * min_steps
    count = len(frame)
    rows = frame.iloc[first_candidate:]
    if len(rows) == 0:
        return CycleEstimate(None, first_candidate, first_candidate, "no steps after start-up")
    median_step = float(rows["step_ms"].median())
    floor = max(NOISE_FLOOR_MS, NOISE_FLOOR_SHARE * median_step)
    waited = [i for i in range(first_candidate, count) if frame["gap_ms"].iloc[i] >= floor]
    if len(waited) >= 2 and waited[-1] - waited[0] >= min_steps:
        a, b = waited[0], waited[-1]
        arrival = frame["start_time_s"] + frame["gap_ms"] / 1e3
        step = (float(arrival.iloc[b]) - float(arrival.iloc[a])) * 1e3 / (b - a)
        return CycleEstimate(step, a, b, f"{b - a} batches between the arrivals of steps {a} and "
                             f"{b}, both waited for (gap >= {floor:.0f} ms): {WAITED_CYCLES}")
    keeps_up = len(waited) <= len(rows) / 4
    full, cycles = buffer_full_points(frame, first_candidate) if keeps_up else ([], False)
    # whole buffer cycles over steady steps at least: two points a short fill apart (3 slow
    # steps between idle runs, 2026-12-07) need not hold the same buffer, and 8 such steps read
    # a two-worker setting 1269 ms, under the CPU floor (1852 ms) no steady state can beat
    if len(full) >= 2 and full[-1] - full[0] >= max(min_steps, steady):
        a, b = full[0], full[-1]
        step = (float(frame["start_time_s"].iloc[b]) - float(frame["start_time_s"].iloc[a])) * 1e3 / (b - a)
        return CycleEstimate(step, a - 1, b - 1, f"{b - a} steps between steps {a} and {b}, each the "
                             "first of a run of fast steps after slow ones (the pipeline's buffer "
                             f"full again): {BUFFER_CYCLES}")
    # the mean before the last step only where the steps are alike: a drained start's first
    # dozen steps can be the fill alone (1.3-3.2 s, no idle run yet), whose mean reads slow
    alike = float(rows["step_ms"].std(ddof=0)) <= ALIKE_CV * float(rows["step_ms"].mean())
    if keeps_up and (len(rows) >= steady and not cycles and alike or final and len(rows) >= min_steps):
        return CycleEstimate(float(rows["step_ms"].mean()), first_candidate - 1, count - 1,
                             f"{len(waited)} of {len(rows)} steps waited beyond the noise floor "
                             f"({floor:.0f} ms): the pipeline keeps up; the mean of the steps"
                             + (", no whole buffer cycle within the window" if cycles else ""))
    return CycleEstimate(None, first_candidate, count - 1,
                         f"{len(waited)} of {len(rows)} steps waited; no stretch of {min_steps} "
                         "between two that did, nor a pipeline that keeps up")
