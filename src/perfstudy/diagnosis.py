"""The automatic verdict of one arm: is it input-bound, which operator, is the CPU full, what to do.

Rules (DESIGN.md):
* input-bound band from the gap share (TensorFlow profiler): >= 20 % highly, >= 5 %
  moderately, else not;
* culprit (MindInsight's queue rule, along the whole chain): an operator whose input
  queue (its child's output queue) is well filled (usage >= 50 %) while its own output
  queue is near empty (usage <= 10 %); the largest difference wins. When no operator
  matches and the leaf's queue is under half full, the leaf (reading files) is named.
  Only an input-bound arm gets a culprit: in a run that keeps up, an eager batch op
  empties the map's queue without anyone waiting;
* CPU saturation: the host's CPUs >= 90 % busy during the measured steps, or the steady
  step within 15 % of the CPU floor (pipeline and network share the cores of a CPU device);
* recommendation: workers N = ceil(one worker's time per batch / compute time per step),
  one worker's time per batch = the pipeline-alone batch time x its workers, compute time =
  forward+backward+tail of the measured steps; capped at the CPUs (MindSpore refuses
  more). When the CPU is saturated by a CPU-busy operator, more workers cannot help and
  the sentence says what would.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from perfstudy.advisor import advise

HIGHLY_INPUT_BOUND = 0.20
MODERATELY_INPUT_BOUND = 0.05
WELL_FILLED = 0.50
NEAR_EMPTY = 0.10
HOST_BUSY = 90.0
NEAR_CPU_FLOOR = 1.15
ADVISOR_INPUTS = {"compute_wall_ms", "compute_cpu_ms", "pipeline_wall_ms", "pipeline_cpu_ms"}
CPU_BUSY_WORKER = 50.0  # % of a core per worker above which an operator computes, not waits


def input_bound_band(gap_share: float) -> str:
    """'highly', 'moderately' or 'not' input-bound, by the TensorFlow profiler's bands."""
    if gap_share >= HIGHLY_INPUT_BOUND:
        return "highly"
    if gap_share >= MODERATELY_INPUT_BOUND:
        return "moderately"
    return "not"


def find_culprit(ops: pd.DataFrame) -> dict[str, Any] | None:
    """The operator the queue rule blames, with the evidence; None if none matches."""
    if ops is None or ops.empty:
        return None
    by_id = {int(r["op_id"]): r for _, r in ops.iterrows()}
    candidates = []
    for op_id, row in by_id.items():
        child = row.get("child_id")
        if child is None or pd.isna(child) or int(child) not in by_id:
            continue
        in_usage, out_usage = by_id[int(child)]["queue_usage"], row["queue_usage"]
        if pd.isna(in_usage) or pd.isna(out_usage):
            continue
        if in_usage >= WELL_FILLED and out_usage <= NEAR_EMPTY:
            candidates.append((in_usage - out_usage, op_id, in_usage, out_usage, "queue rule"))
    if not candidates:
        leaf = by_id[max(by_id)]
        if not pd.isna(leaf["queue_usage"]) and leaf["queue_usage"] < WELL_FILLED:
            candidates.append((0.0, int(leaf["op_id"]), None, float(leaf["queue_usage"]),
                               "leaf rule: the source's own queue is under half full"))
    if not candidates:
        return None
    _, op_id, in_usage, out_usage, rule = max(candidates, key=lambda c: (c[0], c[1]))
    row = by_id[op_id]
    cpu_worker = row.get("cpu_pct_per_worker")
    return {
        "op_id": op_id, "op_type": row["op_type"], "label": row["label"],
        "operations": [o for o in str(row.get("operations") or "").split(", ") if o],
        "num_workers": int(row["num_workers"]) if not pd.isna(row["num_workers"]) else None,
        "input_queue_usage": in_usage, "output_queue_usage": out_usage,
        "output_empty_ratio": float(row["empty_ratio"]) if not pd.isna(row["empty_ratio"]) else None,
        "cpu_pct_per_worker": None if cpu_worker is None or pd.isna(cpu_worker) else float(cpu_worker),
        "rule": rule,
    }


def _cpu_state(summary: dict[str, Any], host: dict[str, Any], ops: pd.DataFrame | None) -> dict[str, Any]:
    busy = host.get("host_busy_pct")
    near_floor = (summary["binding_floor"] == "cpu" and summary["steady_vs_floor"] <= NEAR_CPU_FLOOR)
    per_op = {}
    if ops is not None and not ops.empty:
        per_op = {r["label"]: round(float(r["cpu_pct"]), 1) for _, r in ops.iterrows()
                  if not pd.isna(r["cpu_pct"]) and r["cpu_pct"] > 0}
    return {"cores": summary["num_parallel_workers"]["cpu_count"], "host_busy_pct": busy,
            "process_pct": host.get("process_pct"), "per_op_pct": per_op,
            "cpu_floor_ms": summary["cpu_floor_ms"], "steady_vs_cpu_floor":
            summary["steady_step_ms"] / summary["cpu_floor_ms"],
            "saturated": bool((busy is not None and busy >= HOST_BUSY) or near_floor),
            "near_cpu_floor": bool(near_floor)}


def _what_would_help(summary: dict[str, Any], cores: int) -> str:
    mp = summary.get("dataset", {})
    size = ""
    if mp.get("total_bytes") and mp.get("num_images"):
        size = f" (the source JPEGs average {mp['total_bytes'] / mp['num_images'] / 1e6:.1f} MB)"
    return ("fewer or cheaper transforms, smaller source images" + size + ", decoding on the "
            "accelerator instead of the CPU, or more cores (the CPU floor scales with 1/cores: "
            f"~{summary['cpu_floor_ms'] / 2:.0f} ms at {2 * cores} cores)")


def recommend(summary: dict[str, Any], culprit: dict[str, Any] | None, cpu: dict[str, Any],
              compute_ms: float, band: str) -> dict[str, Any]:
    """A concrete setting, or why none helps; see the module docstring for the arithmetic."""
    cores = cpu["cores"]
    workers = summary["num_parallel_workers"]["effective"]
    if band == "not":
        return {"action": "none", "sentence": (
            f"Keep the pipeline as it is: the step waits for data only "
            f"{100 * summary['gap_share']:.1f} % of the time.")}
    target = culprit["label"] if culprit else "the pipeline's map"
    op_workers = (culprit or {}).get("num_workers") or workers
    per_worker_ms = summary["calibration"]["pipeline_wall_ms"] * op_workers
    needed = max(1, math.ceil(per_worker_ms / compute_ms)) if compute_ms > 0 else cores
    basis = {"per_worker_batch_ms": per_worker_ms, "compute_ms": compute_ms,
             "workers_needed": needed, "cores": cores, "current_workers": op_workers}
    computes = culprit is None or culprit.get("cpu_pct_per_worker") is None or \
        culprit["cpu_pct_per_worker"] >= CPU_BUSY_WORKER
    if cpu["saturated"] and computes:
        return {"action": "cpu_saturated", **basis, "sentence": (
            f"More workers cannot help: {target} has {op_workers} worker(s) on "
            f"{cores} CPUs, and the CPUs are saturated (steady step at "
            f"{cpu['steady_vs_cpu_floor']:.2f}x the CPU floor of {cpu['cpu_floor_ms']:.0f} ms"
            + (f", host {cpu['host_busy_pct']:.0f} % busy" if cpu["host_busy_pct"] is not None else "")
            + f"); what would: {_what_would_help(summary, cores)}.")}
    if needed <= op_workers:
        return {"action": "none", **basis, "sentence": (
            f"{target} already has {op_workers} worker(s), enough by the measured rates "
            f"({per_worker_ms:.0f} ms per batch per worker vs {compute_ms:.0f} ms of compute); "
            "the remaining wait is start-up or contention, not too few workers.")}
    value = needed if not computes else min(needed, cores)
    sentence = (f"Set num_parallel_workers of {target} to {value}: one worker needs "
                f"{per_worker_ms:.0f} ms per batch and a step computes for {compute_ms:.0f} ms, "
                f"so {needed} workers hide the wait")
    if value < needed:
        sentence += (f"; this machine has only {cores} CPUs (MindSpore refuses more workers "
                     f"than CPUs), so expect the CPU floor (~{cpu['cpu_floor_ms']:.0f} ms at the "
                     "current setting) to bind rather than the compute time")
    elif not computes:
        sentence += (f" (it waits rather than computes: {culprit['cpu_pct_per_worker']:.0f} % of a "
                     "core per worker, so workers beyond the CPU count still help)")
    return {"action": "set_workers", "workers": value, **basis, "sentence": sentence + "."}


def diagnose(summary: dict[str, Any], steps: pd.DataFrame, ops: pd.DataFrame | None = None,
             host: dict[str, Any] | None = None, iterator: dict[str, Any] | None = None,
             cross: dict[str, Any] | None = None) -> dict[str, Any]:
    """diagnosis.json's content for one arm."""
    host = host or {}
    band = input_bound_band(summary["gap_share"])
    measured = steps[steps["phase"] == "measured"]
    compute_ms = float((measured["fwd_bwd_ms"] + measured["tail_ms"]).median())
    culprit = find_culprit(ops) if band != "not" else None
    cpu = _cpu_state(summary, host, ops)
    rec = recommend(summary, culprit, cpu, compute_ms, band)
    advice = advise(summary, ops) if ADVISOR_INPUTS <= set(summary.get("calibration", {})) else None
    share = 100 * summary["gap_share"]
    if band == "not":
        bound = "cpu" if cpu["near_cpu_floor"] else "compute"
    else:
        bound = "cpu" if rec["action"] == "cpu_saturated" else "input"
    headline = {
        "input": (f"{band.capitalize()} input-bound: the step waits for data {share:.0f} % of the time"
                  + (f", and {culprit['label']} is the slow operator" if culprit else "")),
        "cpu": (f"CPU-bound: pipeline and network together keep the {cpu['cores']} CPUs busy "
                f"(steady step {cpu['steady_vs_cpu_floor']:.2f}x the CPU floor); the step "
                + ("waits for data only " if band == "not" else "still waits for data ")
                + f"{share:.0f} % of the time ({band} input-bound by the TensorFlow bands)"
                + ("" if band == "not" else ", but no worker setting removes that wait")),
        "compute": (f"Not input-bound: the step waits for data {share:.0f} % of the time; "
                    "the network's compute sets the pace"),
    }[bound]
    return {
        "arm": summary["arm"], "study": summary["study"], "bound": bound, "headline": headline + ".",
        "input_bound": {"band": band, "gap_share": summary["gap_share"],
                        "gap_ms_mean": summary["gap_ms"]["mean"],
                        "steady_step_ms": summary["steady_step_ms"],
                        "thresholds": {"highly": HIGHLY_INPUT_BOUND, "moderately": MODERATELY_INPUT_BOUND}},
        "culprit": culprit, "cpu": cpu, "recommendation": rec, "compute_ms": compute_ms,
        "iterator_wait": iterator or {}, "cross_check": cross or {},
        "profiled": ops is not None, "profiler_effect": profiler_effect(summary),
        "advisor": advice,
    }


def profiler_effect(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The profiled steps against the measured ones of the same run (placement after)."""
    window = summary.get("profiled_window")
    if not window:
        return None
    ratio = window["steady_step_ms"] / summary["steady_step_ms"]
    return {"steps": window["steps"], "profiled_step_ms": window["steady_step_ms"],
            "measured_step_ms": summary["steady_step_ms"], "step_ratio": ratio,
            "profiled_gap_share": window["gap_share"], "measured_gap_share": summary["gap_share"],
            "sentence": (f"The {window['steps']} profiled steps took {window['steady_step_ms']:.0f} ms each "
                         f"against {summary['steady_step_ms']:.0f} ms unprofiled ({ratio:.2f}x), gap share "
                         f"{100 * window['gap_share']:.1f} % against {100 * summary['gap_share']:.1f} %; "
                         "the verdict's numbers come from the unprofiled steps, the queues and kernels "
                         "from the profiled ones.")}
