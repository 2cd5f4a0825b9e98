"""The verification's decision calibrated: how often its decision is wrong, measured on this machine.

The verification (perfstudy.run.verify, perfstudy.decide.verify) says a candidate is
faster only by the rule of perfstudy.measure.decision_rules (a gain estimated at 10 % or more,
its whole 95 % interval beyond 5 %). Whether that
rule keeps its promises on a real, noisy host is a measurement, not an argument, so it is run on
the real training with effects whose truth is known:
* A/A: the run's own setting against itself (the same pipeline, built afresh per window): every
  "faster" or "slower" is a false "changed";
* a known effect on the *reference* setting, so the plain candidate is truly faster, sized to
  `effect` x the plain step measured first, injected where the step's time is spent:
  `thread`: a busy loop in the training's own thread after every step (holding the GIL as a
  Python callback would): on an input-bound run it overlaps the pipeline and barely shows;
  `map`: fixed NumPy work (FFTs, releasing the GIL) appended inside the article's map
  (pipeline.decode_map_extra), per image: the input-bound baseline's bottleneck itself.
  The effect it really has is measured too (the pooled ratio over its comparisons' rounds).
Each comparison runs the verification's protocol unchanged (interleaved rounds, the same
windows, stopping once settled or at verify.max_rounds; no budget). The table: per effect,
comparisons, the share decided faster / slower / equivalent / inconclusive, the rounds they
took, the measured effect. scripts/calibrate_decision.py runs it; docs/measurement.md holds
the numbers.
"""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.measure import rounds as rounds_mod
from perfstudy.measure.intervals import log_interval
from perfstudy.measure.rounds import Schedule, Window
from perfstudy.run import verify
from perfstudy.run.step import TrainStep, timed_step

log = logging.getLogger(__name__)


def busy(seconds: float) -> None:
    """Fixed CPU work in this thread (pure Python: it holds the GIL) for about `seconds`."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


@dataclass(frozen=True)
class Trial:
    """One comparison: its outcome, rounds and ratio (candidate / reference)."""

    effect: float
    outcome: str
    rounds: int
    ratio: float
    low: float | None
    high: float | None
    log_ratios: list[float]
    # every kept window (setting, round, step, steps run and counted, wall): what the window
    # length's trade-off (overhead per window against its spread) is studied from
    windows: list[dict] = field(default_factory=list)


def _step_fn(step: TrainStep, extra_s: float) -> verify.StepFn:
    def run(images, labels):
        loss, fwd_bwd_end, end = timed_step(step, images, labels)
        if extra_s > 0:
            busy(extra_s)
            end = time.time()
        return loss, fwd_bwd_end, end
    return run


def plain_step_ms(step: TrainStep, source: str, cfg, windows: int = 3) -> float:
    """The plain step at the run's own setting: the median of a few windows' means."""
    means = []
    for i in range(windows):
        window = verify.measure_window(_step_fn(step, 0.0), source, cfg, {}, 900 + i, 0)
        if window.step_ms:
            means.append(window.step_ms)
    if not means:
        raise RuntimeError("no window reached a steady state; raise verify.max_steps")
    return float(np.median(means))


def fft_pass_ms(size: int = 128, timing_calls: int = 20, repeats: int = 7) -> float:
    """One NumpyFFT pass at `size` px here, timed alone: the fastest of `repeats` timings (a
    timing another process slowed is longer, never shorter)."""
    from perfstudy.run.transforms import NumpyFFT

    image = np.zeros((3, 32, 32), np.float32)
    probe = NumpyFFT(passes=1, size=size)
    probe(image)  # warm the FFT plan
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(timing_calls):
            probe(image)
        times.append((time.perf_counter() - started) * 1e3 / timing_calls)
    return min(times)


def fft_passes(per_image_ms: float, per_pass_ms: float) -> int:
    """NumpyFFT passes that take about `per_image_ms` per image (one pass: `per_pass_ms`)."""
    return max(1, round(per_image_ms / per_pass_ms))


def with_min_steps(cfg, min_steps: int):
    """A copy of the run's config whose windows wait for `min_steps` counted steps (max_steps
    raised to hold them)."""
    out = copy.deepcopy(cfg)
    out.verify.min_steps = int(min_steps)
    out.verify.max_steps = max(int(out.verify.max_steps), 2 * int(min_steps) + 2)
    return out


def trial(step: TrainStep, source: str, cfg, effect: float, extra_s: float, seed: int,
          reference_cfg=None, window_steps: Sequence[int] = ()) -> Trial:
    """One comparison by the verification's protocol: reference = the own setting with
    `extra_s` of work per step, or on `reference_cfg`'s pipeline (work injected in its map;
    neither: A/A), candidate = the plain own setting. `window_steps`: each window waits for a
    number of counted steps drawn from these (seeded), so the windows' lengths vary and their
    variance can be split into its parts (perfstudy.measure.window_size)."""
    fns: list[Callable] = [_step_fn(step, extra_s), _step_fn(step, 0.0)]
    cfgs = [reference_cfg or cfg, cfg]
    index = {"n": 0}
    lengths = np.random.default_rng(seed + 17)

    def visit(setting: int, round_: int) -> Window:
        at = (with_min_steps(cfgs[setting], lengths.choice(list(window_steps)))
              if window_steps else cfgs[setting])
        window = verify.measure_window(fns[setting], source, at, {},
                                       seed + 1000 * round_ + setting, index["n"])
        index["n"] += window.steps
        return window

    ver = cfg.verify
    found = rounds_mod.run(visit, Schedule(2, seed, ver.min_rounds, ver.max_rounds, None,
                                           ver.max_interference,
                                           rounds_mod.all_settled(GAIN_THAT_MATTERS)))
    comp = rounds_mod.compare(found, 0, 1, GAIN_THAT_MATTERS)
    ref, cand = found.paired(0, 1)
    logs = [math.log(b / a) for a, b in zip(ref, cand, strict=True)]
    # the interference each window saw: the covariate a later calibration may test
    windows = [{"setting": v.setting, "round": v.round, "step_ms": v.window.step_ms,
                "steps": v.window.steps, "counted": v.window.steps_counted,
                "wall_s": round(v.window.wall_s, 2),
                "others": round(v.interference.others, 4) if v.interference else None,
                "steal": round(v.interference.steal, 4) if v.interference else None,
                "step_ms_each": v.window.step_ms_each} for v in found.kept()]
    return Trial(effect, comp.outcome, comp.rounds, comp.ratio or math.nan, comp.low, comp.high, logs,
                 windows)


def table(trials: list[Trial]) -> list[dict]:
    """Per effect: the outcomes' shares, the rounds, and the effect really measured (pooled)."""
    rows = []
    for effect in sorted({t.effect for t in trials}):
        group = [t for t in trials if t.effect == effect]
        pooled = log_interval([x for t in group for x in t.log_ratios])
        count = len(group)
        share = {o: sum(t.outcome == o for t in group) / count
                 for o in ("faster", "slower", "equivalent", "inconclusive")}
        rows.append({"effect": effect, "comparisons": count, **share,
                     "rounds_median": float(np.median([t.rounds for t in group])),
                     "measured_gain": 1 / pooled.ratio - 1,
                     "measured_gain_low": 1 / pooled.high - 1 if math.isfinite(pooled.high) else None,
                     "measured_gain_high": 1 / pooled.low - 1 if math.isfinite(pooled.low) else None})
    return rows
