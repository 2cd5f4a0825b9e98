"""The op timeline: per-step gap / forward+backward / tail from kernel timestamps, the
cross-check against the host timers, and one Chrome trace of everything for Perfetto.

MindSpore's analysis writes ASCEND_PROFILER_OUTPUT/trace_view.json (also on a CPU device):
complete ("X") events with timestamps in µs since the Unix epoch, kernels on the process
named "CPU OP" with their full scope names. Kernels are sorted into
  forward   Default/... (the loss network)
  backward  Gradients/...
  update    the optimizer graph (Default/optimizer-.../ApplyMomentum-op...)
This study runs forward+backward and the update as two graphs, so each step's kernels are
a forward/backward run followed by an update run; a new step starts at the first
forward/backward kernel after update kernels.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from perfstudy.common.io import write_text_atomic
from perfstudy.common.records import doc
from perfstudy.common.thresholds import pct
from perfstudy.measure.profiling import OPS_DIR

DISAGREEMENT = 0.10  # median relative step-time difference above which the report says so
TIMELINE_COLUMNS = ["tl_step", "compute_start_s", "bwd_end_s", "update_end_s", "tl_gap_ms",
                    "tl_fwd_bwd_ms", "tl_tail_ms", "tl_step_ms", "optimizer_busy_ms", "kernels"]


def find_trace(profile_dir: str | Path) -> Path | None:
    """MindSpore's trace_view.json under profile/ops/, or None when there is none."""
    found = sorted(Path(profile_dir, OPS_DIR).glob("*/ASCEND_PROFILER_OUTPUT/trace_view.json"))
    return found[-1] if found else None


def kind_of(name: str) -> str:
    """forward | backward | update, from a kernel's scope name."""
    if "/optimizer-" in name or "ApplyMomentum" in name or name.startswith("optimizer"):
        return "update"
    if name.startswith("Gradients/"):
        return "backward"
    return "forward"


def load_kernels(trace_path: str | Path) -> pd.DataFrame:
    """Kernel events of the trace: name, kind, start_s, end_s (time.time() clock)."""
    events = json.loads(Path(trace_path).read_text())
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    kernel_pids = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                   and str(e.get("args", {}).get("name", "")).upper() == "CPU OP"}
    rows = []
    for e in events:
        if e.get("ph") != "X" or (kernel_pids and e.get("pid") not in kernel_pids):
            continue
        start = float(e["ts"]) / 1e6
        rows.append({"name": e["name"], "kind": kind_of(e["name"]), "start_s": start,
                     "end_s": start + float(e.get("dur", 0)) / 1e6})
    frame = pd.DataFrame(rows, columns=["name", "kind", "start_s", "end_s"])
    return frame.sort_values("start_s", kind="stable").reset_index(drop=True)


def timeline_steps(kernels: pd.DataFrame) -> pd.DataFrame:
    """One row per step seen in the timeline (see the module docstring for the rule)."""
    groups, current, seen_update = [], [], False
    for row in kernels.itertuples(index=False):
        if row.kind != "update" and seen_update:
            groups.append(current)
            current, seen_update = [], False
        current.append(row)
        seen_update |= row.kind == "update"
    if current:
        groups.append(current)
    rows, previous_end = [], None
    for index, group in enumerate(groups):
        compute = [k for k in group if k.kind != "update"]
        update = [k for k in group if k.kind == "update"]
        if not compute or not update:
            continue  # a window edge cut the step
        start = min(k.start_s for k in compute)
        bwd_end = max(k.end_s for k in compute)
        end = max(k.end_s for k in update)
        rows.append({
            "tl_step": index, "compute_start_s": start, "bwd_end_s": bwd_end, "update_end_s": end,
            "tl_gap_ms": (start - previous_end) * 1e3 if previous_end is not None else np.nan,
            "tl_fwd_bwd_ms": (bwd_end - start) * 1e3, "tl_tail_ms": (end - bwd_end) * 1e3,
            "tl_step_ms": (end - previous_end) * 1e3 if previous_end is not None else np.nan,
            "optimizer_busy_ms": sum(k.end_s - k.start_s for k in update) * 1e3,
            "kernels": len(group),
        })
        previous_end = end
    return pd.DataFrame(rows, columns=TIMELINE_COLUMNS)


def match_host(tl: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Join timeline steps to the host steps whose compute phase contains their first kernel."""
    host = steps.copy()
    host["data_ready_s"] = host["start_time_s"] + host["gap_ms"] / 1e3
    host["end_s"] = host["start_time_s"] + host["step_ms"] / 1e3
    matched = []
    for row in tl.itertuples(index=False):
        hit = host[(host["data_ready_s"] <= row.compute_start_s + 1e-3)
                   & (row.compute_start_s <= host["end_s"])]
        if len(hit):
            matched.append({**row._asdict(), **hit.iloc[0][["step", "phase", "gap_ms", "fwd_bwd_ms",
                                                             "tail_ms", "step_ms"]].to_dict()})
    return pd.DataFrame(matched)


@dataclass(frozen=True)
class CrossCheck:
    """The op timeline's steps against the host timers' (diagnosis.json's `cross_check`)."""

    steps: int = doc("steps both saw (0: none to compare)")
    agrees: bool | None = doc("median step-time difference within `limit` (None: no steps)")
    sentence: str = doc("the comparison in words")
    step_ms_median_rel_diff: float | None = doc("median |timeline - host| / host step",
                                                default=None)
    limit: float | None = doc("the difference that counts as disagreement", default=None)
    gap_diff_ms_median: float | None = doc("timeline - host gap, median (ms)", default=None)
    fwd_bwd_diff_ms_median: float | None = doc("timeline - host forward+backward, median (ms)",
                                               default=None)
    tail_diff_ms_median: float | None = doc("timeline - host tail, median (ms)", default=None)
    tl_fwd_bwd_ms_median: float | None = doc("the timeline's forward+backward, median (ms)",
                                             default=None)
    tl_tail_ms_median: float | None = doc("the timeline's tail, median (ms)", default=None)
    optimizer_busy_ms_median: float | None = doc("optimizer kernels busy per step, median (ms)",
                                                 default=None)


NO_TRACE = CrossCheck(0, None, "The op profiler ran but wrote no trace_view.json; see the train log.")


def cross_check(joined: pd.DataFrame) -> CrossCheck:
    """Timeline vs host timers over the steps both saw (the window's first step has no gap).

    The host timers include Python and graph-launch overhead around the kernels, so the
    timeline's forward+backward is shorter and its gap longer by the same amount; step
    times (end to end) should agree. Disagreement: median relative step-time difference
    above 10 %.
    """
    usable = joined.dropna(subset=["tl_step_ms"]) if len(joined) else joined
    if len(usable) and "phase" in usable:  # the profiled steps, else the measured ones
        kept = usable[usable["phase"].isin(["profiled", "measured"])]
        usable = kept if len(kept) else usable
    if not len(usable):
        return CrossCheck(0, None, "The op timeline holds no complete step to compare with the "
                          "host timers.")
    rel = (usable["tl_step_ms"] - usable["step_ms"]).abs() / usable["step_ms"]
    median_rel = float(rel.median())
    parts = {}
    for part in ("gap", "fwd_bwd", "tail"):
        diff = usable[f"tl_{part}_ms"] - usable[f"{part}_ms"]
        parts[f"{part}_diff_ms_median"] = float(diff.median())
    agrees = median_rel <= DISAGREEMENT
    sentence = (f"Op timeline and host timers {'agree' if agrees else 'DISAGREE'} on step time: "
                f"median difference {pct(median_rel, 1)} over {len(usable)} steps "
                f"(limit {pct(DISAGREEMENT)}); the timeline's forward+backward is "
                f"{parts['fwd_bwd_diff_ms_median']:+.1f} ms and its gap "
                f"{parts['gap_diff_ms_median']:+.1f} ms off the host's (launch and Python "
                "overhead sit between the timers and the kernels)")
    if not agrees:
        sentence += "; trust the timeline's kernel times, not the host's phase split"
    return CrossCheck(int(len(usable)), agrees, sentence + ".", median_rel, DISAGREEMENT, **parts,
                      tl_fwd_bwd_ms_median=float(usable["tl_fwd_bwd_ms"].median()),
                      tl_tail_ms_median=float(usable["tl_tail_ms"].median()),
                      optimizer_busy_ms_median=float(usable["optimizer_busy_ms"].median()))


def _meta(pid: int, name: str, sort: int) -> list[dict]:
    return [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}},
            {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": sort}}]


def chrome_trace(steps: pd.DataFrame, kernels: pd.DataFrame | None, queues: pd.DataFrame | None,
                 iterator: pd.DataFrame | None) -> dict[str, Any]:
    """One Chrome trace (Perfetto, chrome://tracing) of host steps, kernels, queues, waits.

    Times are µs from the first step's start (otherData.origin_unix_s holds it).
    """
    origin = float(steps["start_time_s"].min())

    def us(t: float) -> float:
        return round((t - origin) * 1e6, 3)

    events = _meta(1, "Host step trace (steps.csv)", 1)
    for row in steps.itertuples(index=False):
        t = row.start_time_s
        for part, ms in (("iteration gap", row.gap_ms), ("forward+backward", row.fwd_bwd_ms),
                         ("iteration tail", row.tail_ms)):
            events.append({"ph": "X", "pid": 1, "tid": 0, "name": part, "cat": "host", "ts": us(t),
                           "dur": round(ms * 1e3, 3),
                           "args": {"step": int(row.step), "phase": row.phase}})
            t += ms / 1e3
    if kernels is not None and len(kernels):
        events += _meta(2, "CPU kernels (MindSpore profiler)", 2)
        for row in kernels.itertuples(index=False):
            events.append({"ph": "X", "pid": 2, "tid": 0, "name": row.name.rsplit("/", 1)[-1],
                           "cat": row.kind, "ts": us(row.start_s),
                           "dur": round((row.end_s - row.start_s) * 1e6, 3),
                           "args": {"scope": row.name}})
    if queues is not None and len(queues):
        events += _meta(3, "MindData output queues", 3)
        for row in queues.itertuples(index=False):
            events.append({"ph": "C", "pid": 3, "tid": 0, "name": f"queue {row.label}",
                           "ts": us(row.time_s), "args": {"size": int(row.size)}})
    if iterator is not None and len(iterator):
        events += _meta(4, "Iterator: wait for each batch", 4)
        for row in iterator.itertuples(index=False):
            events.append({"ph": "X", "pid": 4, "tid": 0, "name": "wait for batch", "cat": "data",
                           "ts": us(row.time_s - row.wait_ms / 1e3), "dur": round(row.wait_ms * 1e3, 3),
                           "args": {"batch": int(row.batch)}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"origin_unix_s": origin, "producer": "perfstudy"}}


def write_chrome_trace(path: str | Path, trace: dict[str, Any]) -> Path:
    """Write the trace atomically (compact JSON)."""
    return write_text_atomic(Path(path), json.dumps(trace, separators=(",", ":")))
