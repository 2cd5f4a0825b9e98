"""An arm's MLflow run while it trains, so the UI shows it before the training ends.

The run is opened when the training starts, as a child of the study's parent run (made first
by track_init: its ids are in runs/<study>/mlflow_study.json); the step trace is logged as the
steps happen and MLflow's system metrics (CPU, memory, disk, network; psutil) are on. Its end
is FINISHED, FAILED (an exception) or KILLED (SIGTERM, Ctrl-C); a run left RUNNING by a
SIGKILL is marked KILLED by the next training of the same arm.

The files stay the source of truth: track_arm later completes this same run from them
(perfstudy.present.tracking.log_arm adopts it by the id in the run folder's mlflow_live.json,
and logs only the steps not confirmed here), so re-running never makes a twin, and a tracking
server that goes away mid-run loses nothing. The training never waits on the store: steps go
into a buffer that a daemon thread sends every `tracking.live_interval_s` in one batch; after
three failed sends in a row live logging stops with one warning. MLflow's own async logging
(`log_batch(synchronous=False)`) is not used: its RunOperations.wait() has no bound, and the
end of a training must not wait out a gone server's retries.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from perfstudy.common.io import read_json
from perfstudy.common.records import doc, from_dict, read_record, write_record
from perfstudy.measure import steptrace
from perfstudy.present import mlflow_fields, mlflow_store, tracking
from perfstudy.present.mlflow_store import TAG

log = logging.getLogger(__name__)

LIVE_FILE = "mlflow_live.json"
STUDY_IDS = "mlflow_study.json"
FAILED_SENDS_TO_STOP = 3
END_WAIT_S = 30.0


@dataclass(frozen=True)
class LiveReceipt:
    """What the training logged live (run folder's mlflow_live.json), read by track_arm."""

    SCHEMA_VERSION = 1
    KIND = "live run receipt"
    RERUN = "train the arm again (snakemake --forcerun train)"

    run_id: str = doc("the arm's MLflow run, opened when its training started")
    tracking_uri: str = doc("the store it is in")
    status: str = doc("RUNNING while training, then FINISHED | FAILED | KILLED")
    logged_through_step: int = doc("the last step whose trace the store confirmed (-1: none); "
                                   "track_arm logs the steps after it from steps.csv")


def read_receipt(run_dir: str | Path) -> LiveReceipt | None:
    """The run folder's live receipt, None when the training logged nothing live."""
    path = Path(run_dir) / LIVE_FILE
    return read_record(path, LiveReceipt) if path.is_file() else None


class LiveRun:
    """One arm's run, fed by the training loop (`on_step`) without ever blocking it."""

    def __init__(self, client, run_id: str, uri: str, run_dir: Path, batch_size: int,
                 interval_s: float, system_interval_s: float,
                 device_metrics: tuple[str, ...] = ()) -> None:
        self.client, self.run_id, self.uri, self.run_dir = client, run_id, uri, run_dir
        self.batch_size, self.interval_s = batch_size, interval_s
        self._pending: list[steptrace.StepTimes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._confirmed = -1
        self._failures = 0
        self._end_lock = threading.Lock()
        self._receipt: LiveReceipt | None = None
        self._thread = threading.Thread(target=self._pump, name="perfstudy-live", daemon=True)
        self._system = _system_monitor(run_id, uri, system_interval_s, device_metrics)
        self._write("RUNNING")
        self._thread.start()

    def on_step(self, record: steptrace.StepTimes) -> None:
        """Queue one step's trace (no I/O here: the training loop calls it every step)."""
        with self._lock:
            self._pending.append(record)

    def _send(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            frame = steptrace.steps_frame(batch, self.batch_size)
            tracking.log_metrics(self.client, self.run_id, mlflow_fields.step_metrics(frame))
        except Exception as exc:  # noqa: BLE001 - any store failure: keep the steps for the next try
            with self._lock:
                self._pending = batch + self._pending
            self._failures += 1
            if self._failures >= FAILED_SENDS_TO_STOP:
                log.warning("live MLflow logging stopped after %d failed sends (%s); the training "
                            "goes on, and track_arm logs every step from steps.csv later",
                            self._failures, type(exc).__name__)
                self._stop.set()
            return
        self._failures = 0
        self._confirmed = max(self._confirmed, max(r.step for r in batch))

    def _pump(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._send()

    def end(self, status: str) -> LiveReceipt:
        """Send what is left (bounded wait), stop the system metrics, set the run's status.
        Once: a second call (a signal during the end) returns the first one's receipt."""
        with self._end_lock:
            if self._receipt is None:
                self._receipt = self._end(status)
            return self._receipt

    def _end(self, status: str) -> LiveReceipt:
        broken = self._stop.is_set() and self._failures >= FAILED_SENDS_TO_STOP
        self._stop.set()
        self._thread.join(timeout=END_WAIT_S)
        if not broken and not self._thread.is_alive():
            self._send()
        if self._system is not None:
            _finish_system(self._system)
        try:
            self.client.set_terminated(self.run_id, status=status)
        except Exception as exc:  # noqa: BLE001 - the store went away: track_arm ends the run later
            log.warning("the live MLflow run %s could not be set %s (%s); track_arm completes it "
                        "from the run's files", self.run_id, status, type(exc).__name__)
        receipt = self._write(status)
        log.info("live MLflow run %s: %s, steps through %d logged while training", self.run_id,
                 status, self._confirmed)
        return receipt

    def _write(self, status: str) -> LiveReceipt:
        receipt = LiveReceipt(self.run_id, self.uri, status, self._confirmed)
        write_record(self.run_dir / LIVE_FILE, receipt)
        return receipt


def _finish_system(monitor) -> None:
    """Stop MLflow's system-metrics monitor, and log the sample it collected last: its loop
    collects, waits the interval, then logs, so a run shorter than one interval (an arm whose
    rounds an earlier run answered, 2026-12-07) would have no system metrics at all."""
    monitor.finish()
    try:
        left = monitor.aggregate_metrics()
        if left:
            monitor.publish_metrics(left)
            monitor.mlflow_logger.flush()
    except Exception as exc:  # noqa: BLE001 - the store went away: the run's files keep the rest
        log.warning("the last system-metrics sample was not logged (%s)", type(exc).__name__)


def device_monitors_missing(monitor, wanted: tuple[str, ...]) -> list[str]:
    """The device metric sources the device group asks for (device.system_metrics) that
    MLflow's monitor did not start: its GPU monitor starts only where nvidia-ml-py imports and
    an NVIDIA driver answers."""
    kinds = {type(m).__name__ for m in getattr(monitor, "monitors", [])}
    return [w for w in wanted if w == "gpu" and not kinds & {"GPUMonitor", "ROCMMonitor"}]


def _system_monitor(run_id: str, uri: str, interval_s: float, wanted: tuple[str, ...] = ()):
    """MLflow's system-metrics monitor on the run (None, with a warning, if it cannot start);
    a warning too where a device source the device group asks for did not start."""
    try:
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        monitor = SystemMetricsMonitor(run_id, sampling_interval=interval_s,
                                       samples_before_logging=1, tracking_uri=uri)
        missing = device_monitors_missing(monitor, wanted)
        if missing:
            log.warning("MLflow system metrics have no %s for this run: install nvidia-ml-py "
                        "(pip install nvidia-ml-py) on a machine whose NVIDIA driver answers",
                        ", ".join(missing).upper())
        monitor.start()
        return monitor
    except Exception as exc:  # noqa: BLE001 - psutil missing or the store refused: train anyway
        log.warning("MLflow system metrics are off for this run (%s)", exc)
        return None


def open_live(cfg, run_dir: str | Path) -> LiveRun | None:
    """The arm's live run, or None (with the reason logged) when there is nothing to attach
    it to or the store does not answer: the training never depends on the tracker."""
    run_dir = Path(run_dir)
    (run_dir / LIVE_FILE).unlink(missing_ok=True)  # an earlier training's receipt is void now
    ids_path = run_dir.parent / STUDY_IDS
    if not cfg.tracking.live:
        return None
    if not ids_path.is_file():
        log.info("no live MLflow run: %s is missing (the workflow's track_init makes it before "
                 "the trainings); track_arm logs this arm after its training", ids_path)
        return None
    try:
        ids = from_dict(StudyIds, read_json(ids_path), str(ids_path))
        mlflow_store.quick_http_settings()
        client = mlflow_store.client_for(ids.tracking_uri)
        run_id = _create_run(client, ids, cfg)
    except Exception as exc:  # noqa: BLE001 - the training goes on without a live run
        log.warning("no live MLflow run (%s); track_arm logs this arm after its training", exc)
        return None
    live = LiveRun(client, run_id, ids.tracking_uri, run_dir, cfg.pipeline.batch_size,
                   cfg.tracking.live_interval_s, cfg.tracking.system_metrics_interval_s,
                   tuple(cfg.device.system_metrics))
    log.info("live MLflow run %s opened (%s)", run_id,
             mlflow_store.ui_hint(ids.tracking_uri, ids.experiment_id))
    return live


@dataclass(frozen=True)
class StudyIds:
    """The study's tracking ids (runs/<study>/mlflow_study.json, written by track_init)."""

    tracking_uri: str
    experiment_name: str
    instance: str
    experiment_id: str
    study_run_id: str


def _create_run(client, ids: StudyIds, cfg) -> str:
    """A new RUNNING child run for this training; this arm's runs left RUNNING by a killed
    training are marked KILLED first (a SIGKILL runs no handler)."""
    keys = {f"{TAG}study": cfg.study, f"{TAG}arm": cfg.arm, f"{TAG}role": "arm",
            f"{TAG}instance": ids.instance}
    for stale in mlflow_store.find_runs(client, ids.experiment_id, keys):
        if stale.info.status == "RUNNING" and stale.data.tags.get(f"{TAG}run", cfg.arm) == cfg.run:
            client.set_terminated(stale.info.run_id, status="KILLED")
    tags = {**keys, f"{TAG}run": cfg.run, f"{TAG}repeat": str(cfg.repeat), f"{TAG}live": "1",
            "mlflow.parentRunId": ids.study_run_id, **mlflow_fields.source_tags()}
    return client.create_run(ids.experiment_id, run_name=cfg.run, tags=tags).info.run_id


ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def end_on_signal(live: LiveRun) -> None:
    """SIGTERM (Snakemake, SLURM, kill) or SIGINT ends the run KILLED, then the process (exit
    128 + the signal), as the signal's default would. A watcher thread does it, woken through
    Python's signal wake-up fd: the main thread may be blocked inside MindSpore's C++ iterator
    (a batch that never comes), where no Python-level handler runs. Call from the main thread."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    for sig in ENDING_SIGNALS:
        signal.signal(sig, lambda *_: None)  # the watcher acts; the main thread carries on

    def _watch() -> None:
        while True:
            got = os.read(read, 1)
            if got and got[0] in ENDING_SIGNALS:
                log.warning("signal %d: ending the live MLflow run KILLED", got[0])
                live.end("KILLED")
                logging.shutdown()
                os._exit(128 + got[0])

    threading.Thread(target=_watch, name="perfstudy-signals", daemon=True).start()


def status_of(exc: BaseException | None) -> str:
    """The MLflow status a training's end maps to."""
    if exc is None:
        return "FINISHED"
    return "KILLED" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "FAILED"

