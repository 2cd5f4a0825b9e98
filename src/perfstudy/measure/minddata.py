"""MindData (dataset) profile -> tidy tables: per-operator queues and CPU, the iterator's waits.

Reads what profiling.RunProfiler saved under profile/dataset/ (MindSpore's raw files):
  pipeline_profiling_<id>.json       per op: type, workers, children, output-queue capacity
                                      and its sampled sizes
  minddata_cpu_utilization_<id>.json per op user/sys CPU % (of one core), the process's,
                                      the host's (device_info), and the sampling times
  dataset_iterator_profiling_<id>.txt per batch: "type info batch value time" rows; type 0
                                      info 0 is the iterator's wait for the batch (ms),
                                      type 1 the depth of the queue it read from
Times are MindData's steady clock (ms); profile.json's clock_offset_s maps them onto
time.time(), the clock of steps.csv, so samples can be cut to the measured steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfstudy.common.records import doc
from perfstudy.measure.profiling import DATASET_DIR, META_FILE

QUEUE_COLUMNS = ["time_s", "op_id", "op_type", "label", "size", "capacity"]
# what pipeline.json adds per operator: the config key sizing it, Python code, processes
DESCRIBED = ("config_key", "python", "per_batch", "multiprocessing")


class ProfileFormatError(ValueError):
    """A profile file is missing or not in the format MindSpore writes."""


@dataclass
class DatasetProfile:
    """The raw dataset profile of one run, loaded."""

    ops: list[dict[str, Any]]  # pipeline_profiling op_info, by op_id
    sampling_interval_ms: int
    sample_times_s: np.ndarray  # time.time() clock
    cpu: dict[str, Any]
    iterator: pd.DataFrame  # batch, wait_ms, queue_depth, queue_capacity, time_s
    described: list[dict[str, Any]] = field(default_factory=list)  # pipeline.json


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if not found:
        raise ProfileFormatError(f"No {pattern} in {folder}: was the run profiled with "
                                 "profiler=light or profiler=full?")
    return found[0]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ProfileFormatError(f"{path} is not readable JSON ({exc}); rerun the arm's training.") \
            from None


def _iterator_frame(path: Path, offset_s: float) -> pd.DataFrame:
    waits, depths = {}, {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 5:
            continue
        kind, info, batch, value, stamp = (int(p) for p in parts[:5])
        if kind == 0 and info == 0:
            waits[batch] = (value, stamp)
        elif kind == 1:
            depths[batch] = (value, info)
    rows = [{"batch": b, "wait_ms": float(w), "queue_depth": depths.get(b, (np.nan, np.nan))[0],
             "queue_capacity": depths.get(b, (np.nan, np.nan))[1], "time_s": stamp / 1e3 + offset_s}
            for b, (w, stamp) in sorted(waits.items())]
    return pd.DataFrame(rows, columns=["batch", "wait_ms", "queue_depth", "queue_capacity", "time_s"])


def load(profile_dir: str | Path) -> DatasetProfile:
    """Load a run's dataset profile (profile/ folder of a run)."""
    profile_dir = Path(profile_dir)
    meta = _read_json(profile_dir / META_FILE) if (profile_dir / META_FILE).exists() else {}
    offset = float(meta.get("clock_offset_s") or 0.0)
    folder = profile_dir / DATASET_DIR
    pipe = _read_json(_one(folder, "pipeline_profiling_*.json"))
    cpu = _read_json(_one(folder, "minddata_cpu_utilization_*.json"))
    if "op_info" not in pipe or "time_stamp" not in cpu:
        raise ProfileFormatError(f"{folder} does not hold MindData's pipeline/CPU profile format.")
    described = []
    if (profile_dir / "pipeline.json").exists():
        described = _read_json(profile_dir / "pipeline.json")
    return DatasetProfile(
        ops=sorted(pipe["op_info"], key=lambda op: op["op_id"]),
        sampling_interval_ms=int(pipe.get("sampling_interval", meta.get("sampling_interval_ms") or 0)),
        sample_times_s=np.asarray(cpu["time_stamp"], dtype=float) / 1e3 + offset,
        cpu=cpu,
        iterator=_iterator_frame(_one(folder, "dataset_iterator_profiling_*.txt"), offset),
        described=described,
    )


def _short_type(op_type: str) -> str:
    for suffix in ("Op", "Dataset"):
        if op_type.endswith(suffix) and len(op_type) > len(suffix):
            op_type = op_type[: -len(suffix)]
    return op_type


def op_label(op_type: str, op_id: int, operations: list[str], address: str | None = None) -> str:
    """'Map #2 [Decode, Resize] (map_1)': the profile's type and op id, a map's operations, and
    the address its key names (pipeline.workers.<address>) when pipeline.json has it."""
    label = f"{op_type} #{op_id}"
    if operations:
        label += f" [{', '.join(operations)}]"
    return label + (f" ({address})" if address else "")


def op_labels(profile: DatasetProfile) -> dict[int, dict[str, Any]]:
    """op_id -> how a user recognises the op: type, transforms of a map, workers, label."""
    described = profile.described if len(profile.described) == len(profile.ops) else []
    labels = {}
    for index, op in enumerate(profile.ops):
        short = _short_type(op["op_type"])
        desc = described[index] if described and _short_type(described[index]["op_type"]) == short \
            else {}
        operations = desc.get("operations", [])
        label = op_label(short, op["op_id"], operations, desc.get("address"))
        labels[op["op_id"]] = {"op_id": op["op_id"], "op_type": short, "operations": operations,
                               "num_workers": op.get("num_workers"), "label": label,
                               "children": op.get("children", []),
                               **{k: desc.get(k) for k in DESCRIBED}}
    return labels


def _per_sample(values: list, count: int) -> np.ndarray:
    """MindData writes some host series with a 0 after each sample: keep one per sample."""
    arr = np.asarray(values, dtype=float)
    if count and len(arr) >= 2 * count and not arr[1::2].any():
        arr = arr[::2]
    return arr


def _in_window(times: np.ndarray, window: tuple[float, float] | None) -> np.ndarray:
    if window is None:
        return np.ones(len(times), dtype=bool)
    mask = (times >= window[0]) & (times <= window[1])
    return mask if mask.sum() >= 3 else np.ones(len(times), dtype=bool)  # too short: use all


def queue_series(profile: DatasetProfile) -> pd.DataFrame:
    """Tidy per-sample output-queue sizes: time_s, op_id, op_type, label, size, capacity."""
    labels = op_labels(profile)
    rows = []
    for op in profile.ops:
        queue = (op.get("metrics") or {}).get("output_queue")
        if not queue:
            continue
        sizes = queue.get("size", [])
        times = profile.sample_times_s[: len(sizes)]
        for t, size in zip(times, sizes[: len(times)], strict=True):
            info = labels[op["op_id"]]
            rows.append({"time_s": float(t), "op_id": op["op_id"], "op_type": info["op_type"],
                         "label": info["label"], "size": int(size), "capacity": int(queue["length"])})
    return pd.DataFrame(rows, columns=QUEUE_COLUMNS)


def op_table(profile: DatasetProfile, window: tuple[float, float] | None = None) -> pd.DataFrame:
    """Per operator over the window: queue usage, empty and full ratios, CPU %.

    queue_usage = mean output-queue size / capacity; empty_ratio = share of samples with
    an empty queue (DESIGN.md). cpu_pct is user+sys % of one core, summed over the op's
    workers, as MindData measures it; cpu_pct_per_worker divides by the workers.
    """
    labels = op_labels(profile)
    cpu_by_op = {item["op_id"]: item["metrics"] for item in profile.cpu.get("op_info", [])
                 if item and item.get("op_id", -1) >= 0}
    mask = _in_window(profile.sample_times_s, window)
    rows = []
    for op in profile.ops:
        info = labels[op["op_id"]]
        queue = (op.get("metrics") or {}).get("output_queue")
        row = {**{k: info[k] for k in ("op_id", "op_type", "label", "num_workers")},
               "operations": ", ".join(info["operations"]),
               "child_id": info["children"][0] if info["children"] else None,
               "capacity": None, "queue_usage": np.nan, "empty_ratio": np.nan, "full_ratio": np.nan,
               "cpu_pct": np.nan, "cpu_pct_per_worker": np.nan, "samples": 0,
               **{k: info[k] for k in DESCRIBED}}
        if queue and queue.get("size"):
            sizes = np.asarray(queue["size"], dtype=float)
            keep = mask[: len(sizes)] if len(mask) >= len(sizes) else np.ones(len(sizes), bool)
            sizes = sizes[keep]
            capacity = float(queue["length"]) or np.nan
            row.update(capacity=int(queue["length"]), queue_usage=float(sizes.mean() / capacity),
                       empty_ratio=float((sizes == 0).mean()),
                       full_ratio=float((sizes >= capacity).mean()), samples=int(len(sizes)))
        metrics = cpu_by_op.get(op["op_id"])
        if metrics:
            total = (np.asarray(metrics["user_utilization"], dtype=float)
                     + np.asarray(metrics["sys_utilization"], dtype=float))
            total = total[mask[: len(total)]] if len(mask) >= len(total) else total
            if len(total):
                row["cpu_pct"] = float(total.mean())
                row["cpu_pct_per_worker"] = row["cpu_pct"] / max(1, int(info["num_workers"] or 1))
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class HostCpu:
    """Host and process CPU use over the profiled window, in % of the whole machine (None: the
    profile did not sample it)."""

    cores: int = 1
    host_busy_pct: float | None = None
    process_pct: float | None = None


def host_cpu(profile: DatasetProfile, window: tuple[float, float] | None = None) -> HostCpu:
    """Host and process CPU use over the window, in % of the whole machine."""
    cores = int(profile.cpu.get("cpu_processor_num") or 1)
    count = len(profile.sample_times_s)
    mask = _in_window(profile.sample_times_s, window)
    device = profile.cpu.get("device_info", {})
    busy = process_pct = None
    if device.get("idle_utilization"):
        idle = _per_sample(device["idle_utilization"], count)
        keep = mask[: len(idle)]
        busy = float(100 - idle[: len(keep)][keep].mean())
    process = profile.cpu.get("process_info", {})
    if process.get("user_utilization"):
        total = (np.asarray(process["user_utilization"], dtype=float)
                 + np.asarray(process["sys_utilization"], dtype=float))
        keep = mask[: len(total)]
        process_pct = float(total[: len(keep)][keep].mean() / cores)
    return HostCpu(cores=cores, host_busy_pct=busy, process_pct=process_pct)


@dataclass(frozen=True)
class IteratorWait:
    """The training iterator's wait per batch over the profiled window (MindData's profile)."""

    batches: int = doc("batches it waited for in the window (0: none recorded)")
    median_ms: float | None = doc("median wait (ms)", default=None)
    p90_ms: float | None = doc("90th percentile (ms)", default=None)
    mean_ms: float | None = doc("mean (ms)", default=None)


def iterator_waits(profile: DatasetProfile, window: tuple[float, float] | None = None) -> IteratorWait:
    """The iterator's wait per batch over the window (ms): median, p90, mean, count."""
    frame = profile.iterator
    if window is not None:
        inside = frame[(frame["time_s"] >= window[0]) & (frame["time_s"] <= window[1] + 1e-3)]
        frame = inside if len(inside) else frame
    if frame.empty:
        return IteratorWait(0)
    waits = frame["wait_ms"].to_numpy(dtype=float)
    return IteratorWait(int(len(waits)), float(np.median(waits)), float(np.percentile(waits, 90)),
                        float(waits.mean()))
