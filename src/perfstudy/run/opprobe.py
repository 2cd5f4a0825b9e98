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

Measured here (2 cores, 50 ms per image, batch 4): a pure-Python loop 204 -> 199 ms per batch
from 1 to 2 thread workers (the GIL), 203 -> 103 ms in processes; a sleep 202 -> 101 ms either
way. The advisor reads these points instead of a scaling law.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import mindspore.dataset as ds
import numpy as np
import psutil

from perfstudy.run.pipeline import BUILTIN, SlowReader
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


def _cpu_seconds() -> float:
    """CPU time of this process and all its children so far (worker processes included)."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:  # a worker that ended meanwhile
            continue
    return total


def _time_pipeline(dataset: ds.Dataset, warm: int, count: int) -> tuple[float, float]:
    """(wall s, CPU s) of `count` rows after `warm` rows (start-up of threads or processes)."""
    iterator = dataset.create_tuple_iterator(num_epochs=1, output_numpy=True)
    try:
        for _ in range(warm):
            next(iterator)
        wall, cpu = time.perf_counter(), _cpu_seconds()
        for _ in range(count):
            next(iterator)
        return time.perf_counter() - wall, _cpu_seconds() - cpu
    finally:
        iterator.stop()


class _Rows(_Items):
    """Random-access source of captured rows (all their columns), again and again."""

    def __getitem__(self, index: int) -> tuple[np.ndarray, ...]:
        return tuple(self.items[index % len(self.items)])


CAPTURED_ROWS = 4  # inputs captured per map (its real inputs, cycled)


def _python_maps(pipe_cfg, root: str) -> list[dict[str, Any]]:
    """Any pipeline's maps that run Python (a Python op among C++ ones included), each probed as
    the whole map: its operations on its real inputs, captured from the operator below it."""
    from perfstudy.run import factories, pipeline

    data = pipeline.create_train_dataset(root, pipe_cfg, 1, 0, one_pass=True)
    nodes = pipeline.describe(data, pipe_cfg)
    found = []
    for node, built in zip(nodes, factories.walk(data), strict=True):
        if not (node.get("config_key") and node.get("python") and isinstance(built, ds.MapDataset)):
            continue
        child = built.children[0]
        iterator = child.create_tuple_iterator(num_epochs=1, output_numpy=True)
        try:
            rows = [next(iterator) for _ in range(CAPTURED_ROWS)]
        except StopIteration:
            continue
        finally:
            iterator.stop()
        found.append({"config_key": node["config_key"],
                      "operation": f"{node['address']} [{', '.join(node['operations'])}]",
                      "per_batch": bool(node.get("per_batch")),
                      "rows_per_batch": 1 if node.get("per_batch") else pipe_cfg.batch_size,
                      "items": rows, "columns": child.get_col_names(),
                      "input_columns": built.input_columns, "make_all": lambda b=built: b.operations,
                      "workers_now": node.get("num_parallel_workers"),
                      "multiprocessing_now": bool(node.get("multiprocessing"))})
    return found


def _operators(pipe_cfg, root: str) -> list[dict[str, Any]]:
    """The Python operators of this pipeline, each with a builder of it alone at w workers."""
    if pipe_cfg._target_ != BUILTIN:
        return _python_maps(pipe_cfg, root)
    size, batch = pipe_cfg.image_size, pipe_cfg.batch_size
    rng = np.random.default_rng(0)
    found = []
    if pipe_cfg.extra_transform:
        images = [rng.normal(size=(3, size, size)).astype(np.float32) for _ in range(4)]
        found.append({"config_key": "pipeline.extra_transform_workers",
                      "operation": pipe_cfg.extra_transform, "per_batch": False,
                      "rows_per_batch": batch, "items": images,
                      "make": lambda: load_transform(pipe_cfg.extra_transform,
                                                     dict(pipe_cfg.extra_transform_args)),
                      "workers_now": pipe_cfg.extra_transform_workers,
                      "multiprocessing_now": bool(pipe_cfg.extra_transform_multiprocessing)})
    if pipe_cfg.batch_transform:
        batches = [rng.normal(size=(batch, 3, size, size)).astype(np.float32) for _ in range(2)]
        found.append({"config_key": "pipeline.batch_transform_workers",
                      "operation": pipe_cfg.batch_transform, "per_batch": True,
                      "rows_per_batch": 1, "items": batches,
                      "make": lambda: load_transform(pipe_cfg.batch_transform,
                                                     dict(pipe_cfg.batch_transform_args),
                                                     key="pipeline.batch_transform"),
                      "workers_now": pipe_cfg.batch_transform_workers,
                      "multiprocessing_now": bool(pipe_cfg.batch_transform_multiprocessing)})
    if pipe_cfg.reader_delay_ms > 0:
        found.append({"config_key": "pipeline.reader_workers", "operation": "SlowReader",
                      "per_batch": False, "rows_per_batch": batch, "reader": root,
                      "workers_now": pipe_cfg.reader_workers, "multiprocessing_now": False})
    return found


def _alone(op: dict[str, Any], pipe_cfg, workers: int, processes: bool, length: int) -> ds.Dataset:
    if "reader" in op:
        reader = SlowReader(op["reader"], pipe_cfg.reader_delay_ms)
        source = ds.GeneratorDataset(reader, ["image", "label"], shuffle=False,
                                     num_parallel_workers=workers, python_multiprocessing=processes)
        return source.repeat(math.ceil(length / max(len(reader), 1)))  # a small folder read again
    if "make_all" in op:  # a whole map of any pipeline, on its captured inputs
        source = ds.GeneratorDataset(_Rows(op["items"], length), op["columns"], shuffle=False)
        return source.map(operations=list(op["make_all"]()), input_columns=op["input_columns"],
                          num_parallel_workers=workers, python_multiprocessing=processes)
    source = ds.GeneratorDataset(_Items(op["items"], length), ["image"], shuffle=False)
    return source.map(operations=[op["make"]()], input_columns="image",
                      num_parallel_workers=workers, python_multiprocessing=processes)


MIN_ROWS = 16  # rows timed per setting at least (a smoke batch of 4 is too short to time)


def probe(pipe_cfg, root: str, cpus: int) -> list[dict[str, Any]]:
    """Each Python operator alone at 1..cpus workers, threads and processes (the reader:
    threads); returns one entry per operator with its measured points."""
    results = []
    for op in _operators(pipe_cfg, root):
        rows = max(op["rows_per_batch"], MIN_ROWS if op["rows_per_batch"] > 1 else 4)
        batches = rows / op["rows_per_batch"]
        points = []
        for processes in ((False,) if "reader" in op else (False, True)):
            for workers in range(1, cpus + 1):
                warm = 2 * workers
                try:
                    wall, cpu = _time_pipeline(_alone(op, pipe_cfg, workers, processes,
                                                      warm + rows), warm, rows)
                except Exception as exc:  # noqa: BLE001 - e.g. a transform that cannot be pickled
                    log.warning("probe of %s at %d %s workers failed: %s", op["operation"], workers,
                                "process" if processes else "thread", exc)
                    points.append({"workers": workers, "multiprocessing": processes,
                                   "error": (str(exc).strip() or type(exc).__name__).splitlines()[0][:200]})
                    continue
                points.append({"workers": workers, "multiprocessing": processes,
                               "wall_ms_per_batch": 1e3 * wall / batches,
                               "cpu_ms_per_batch": 1e3 * cpu / batches})
        entry = {k: op[k] for k in ("config_key", "operation", "per_batch", "workers_now",
                                    "multiprocessing_now")}
        results.append({**entry, "points": points})
        log.info("probe %s alone: %s", op["operation"], ", ".join(
            f"{p['workers']}{'p' if p['multiprocessing'] else 't'} {p['wall_ms_per_batch']:.0f} ms"
            for p in points if "wall_ms_per_batch" in p))
    return results
