"""How each Python operator of the pipeline scales, measured here (not assumed).

A transform written in Python runs in MindSpore's map workers. By default those are threads
of the training process (they share the GIL: a transform that computes in Python runs one
at a time however many workers it has, one that waits or calls NumPy overlaps); with
`python_multiprocessing=True` they are processes (no shared GIL, but each item is copied
through shared memory). Which of these holds for a user's transform depends on its code,
so after training each Python operator is run ALONE, on inputs of the shape it receives
in training, at every worker count 1..CPUs, in threads and in processes:

    wall_ms_per_batch  time to produce one batch's worth of its output
    cpu_ms_per_batch   CPU time spent meanwhile (this process and its worker processes)

A pure-Python loop and a sleep scale in opposite ways (docs/lab-notes.md#probe-points): the
advisor reads these points instead of a scaling law.

How much of an operator's time needs the training process's GIL is measured too, not guessed
from its code: it is run at 1 thread worker alone and then beside a thread that holds the GIL
the way a network's step does, in long stretches that never let go (one C call), free between
(fraction `free` of the time), in 3 interleaved rounds (each both, in a random order; the
median round counts). Work without the GIL goes on beside the holder;
work with it only in the free stretches, so with G ms of the batch needing the GIL, the batch
takes T_beside = T_alone + G (1/free - 1):

    gil_ms_per_batch  G = (T_beside - T_alone) x free / (1 - free), within 0..T_alone

A pure-Python loop and NumPy that takes the GIL back between small array operations read
G ~ T_alone (they wait out every hold); a sleep or a C++ decode ~ 0.

The rounds are skipped for an operator that waits: one whose 1-thread reading spent under
`WAITS_BELOW` (5 %) of its wall on a CPU (read off a run of half a second or more). Holding the
GIL is running Python, so its GIL share is at most that CPU share, and the what-if model caps
the measured share there anyway (perfstudy.decide.whatif.probed_fields); a sleep read 0.15-0.20
beside the holder, all of it the host's noise. Its GIL point is then None and the model counts
it as waiting. (A C call that blocks with the GIL held, as the holder's own, would be missed: it
uses no CPU.) The six timed runs cost about 2.7 s per 100 ms of the operator's batch: 43 s for a
map that waits 400 ms a row at batch 4.

The holder holds the GIL without using a CPU (libc's usleep called through ctypes.PyDLL, which
keeps the GIL across the call): the slowdown beside it is then the GIL's alone. A holder that
computed while holding (it did: a sum over a range) also took a core, so where the CPUs were
scarce (a 1-CPU quota on 2 cores) CPU contention read as GIL time and a pure-Python loop's
share fell to 0.54.
"""

from __future__ import annotations

import ctypes
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import mindspore.dataset as ds
import numpy as np
import psutil

from perfstudy.data import prepare
from perfstudy.run.pipeline import BUILTIN, SlowReader
from perfstudy.run.probe_record import GilPoint, PreparedProbe, ProbedOperator, ProbeReading
from perfstudy.run.settings import DECODE_OPS
from perfstudy.run.transforms import load_transform

log = logging.getLogger(__name__)


class _Items:
    """Random-access source of prepared inputs (the same arrays again and again)."""

    def __init__(self, items: list[np.ndarray], length: int) -> None:
        self.items, self.length = items, length

    def __getitem__(self, index: int) -> tuple[np.ndarray]:
        return (self.items[index % len(self.items)],)

    def __len__(self) -> int:
        return self.length


def _cpu_seconds() -> tuple[float, float]:
    """(CPU time of this process and all its children so far (worker processes included),
    of this process alone)."""
    me = psutil.Process()
    own = total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # a worker that ended meanwhile
            continue
    return total, own


def _time_pipeline(dataset: ds.Dataset, warm: int, count: int) -> tuple[float, float, float]:
    """(wall s, CPU s, this process's own CPU s) of `count` rows after `warm` rows (start-up of
    threads or processes)."""
    iterator = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        for _ in range(warm):
            next(iterator)
        wall, (cpu, own) = time.perf_counter(), _cpu_seconds()
        for _ in range(count):
            next(iterator)
        cpu_after, own_after = _cpu_seconds()
        return time.perf_counter() - wall, cpu_after - cpu, own_after - own
    finally:
        iterator.stop()


class _Rows(_Items):
    """Random-access source of captured rows (all their columns), again and again."""

    def __getitem__(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(self.items[index % len(self.items)])


@dataclass
class _Op:
    """A Python operator to probe, with how to rebuild it alone: a whole map of any pipeline on
    its captured inputs (`make_all`), one transform on synthetic rows (`make`), or a Python source
    on its own rows (`source`: workers, processes -> the source alone, e.g. a user's
    GeneratorDataset or the slow reader; `processes`: whether worker processes are probed)."""

    config_key: str
    operation: str
    per_batch: bool
    rows_per_batch: int
    workers_now: int | None
    multiprocessing_now: bool
    items: list = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    input_columns: Any = None
    make_all: Callable[[], list] | None = None
    make: Callable[[], Any] | None = None
    source: Callable[[int, bool], ds.Dataset] | None = None
    processes: bool = True
    prepared: _PreparedRows | None = None


@dataclass
class _PreparedRows:
    """A decoding map's captured rows with their images prepared at the bounded resolution."""

    items: list
    megapixels_before: float
    megapixels_after: float


CAPTURED_ROWS = 4  # inputs captured per map at least (its real inputs, cycled); up to a batch
MAX_CAPTURED = 64  # ... of at most this many rows (memory: a row may be a 16 MP JPEG)


def _prepared_rows(rows: list, columns: list[str], input_columns: Any,
                   settings: prepare.Settings) -> _PreparedRows | None:
    """The captured rows with the map's image column (its first input, encoded bytes) prepared
    as the decode remedy's copy prepares each file; None when it holds no encoded image or no
    image is beyond the bound."""
    first = input_columns if isinstance(input_columns, str) else (list(input_columns or []) or [None])[0]
    if first not in columns:
        return None
    index = columns.index(first)
    prepared, before, after = [], [], []
    for row in rows:
        blob = row[index]
        if not (isinstance(blob, np.ndarray) and blob.ndim == 1 and blob.dtype == np.uint8):
            return None  # not encoded bytes: decoded already above the map
        try:
            small, mp_before, mp_after = prepare.prepare_bytes(blob.tobytes(), settings)
        except OSError:  # not an image Pillow reads: nothing to prepare here
            return None
        prepared.append((*row[:index], np.frombuffer(small, dtype=np.uint8), *row[index + 1:]))
        before.append(mp_before)
        after.append(mp_after)
    if not rows or np.mean(after) >= np.mean(before):
        return None
    return _PreparedRows(prepared, float(np.mean(before)), float(np.mean(after)))


def _python_maps(pipe_cfg, root: str, prepared: prepare.Settings | None = None) -> list[_Op]:
    """Any pipeline's maps that run Python (a Python op among C++ ones included), each probed as
    the whole map: its operations on its real inputs, captured from the operator below it. A
    map that decodes also gets its rows prepared at the bound (`prepared`: the remedy's
    settings), to be probed again on them."""
    from perfstudy.run import factories, pipeline

    data = pipeline.create_train_dataset(root, pipe_cfg, 1, 0, one_pass=True)
    nodes = pipeline.describe(data, pipe_cfg)
    found = []
    for node, built in zip(nodes, factories.walk(data), strict=True):
        if node.get("config_key") and isinstance(built, ds.GeneratorDataset):
            found.append(_python_source(node, built, pipe_cfg.batch_size))
            continue
        if not (node.get("config_key") and node.get("python") and isinstance(built, ds.MapDataset)):
            continue
        child = built.children[0]
        per_batch = 1 if node.get("per_batch") else pipe_cfg.batch_size
        iterator = child.create_tuple_iterator(num_epochs=1, output_numpy=True)
        rows = []
        try:  # a batch's worth of real rows (decode cost varies per image), at least 4
            for _ in range(min(max(CAPTURED_ROWS, per_batch), MAX_CAPTURED)):
                rows.append(next(iterator))
        except StopIteration:
            pass
        finally:
            iterator.stop()
        if not rows:
            continue
        columns = child.get_col_names()
        decodes = any(op in DECODE_OPS for op in node["operations"])
        found.append(_Op(node["config_key"], f"{node['address']} [{', '.join(node['operations'])}]",
                         bool(node.get("per_batch")), per_batch, node.get("num_parallel_workers"),
                         bool(node.get("multiprocessing")), rows, columns,
                         built.input_columns, make_all=lambda b=built: b.operations,
                         prepared=(_prepared_rows(rows, columns, built.input_columns, prepared)
                                   if decodes and prepared is not None else None)))
    return found


def _python_source(node: dict, built: ds.GeneratorDataset, batch_size: int) -> _Op:
    """A pipeline's Python source (GeneratorDataset), probed alone on its own rows: the user's
    source object read again, unshuffled, at w workers in threads or processes."""
    def alone(workers: int, processes: bool) -> ds.Dataset:
        return ds.GeneratorDataset(built.source, built.column_names, shuffle=False,
                                   num_parallel_workers=workers, python_multiprocessing=processes)

    name = type(built.source).__name__
    return _Op(node["config_key"], f"{node['address']} [{name}]", False, batch_size,
               node.get("num_parallel_workers"), bool(built.python_multiprocessing),
               source=alone)


def _operators(pipe_cfg, root: str, prepared: prepare.Settings | None = None) -> list[_Op]:
    """The Python operators of this pipeline, each with a builder of it alone at w workers."""
    if pipe_cfg._target_ != BUILTIN:
        return _python_maps(pipe_cfg, root, prepared)
    size, batch = pipe_cfg.image_size, pipe_cfg.batch_size
    rng = np.random.default_rng(0)
    found = []
    if pipe_cfg.extra_transform:
        images = [rng.normal(size=(3, size, size)).astype(np.float32) for _ in range(4)]
        found.append(_Op("pipeline.extra_transform_workers", pipe_cfg.extra_transform, False, batch,
                         pipe_cfg.extra_transform_workers,
                         bool(pipe_cfg.extra_transform_multiprocessing), images,
                         make=lambda: load_transform(pipe_cfg.extra_transform,
                                                     dict(pipe_cfg.extra_transform_args))))
    if pipe_cfg.batch_transform:
        batches = [rng.normal(size=(batch, 3, size, size)).astype(np.float32) for _ in range(2)]
        found.append(_Op("pipeline.batch_transform_workers", pipe_cfg.batch_transform, True, 1,
                         pipe_cfg.batch_transform_workers,
                         bool(pipe_cfg.batch_transform_multiprocessing), batches,
                         make=lambda: load_transform(pipe_cfg.batch_transform,
                                                     dict(pipe_cfg.batch_transform_args),
                                                     key="pipeline.batch_transform")))
    if pipe_cfg.reader_delay_ms > 0:
        def reader(workers: int, processes: bool) -> ds.Dataset:
            return ds.GeneratorDataset(SlowReader(root, pipe_cfg.reader_delay_ms), ["image", "label"],
                                       shuffle=False, num_parallel_workers=workers,
                                       python_multiprocessing=processes)

        found.append(_Op("pipeline.reader_workers", "SlowReader", False, batch,
                         pipe_cfg.reader_workers, False, source=reader, processes=False))
    return found


def _alone(op: _Op, pipe_cfg, workers: int, processes: bool, length: int) -> ds.Dataset:
    if op.source is not None:  # a small source read again
        source = op.source(workers, processes)
        return source.repeat(math.ceil(length / max(source.get_dataset_size(), 1)))
    if op.make_all is not None:  # a whole map of any pipeline, on its captured inputs
        source = ds.GeneratorDataset(_Rows(op.items, length), op.columns, shuffle=False)
        return source.map(operations=list(op.make_all()), input_columns=op.input_columns,
                          num_parallel_workers=workers, python_multiprocessing=processes)
    source = ds.GeneratorDataset(_Items(op.items, length), ["image"], shuffle=False)
    return source.map(operations=[op.make()], input_columns="image",
                      num_parallel_workers=workers, python_multiprocessing=processes)


MIN_ROWS = 16  # rows timed per setting at least (a smoke batch of 4 is too short to time)
HOLD_MS, FREE_MS = 20.0, 20.0  # the GIL holder's stretch and pause


def _sleep_holding_gil():
    """libc's usleep called with the GIL held (ctypes.PyDLL does not release it around a call)."""
    usleep = ctypes.PyDLL(None).usleep
    usleep.argtypes = [ctypes.c_uint]
    return usleep


class GilHolder(threading.Thread):
    """Holds the GIL HOLD_MS at a time in one C call that never lets go of it and uses no CPU
    (usleep with the GIL held: no other thread's bytecode runs meanwhile), then sleeps FREE_MS
    with it released; `free` is the share of its time the GIL was free, as measured."""

    def __init__(self, hold_ms: float = HOLD_MS, free_ms: float = FREE_MS) -> None:
        super().__init__(daemon=True, name="gil-holder")
        self.free_s, self.halt = free_ms / 1e3, threading.Event()
        self.hold_us, self._hold = int(hold_ms * 1e3), _sleep_holding_gil()
        self.held = self.total = 0.0

    def run(self) -> None:
        while not self.halt.is_set():
            start = time.perf_counter()
            self._hold(self.hold_us)
            self.held += time.perf_counter() - start
            time.sleep(self.free_s)
            self.total += time.perf_counter() - start

    @property
    def free(self) -> float:
        return 1.0 - self.held / self.total if self.total else 1.0


def gil_ms(alone_ms: float, beside_ms: float, free: float) -> float:
    """Per batch, the time that needed the GIL (module docstring), within 0..alone_ms."""
    if not 0.0 < free < 1.0:
        return 0.0
    return min(max((beside_ms - alone_ms) * free / (1.0 - free), 0.0), alone_ms)


GIL_ROUNDS = 3  # rounds of (alone, beside the holder), each in a seeded random order
WAITS_BELOW = 0.05  # CPU / wall at 1 thread under which an operator waits: no GIL rounds
WAIT_READ_MIN_S = 0.5  # ... read on a 1-thread run this long at least (CPU comes in 10 ms ticks)


def waits(points: list[ProbeReading], batches: float) -> float | None:
    """The operator's CPU share at 1 thread worker (CPU / wall), where it is under WAITS_BELOW
    (its GIL share can be no larger: the GIL rounds are skipped); else None. Read only off a
    1-thread run (`batches` timed) of WAIT_READ_MIN_S or more: a shorter one's CPU reading is a
    few clock ticks (a fast map read 0 %), and its rounds cost little anyway."""
    one = next((p for p in points if p.ran and p.workers == 1 and not p.multiprocessing), None)
    if one is None or not one.wall_ms_per_batch or one.wall_ms_per_batch * batches < 1e3 * WAIT_READ_MIN_S:
        return None
    busy = one.cpu_ms_per_batch / one.wall_ms_per_batch
    return busy if busy < WAITS_BELOW else None


def _gil_point(op: _Op, pipe_cfg, rows: int, batches: float) -> GilPoint:
    """The operator at 1 thread worker alone and beside a GilHolder, in GIL_ROUNDS interleaved
    rounds (each round both, in a random order: drift of the host falls on both alike, as in
    the verification's rounds); its GIL time per batch is the median of the rounds' readings,
    so one disturbed round does not decide it."""
    warm = 2
    order = random.Random(20221026)

    def ms_per_batch() -> float:
        wall, _, _ = _time_pipeline(_alone(op, pipe_cfg, 1, False, warm + rows), warm, rows)
        return 1e3 * wall / batches

    readings = []
    for _ in range(GIL_ROUNDS):
        got: dict[str, float] = {}
        for kind in order.sample(["alone", "beside"], 2):
            if kind == "alone":
                got["alone"] = ms_per_batch()
                continue
            holder = GilHolder()
            holder.start()
            try:
                got["beside"] = ms_per_batch()
            finally:
                holder.halt.set()
                holder.join()
            got["free"] = holder.free
        readings.append({**got, "gil": gil_ms(got["alone"], got["beside"], got["free"])})
    readings.sort(key=lambda r: r["gil"])
    mid = readings[len(readings) // 2]
    return GilPoint(mid["alone"], mid["beside"], mid["free"], mid["gil"], len(readings),
                    [round(r["gil"], 1) for r in readings])


def _measure(op: _Op, pipe_cfg, cpus: int) -> tuple[list[ProbeReading], GilPoint | None]:
    """One operator alone at 1..cpus workers, threads and processes (a reader: threads), and its
    GIL point."""
    rows = max(op.rows_per_batch, MIN_ROWS if op.rows_per_batch > 1 else 4)
    batches = rows / op.rows_per_batch
    points = []
    for processes in ((False, True) if op.processes else (False,)):
        for workers in range(1, cpus + 1):
            # a fresh process pool serves its first rows slowly (start-up, shared memory):
            # warm it for half a batch, as training runs it for many
            warm = max(2 * workers, min(op.rows_per_batch // 2, 16)) if processes else 2 * workers
            try:
                wall, cpu, own = _time_pipeline(_alone(op, pipe_cfg, workers, processes,
                                                       warm + rows), warm, rows)
            except Exception as exc:  # noqa: BLE001 - e.g. a transform that cannot be pickled
                log.warning("probe of %s at %d %s workers failed: %s", op.operation, workers,
                            "process" if processes else "thread", exc)
                points.append(ProbeReading(workers, processes, error=(
                    str(exc).strip() or type(exc).__name__).splitlines()[0][:200]))
                continue
            points.append(ProbeReading(workers, processes, 1e3 * wall / batches,
                                       1e3 * cpu / batches,
                                       parent_cpu_ms_per_batch=1e3 * own / batches))
    if not op.processes or not any(p.ran for p in points):
        return points, None
    busy = waits(points, batches)
    if busy is not None:
        log.info("probe %s: no GIL rounds, it waits (%.1f %% of a core at 1 thread bounds its GIL "
                 "share)", op.operation, 100 * busy)
        return points, None
    return points, _gil_point(op, pipe_cfg, rows, batches)


def _described(points: list[ProbeReading], gil: GilPoint | None) -> str:
    return ", ".join(f"{p.workers}{'p' if p.multiprocessing else 't'} {p.wall_ms_per_batch:.0f} ms"
                     for p in points if p.ran) + (
        f"; needs the GIL {gil.gil_ms_per_batch:.0f} ms per batch" if gil else "")


def probe(pipe_cfg, root: str, cpus: int,
          prepared: prepare.Settings | None = None) -> list[ProbedOperator]:
    """Each Python operator alone at 1..cpus workers, threads and processes (the reader:
    threads); returns one entry per operator with its measured points. With `prepared` (the
    decode remedy's settings), a map that decodes is probed again on its rows prepared at the
    bound: the remedy's prediction then reads that map's cost measured."""
    results = []
    for op in _operators(pipe_cfg, root, prepared):
        points, gil = _measure(op, pipe_cfg, cpus)
        on_prepared = None
        if op.prepared is not None and any(p.ran for p in points):
            small = replace(op, items=op.prepared.items, prepared=None)
            prepared_points, prepared_gil = _measure(small, pipe_cfg, cpus)
            on_prepared = PreparedProbe(op.prepared.megapixels_before, op.prepared.megapixels_after,
                                        len(op.prepared.items), prepared_points, prepared_gil)
            log.info("probe %s on its rows prepared (%.2f -> %.4f MP): %s", op.operation,
                     op.prepared.megapixels_before, op.prepared.megapixels_after,
                     _described(prepared_points, prepared_gil))
        results.append(ProbedOperator(op.config_key, op.operation, op.per_batch, op.workers_now,
                                      op.multiprocessing_now, points, gil, on_prepared))
        log.info("probe %s alone: %s", op.operation, _described(points, gil))
    return results
