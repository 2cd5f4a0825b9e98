"""Collecting profiles during one arm's training, behind one small interface.

MindSpore's profiler API changed across 2.x (Profiler(output_path=...), then
mindspore.profiler.profile(...) with schedules and trace handlers); everything version
specific is in this module. Two collectors, both optional (conf/profiler/):

* dataset: MindData's profiling manager (works on a CPU device, unlike the profiler's
  data_process option): per-operator output-queue sizes and CPU use sampled every
  `sampling_interval_ms`, and the iterator's wait for each batch. It covers the whole
  training loop; the analysis keeps the samples of the measured steps.
* timeline: the op profiler over a window of steps. Only collection runs inside the
  loop (start/stop cost ~20 ms); MindSpore's own analysis (~1 s) runs after training,
  so no timed step pays for it.

Raw output stays under the run's profile/: dataset/*.json|txt, ops/*_ascend_ms/...,
and profile.json (window, sampling interval, clock offset, versions) for the analysis.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

from perfstudy.io import write_json

log = logging.getLogger(__name__)

DATASET_DIR = "dataset"
OPS_DIR = "ops"
META_FILE = "profile.json"


class ProfilerError(RuntimeError):
    """Profiling cannot run as configured; the message says what to change."""


def timeline_window(prof_cfg, steps: int, warmup_steps: int) -> tuple[int, int] | None:
    """First and last step (inclusive) the op profiler records, or None when it is off."""
    if not prof_cfg.timeline:
        return None
    first = prof_cfg.start_step if prof_cfg.start_step is not None else min(1 + warmup_steps,
                                                                            steps - 1)
    last = steps - 1 if prof_cfg.num_steps == 0 else min(steps - 1, first + prof_cfg.num_steps - 1)
    return first, last


def _dataset_engine():
    # The same object MindSpore's own profilers drive on GPU/Ascend; private, hence here.
    import mindspore._c_dataengine as cde

    return cde.GlobalContext.profiling_manager()


def _autotune_enabled() -> bool:
    import mindspore.dataset as ds

    return bool(ds.config.get_enable_autotune())


class RunProfiler:
    """Start/stop hooks for the training loop; a no-op when the profiler is off.

    Use: begin() before the dataset's iterator is created, step_begin(i)/step_end(i)
    around each step, end_training() right after the loop, finish() when timing is over.
    """

    def __init__(self, prof_cfg, profile_dir: str | Path, steps: int, warmup_steps: int) -> None:
        self.cfg = prof_cfg
        self.dir = Path(profile_dir)
        self.window = timeline_window(prof_cfg, steps, warmup_steps)
        self._manager = None
        self._ops = None
        self._ops_active = False
        self.meta: dict[str, Any] = {"profiler": prof_cfg.name, "dataset": bool(prof_cfg.dataset),
                                     "timeline": bool(prof_cfg.timeline)}

    @property
    def enabled(self) -> bool:
        return bool(self.cfg.dataset or self.cfg.timeline)

    def begin(self) -> None:
        """Prepare the profile folder and start dataset profiling (before the iterator exists)."""
        if self.dir.exists():  # a rerun's profile must not mix with the last one's
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        # MindData stamps samples with the steady clock (ms); time.monotonic() reads the
        # same clock on Linux. The offset maps them onto time.time(), the host timers' clock.
        self.meta["clock_offset_s"] = time.time() - time.monotonic()
        if not self.enabled:
            return
        if self.cfg.dataset:
            if _autotune_enabled():
                raise ProfilerError("Dataset AutoTune is on, and MindSpore cannot run it together "
                                    "with dataset profiling; use profiler=off for an AutoTune run.")
            import mindspore.dataset as ds

            ds.config.set_monitor_sampling_interval(self.cfg.sampling_interval_ms)
            self._manager = _dataset_engine()
            self._manager.init()
            self._manager.start()
            self.meta["sampling_interval_ms"] = self.cfg.sampling_interval_ms
        if self.window is not None:
            self._ops = self._make_op_profiler()
            self.meta["window"] = {"first_step": self.window[0], "last_step": self.window[1]}

    def _make_op_profiler(self):
        import mindspore as ms
        from mindspore.profiler import ProfilerActivity

        # Profiler (not profile(...)): its analyse() can run after stop(), outside the loop.
        return ms.Profiler(start_profile=False, output_path=str(self.dir / OPS_DIR),
                           activities=[ProfilerActivity.CPU])

    def step_begin(self, index: int) -> None:
        """Start the op profiler at the first step of its window."""
        if self._ops is not None and index == self.window[0]:
            self._ops.start()
            self._ops_active = True
            self.meta["window"]["start_time_s"] = time.time()

    def step_end(self, index: int) -> None:
        """Stop the op profiler after the last step of its window."""
        if self._ops_active and index == self.window[1]:
            self._stop_ops()

    def _stop_ops(self) -> None:
        self._ops.stop()
        self._ops_active = False
        self.meta["window"]["stop_time_s"] = time.time()

    def end_training(self) -> None:
        """Stop every collector (the loop is over; later work must not be sampled)."""
        if self._ops_active:  # the loop ended early, e.g. on an exception
            self._stop_ops()
        if self._manager is not None:
            self._manager.stop()
            target = self.dir / DATASET_DIR
            target.mkdir(parents=True, exist_ok=True)  # MindData wants an existing folder
            self._manager.save(str(target.resolve()))
            self._manager = None

    def finish(self) -> dict[str, Any]:
        """Run MindSpore's op-profile analysis (writes trace_view.json) and profile.json."""
        if self._ops is not None:
            started = time.perf_counter()
            self._ops.analyse()
            self.meta["analyse_s"] = time.perf_counter() - started
            self._ops = None
        import mindspore as ms

        self.meta["mindspore_version"] = ms.__version__
        write_json(self.dir / META_FILE, self.meta)
        return self.meta
