"""What-if advisor: the steady step time at any worker count, predicted from ONE profiled run.

Inputs, all from the run itself:
* the map operator's CPU per batch and how busy each of its workers is, from the MindData
  profile (cpu % of the op over the profiled window x the profiled step time = CPU-ms per
  batch; per-worker % says whether it computes or waits), the other operators' CPU likewise;
  without a profile, the pipeline-alone calibration (the whole pipeline counted as the map);
* the network: its wall time and CPU time per step alone (calibration), so the cores it
  occupies on a CPU device (CPU-ms / wall-ms);
* the CPU count.

Model, per worker count w (a pipelined chain runs at the pace of its slowest stage; the
cores are shared):
    map stage     P(w) = map CPU-ms per batch / min(w, cores)        (an operator that computes)
                  P(w) = map wall-ms per batch per worker / w         (one that waits: I/O, sleep)
    network       N(w) = network CPU-ms / min(its cores, cores the pipeline leaves free)
    CPU floor     F    = (pipeline CPU-ms + network CPU-ms) / cores
    step          T(w) = max(P(w), N(w), F)
The gap share is not predicted: once the cores are shared, how the network's time stretches
depends on the scheduler (measured: 0.5 of its 1.9 cores under saturation), not on rates.
Recommended: the smallest w whose predicted step is within 5 % of the best predicted one.
MindSpore refuses more workers than CPUs, so for a computing map w stops at the CPU count;
for a waiting one it goes on (MindSpore still caps, the advisor says so).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

WITHIN_BEST = 0.05
COMPUTES = 0.5  # a worker busier than half a core computes; below, it mostly waits
MAX_WAITING_WORKERS = 64


def _map_op(ops: pd.DataFrame | None) -> dict[str, Any] | None:
    """The Map operator that costs the most CPU (the one num_parallel_workers sizes)."""
    if ops is None or ops.empty:
        return None
    maps = ops[(ops["op_type"] == "Map") & ops["cpu_pct"].notna()]
    if maps.empty:
        return None
    return maps.sort_values("cpu_pct", ascending=False).iloc[0].to_dict()


def rates(summary: dict[str, Any], ops: pd.DataFrame | None) -> dict[str, Any]:
    """Per-batch costs the model needs, from the profile when there is one."""
    calibration = summary["calibration"]
    cores = summary["num_parallel_workers"]["cpu_count"]
    workers = summary["num_parallel_workers"]["effective"]
    window = summary.get("profiled_window") or {}
    step_ms = window.get("steady_step_ms") or summary["steady_step_ms"]
    op = _map_op(ops)
    if op is not None and op["cpu_pct"] > 0:
        map_workers = int(op["num_workers"] or workers)
        map_cpu = op["cpu_pct"] / 100 * step_ms
        other_cpu = float(ops.loc[ops["op_id"] != op["op_id"], "cpu_pct"].fillna(0).sum()) / 100 * step_ms
        busy = min(1.0, (op["cpu_pct_per_worker"] or op["cpu_pct"] / map_workers) / 100)
        source = f"profile: {op['label']}"
    else:  # no profile: the pipeline-alone calibration, all of it counted as the map
        map_workers = workers
        map_cpu = calibration["pipeline_cpu_ms"]
        other_cpu = 0.0
        busy = min(1.0, calibration["pipeline_cpu_ms"]
                   / max(calibration["pipeline_wall_ms"] * min(workers, cores), 1e-9))
        source = "calibration (pipeline alone)"
    return {
        "source": source, "cores": cores, "map_workers_now": map_workers,
        "map_cpu_ms_per_batch": map_cpu, "other_ops_cpu_ms_per_batch": other_cpu,
        "map_busy_per_worker": busy, "map_computes": busy >= COMPUTES,
        # worker-time per batch: its CPU time stretched by how busy a worker is (waiting ops)
        "map_wall_ms_per_batch_per_worker": map_cpu / max(busy, 1e-3) if busy < COMPUTES else map_cpu,
        "network_wall_ms": calibration["compute_wall_ms"],
        "network_cpu_ms": calibration["compute_cpu_ms"],
        "network_cores": calibration["compute_cpu_ms"] / max(calibration["compute_wall_ms"], 1e-9),
    }


def predict(r: dict[str, Any], workers: int) -> dict[str, float]:
    """Predicted steady step time and its parts at `workers` map workers.

    The network gets the cores the pipeline leaves free: the pipeline occupies its CPU-ms
    per batch over each step, so the split is found by a few fixed-point rounds.
    """
    cores = r["cores"]
    if r["map_computes"]:
        stage = r["map_cpu_ms_per_batch"] / min(workers, cores)
    else:
        stage = r["map_wall_ms_per_batch_per_worker"] / workers
    pipeline_cpu = r["map_cpu_ms_per_batch"] + r["other_ops_cpu_ms_per_batch"]
    floor = (pipeline_cpu + r["network_cpu_ms"]) / cores
    step = network = max(stage, r["network_wall_ms"], floor)
    for _ in range(5):
        left = max(cores - min(pipeline_cpu / step, cores), 0.05)
        network = max(r["network_wall_ms"], r["network_cpu_ms"] / min(r["network_cores"], left))
        step = max(stage, network, floor)
    # at the floor, the network's share is what the pipeline leaves: the cores bind, not it
    binding = ("cpu" if floor >= 0.97 * step else "map" if stage >= network else "network")
    return {"workers": workers, "step_ms": step, "map_stage_ms": stage, "network_ms": network,
            "cpu_floor_ms": floor, "binding": binding}


def advise(summary: dict[str, Any], ops: pd.DataFrame | None,
           candidates: list[int] | None = None) -> dict[str, Any]:
    """diagnosis.json's `advisor`: predictions per worker count and the recommended one."""
    r = rates(summary, ops)
    cores = r["cores"]
    if candidates is None:
        top = cores if r["map_computes"] else max(cores, min(MAX_WAITING_WORKERS, 4 * cores))
        candidates = list(range(1, top + 1))
    table = [predict(r, w) for w in candidates]
    best = min(row["step_ms"] for row in table)
    pick = next(row for row in table if row["step_ms"] <= best * (1 + WITHIN_BEST))
    now = predict(r, r["map_workers_now"])
    label = r["source"].removeprefix("profile: ")
    pace = {"map": f"the map ({label}) sets the pace",
            "network": "the network's compute sets the pace",
            "cpu": (f"the CPUs set the pace (pipeline "
                    f"{r['map_cpu_ms_per_batch'] + r['other_ops_cpu_ms_per_batch']:.0f} + network "
                    f"{r['network_cpu_ms']:.0f} CPU-ms per step on {cores} CPUs)")}[pick["binding"]]
    sentence = (f"Predicted from this run: {pick['workers']} map worker(s) give a "
                f"{pick['step_ms']:.0f} ms step (now {r['map_workers_now']}: predicted "
                f"{now['step_ms']:.0f} ms, measured {summary['steady_step_ms']:.0f} ms), within "
                f"{100 * WITHIN_BEST:.0f} % of the best predicted ({best:.0f} ms); there {pace}")
    if not r["map_computes"] and pick["workers"] > cores:
        sentence += (f"; {label} waits rather than computes, so workers beyond the {cores} CPUs "
                     "help, but MindSpore caps num_parallel_workers at the CPU count")
    return {**r, "predictions": table, "recommended_workers": pick["workers"],
            "predicted_best_ms": best, "predicted_now_ms": now["step_ms"],
            "now_error": (now["step_ms"] - summary["steady_step_ms"]) / summary["steady_step_ms"],
            "sentence": sentence + "."}


def compare(advice: dict[str, Any], measured: dict[int, float]) -> pd.DataFrame:
    """Predicted against measured steady steps by worker count, with the relative error."""
    predicted = {row["workers"]: row for row in advice["predictions"]}
    rows = []
    for workers, step_ms in sorted(measured.items()):
        row = predicted.get(workers) or predict(advice, workers)
        rows.append({"workers": workers, "predicted_step_ms": row["step_ms"],
                     "measured_step_ms": step_ms,
                     "error": (row["step_ms"] - step_ms) / step_ms, "binding": row["binding"]})
    return pd.DataFrame(rows)


def error_summary(table: pd.DataFrame) -> dict[str, float]:
    """Mean and worst absolute relative error of the predictions."""
    if table.empty:
        return {"mean_abs_error": math.nan, "max_abs_error": math.nan}
    errors = table["error"].abs()
    return {"mean_abs_error": float(errors.mean()), "max_abs_error": float(errors.max())}
