"""Collecting profiles during one arm's training, behind one small interface.

MindSpore's profiler API changed across 2.x (Profiler(output_path=...), then
mindspore.profiler.profile(...) with schedules and trace handlers); everything version
specific is in this module. Two collectors, both optional (conf/profiler/):

* dataset: MindData's profiling manager (works on a CPU device, unlike the profiler's
  data_process option): per-operator output-queue sizes and CPU use sampled every
  `sampling_interval_ms`, and the iterator's wait for each batch. It is initialised
  before the pipeline is launched (MindData requires it) and collects in the window.
* timeline: the op profiler (`mindspore.profiler.profile`, MindSpore's current API; the older
  `mindspore.Profiler` warns it is deprecated) from the window's first step. Its trace is
  analysed when it stops (its `on_trace_ready`, `tensorboard_trace_handler`, ~1 s), so it is
  stopped right after the training loop (`end_training`), never inside a timed step: with
  placement "after" the window ends with the loop; "inline" traces ops to the loop's end (the
  timeline is matched to the host's steps by time, perfstudy.measure.timeline). MindSpore's
  offline `analyse(path)` cannot serve on CPU: it needs the profiler_info.json only its NPU
  profiler writes.
The window is `num_steps` extra steps after the measured ones, on a second pipeline
launched after them with profiling initialised (placement "after", the default: with
MindData profiling merely initialised before launch, the tuned arm's gap share rose from
~11 % to ~20 %, so the measured steps run on a pipeline that never saw the profiler), or a
range of the measured steps themselves (placement "inline").

Raw output stays under the run's profile/: dataset/*.json|txt, ops/*_ascend_ms/...,
and profile.json (window, sampling interval, clock offset, versions) for the analysis.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from perfstudy.common.io import write_json
from perfstudy.common.records import doc, to_dict

log = logging.getLogger(__name__)

DATASET_DIR = "dataset"
OPS_DIR = "ops"
META_FILE = "profile.json"


class ProfilerError(RuntimeError):
    """Profiling cannot run as configured; the message says what to change."""


def extra_steps(prof_cfg) -> int:
    """Steps run beyond trainer.steps for profiling (placement after): the fresh pipeline's
    start-up step, then num_steps profiled steps."""
    profiled = prof_cfg.dataset or prof_cfg.timeline
    return 1 + prof_cfg.num_steps if profiled and prof_cfg.placement == "after" else 0


def profile_window(prof_cfg, steps: int, warmup_steps: int) -> tuple[int, int] | None:
    """First and last loop step (inclusive) that are profiled, or None when nothing is.

    steps is trainer.steps (the measured run, steps 0..steps-1); placement "after" profiles
    a second pipeline after it: step `steps` is its start-up, then num_steps profiled steps.
    """
    if not (prof_cfg.dataset or prof_cfg.timeline):
        return None
    if prof_cfg.placement == "after":
        return steps + 1, steps + prof_cfg.num_steps
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


@dataclass(frozen=True)
class ProfileSpan:
    """The profiled steps: which, where, and when on the time.time() clock."""

    first_step: int = doc("the window's first step")
    last_step: int = doc("its last step")
    placement: str = doc("after (the measured steps) or within")
    start_time_s: float | None = doc("when the collectors started (None: they never did)",
                                     default=None)
    stop_time_s: float | None = doc("when they stopped", default=None)


@dataclass(frozen=True)
class ProfileMeta:
    """What the profilers recorded (the run's profile/profile.json and summary.json's `profile`)."""

    profiler: str = doc("the profiler config: off | light | full")
    dataset: bool = doc("MindData's dataset profile was collected")
    timeline: bool = doc("the op profiler's timeline was collected")
    clock_offset_s: float | None = doc("time.time() - time.monotonic() at the pipeline's start: "
                                       "maps MindData's steady-clock samples onto the host timers",
                                       default=None)
    sampling_interval_ms: int | None = doc("MindData's sampling interval (dataset profile only)",
                                           default=None)
    window: ProfileSpan | None = doc("the profiled steps (None: profiler off)", default=None)
    analyse_s: float | None = doc("MindSpore's op-profile analysis time (after all timing)",
                                  default=None)
    mindspore_version: str | None = doc("MindSpore that wrote the profile", default=None)


class RunProfiler:
    """Start/stop hooks for the training loop; a no-op when the profiler is off.

    Use: begin() before the dataset's iterator is created, step_begin(i)/step_end(i)
    around each step, end_training() right after the loop, finish() when timing is over.
    """

    def __init__(self, prof_cfg, profile_dir: str | Path, steps: int, warmup_steps: int,
                 activities: tuple[str, ...] = ("CPU",)) -> None:
        self.cfg = prof_cfg
        # the op profiler's activities, from the device group (device.profiler_activities):
        # the host's ops, and on an accelerator its own timeline (GPU kernels, NPU tasks)
        self.activities = tuple(activities)
        self.dir = Path(profile_dir)
        self.window = profile_window(prof_cfg, steps, warmup_steps)
        self._manager = None
        self._ops = None
        self._active = False
        self._clock_offset_s: float | None = None
        self._started_s: float | None = None
        self._stopped_s: float | None = None
        self._analyse_s: float | None = None

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
        self._clock_offset_s = time.time() - time.monotonic()
        if not self.enabled:
            return
        if self.cfg.dataset:
            if _autotune_enabled():
                raise ProfilerError("Dataset AutoTune is on, and MindSpore cannot run it together "
                                    "with dataset profiling; use profiler=off for an AutoTune run.")
            import mindspore.dataset as ds

            ds.config.set_monitor_sampling_interval(self.cfg.sampling_interval_ms)
            self._manager = _dataset_engine()
            self._manager.init()  # before launch; collection starts with the window
        if self.cfg.timeline:
            self._ops = self._make_op_profiler()

    def _make_op_profiler(self):
        from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler

        # analysed synchronously when it stops (end_training: after the loop, before timing ends)
        return profile(activities=[getattr(ProfilerActivity, name) for name in self.activities],
                       start_profile=False,
                       on_trace_ready=tensorboard_trace_handler(dir_name=str(self.dir / OPS_DIR),
                                                                analyse_flag=True, async_mode=False))

    def step_begin(self, index: int) -> None:
        """Start the collectors at the first step of the window."""
        if self.window is not None and index == self.window[0] and not self._active:
            if self._manager is not None:
                self._manager.start()
            if self._ops is not None:
                self._ops.start()
            self._active = True
            self._started_s = time.time()

    def step_end(self, index: int) -> None:
        """Stop the dataset collector after the last step of the window (the op profiler stops,
        and is analysed, after the loop: end_training)."""
        if self._active and index == self.window[1]:
            self._stop()

    def _stop(self) -> None:
        if self._manager is not None:
            self._manager.stop()
        self._active = False
        self._stopped_s = time.time()

    def end_training(self) -> None:
        """Stop every collector, analyse the op trace and save the dataset profile (the loop is
        over)."""
        if self._active:  # the loop ended early, e.g. on an exception
            self._stop()
        if self._ops is not None:
            started = time.perf_counter()
            self._ops.stop()  # its on_trace_ready analyses the trace (writes trace_view.json)
            self._analyse_s = time.perf_counter() - started
            self._ops = None
        if self._manager is not None:
            target = self.dir / DATASET_DIR
            target.mkdir(parents=True, exist_ok=True)  # MindData wants an existing folder
            self._manager.save(str(target.resolve()))
            self._manager = None

    def finish(self) -> ProfileMeta:
        """Write profile.json (what was collected, when, and the analysis' time)."""
        import mindspore as ms

        cfg = self.cfg
        on = self.enabled and self.window is not None
        meta = ProfileMeta(
            cfg.name, bool(cfg.dataset), bool(cfg.timeline), self._clock_offset_s,
            cfg.sampling_interval_ms if cfg.dataset else None,
            ProfileSpan(self.window[0], self.window[1], cfg.placement, self._started_s,
                        self._stopped_s) if on else None,
            self._analyse_s, ms.__version__)
        write_json(self.dir / META_FILE, to_dict(meta))
        return meta
