"""The report's tables (pandas frames): comparison, published vs measured, diagnosis, operators,
setup, spread, floors and the scorecard."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from perfstudy.common.thresholds import fmt, pct
from perfstudy.decide.arms import Arm
from perfstudy.decide.diagnosis import input_bound_band, verdict_label
from perfstudy.decide.scorecard import Scorecard
from perfstudy.present.sentences import workers_text
from perfstudy.run.summary import SPREADS

# The case study's table (CASE_STUDY.md): ResNet50, batch 32, accelerator, MindInsight.
PUBLISHED = {
    "baseline": {"gap_ms": 72.8, "step_ms": 90.0},
    "tuned": {"gap_ms": 0.25, "step_ms": 18.07},
}


def comparison_table(arms: list[Arm]) -> pd.DataFrame:
    """Published rows and measured rows, one per arm, same columns."""
    baseline = next((a for a in arms if a.name == "baseline"), arms[0])
    rows = []
    for name, pub in PUBLISHED.items():
        rows.append({"source": "published", "arm": name, "workers_requested": None if name == "baseline" else 12,
                     "workers_effective": 1 if name == "baseline" else 12,
                     "steady_step_ms": pub["step_ms"], "gap_ms": pub["gap_ms"],
                     "gap_share": pub["gap_ms"] / pub["step_ms"],
                     "speedup": PUBLISHED["baseline"]["step_ms"] / pub["step_ms"]})
    for arm in arms:
        s = arm.summary
        rows.append({
            "source": "measured", "arm": arm.name,
            "workers_requested": s.num_parallel_workers.requested,
            "workers_effective": s.num_parallel_workers.effective,
            "steady_step_ms": s.steady_step_ms, "gap_ms": s.gap_ms.mean,
            "gap_share": s.gap_share,
            "speedup": baseline.summary.steady_step_ms / s.steady_step_ms,
            "step_ms_median": s.step_ms.median, "step_ms_p10": s.step_ms.p10,
            "step_ms_p90": s.step_ms.p90, "gap_ms_median": s.gap_ms.median,
            "fwd_bwd_ms_mean": s.fwd_bwd_ms.mean, "tail_ms_mean": s.tail_ms.mean,
            "images_per_s": s.images_per_s, "input_bound": input_bound_band(s.gap_share),
            "compute_floor_ms": s.compute_floor_ms, "input_floor_ms": s.input_floor_ms,
            "cpu_floor_ms": s.cpu_floor_ms, "binding_floor": s.binding_floor,
            "steady_vs_floor": s.steady_vs_floor, "steps_measured": s.steps_measured,
            "steps_excluded": s.steps_excluded, "config_hash": s.config_hash,
        })
    return pd.DataFrame(rows)


def diagnosis_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        d = arm.diagnosis
        if d is None:
            continue
        culprit = d.culprit
        cpu = d.cpu
        busy = cpu.host_busy_pct
        rows.append({
            "arm": arm.name,
            "verdict": verdict_label(d.bound),
            "input-bound (TF bands)": f"{d.input_bound.band} ({pct(d.input_bound.gap_share, 1)})",
            "culprit operator": (f"{culprit.label}, {culprit.num_workers} worker(s)"
                                 if culprit else "none"),
            "host CPU busy": f"{busy:.0f} % of {cpu.cores}" if busy is not None else "not profiled",
            "step / CPU floor": f"{cpu.steady_vs_cpu_floor:.2f}",
            "iterator wait (median ms)": (f"{d.iterator_wait.median_ms:.0f}"
                                          if d.iterator_wait and d.iterator_wait.batches else "-"),
        })
    return pd.DataFrame(rows)


def ops_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        if arm.ops is None:
            continue
        for row in arm.ops.itertuples(index=False):
            if pd.isna(row.queue_usage):
                continue
            rows.append({"arm": arm.name, "operator": row.label, "workers": row.num_workers,
                         "queue usage": f"{pct(row.queue_usage)}",
                         "empty": f"{pct(row.empty_ratio)}",
                         "CPU (% of a core)": "-" if pd.isna(row.cpu_pct) else f"{row.cpu_pct:.0f}"})
    return pd.DataFrame(rows)


def or_none(frame: pd.DataFrame) -> pd.DataFrame | None:
    return None if frame.empty else frame


UNITS = {"share": "percent", "speedup": "times"}  # the rest: milliseconds, as numbers


def published_vs_measured(arms: list[Arm]) -> pd.DataFrame:
    by_name = {a.name: a.summary for a in arms}
    base = by_name.get("baseline")
    rows = []
    for label, key in (("iteration gap (ms)", "gap"), ("step time (ms)", "step"),
                       ("gap share", "share"), ("speed vs baseline", "speedup")):
        if key == "speedup" and base is None:  # a study without a baseline arm
            continue
        row = {"metric": label}
        for arm_name, pub in PUBLISHED.items():
            value = {"gap": pub["gap_ms"], "step": pub["step_ms"],
                     "share": pub["gap_ms"] / pub["step_ms"],
                     "speedup": PUBLISHED["baseline"]["step_ms"] / pub["step_ms"]}[key]
            row[f"published {arm_name}"] = fmt(value, UNITS.get(key, "number"))
        for arm in arms:
            s = arm.summary
            value = {"gap": s.gap_ms.mean, "step": s.steady_step_ms,
                     "share": s.gap_share,
                     "speedup": (base.steady_step_ms / s.steady_step_ms) if base else float("nan")}[key]
            row[f"measured {arm.name}"] = fmt(value, UNITS.get(key, "number"))
        rows.append(row)
    return pd.DataFrame(rows)


def step_text(f) -> str:
    """The training step as built: model, loss, optimizer, precision, labels, e.g. "resnet50,
    softmax_ce, momentum, O0"; a summary from before these were recorded: the model alone."""
    parts = [f.model_name or f.model.rsplit(".", 1)[-1]]
    if f.loss_name:
        parts += [f.loss_name, f.optimizer_name or "?", f.amp_level or "O0"]
        if f.loss_scale and f.loss_scale != 1.0:
            parts.append(f"loss scale {f.loss_scale:g}")
        if f.labels and f.labels != "class indices":
            parts.append(f"labels {f.labels}")
    return ", ".join(parts)


def setup_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        s = arm.summary
        env = s.environment
        rows.append({
            "arm": arm.name, "map workers": workers_text(s),
            "device": " ".join(filter(None, (s.device_target, (env.get("device") or {}).get("model"))))
                      + f" ({s.mode} mode)",
            "CPU": f"{env['cpu_model']} x{env['usable_cpus']}",
            "input": f"{s.batch_size} x {s.image_size} px",
            "step": step_text(s.factories),
            "data": (f"{s.dataset.num_images} JPEGs, {s.dataset.total_bytes / 1e6:.0f} MB "
                     f"({s.dataset.source})"),
            "steps measured / excluded": (f"{s.steps_measured} / {s.steps_excluded} "
                                          f"{s.steps_excluded_by_phase}"),
            "peak memory, CPU time": (
                f"{s.resources.max_rss_mb:.0f} MiB, {s.resources.cpu_s + s.resources.children_cpu_s:.0f} s"
                if s.resources else "not recorded"),
            "MindSpore": s.mindspore_version,
            "config hash": s.config_hash,
        })
    return pd.DataFrame(rows)


def spread_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        s = arm.summary
        for part in SPREADS:
            rows.append({"arm": arm.name, "part": part,
                         **{k: f"{v:.1f}" for k, v in asdict(getattr(s, part)).items()}})
    return pd.DataFrame(rows)


def floor_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        s = arm.summary
        c = s.calibration
        rows.append({
            "arm": arm.name,
            "network alone (ms wall / CPU-ms)": f"{c.compute_wall_ms:.0f} / {c.compute_cpu_ms:.0f}",
            "pipeline alone (ms wall / CPU-ms per batch)": f"{c.pipeline_wall_ms:.0f} / {c.pipeline_cpu_ms:.0f}",
            "CPU floor (ms)": f"{s.cpu_floor_ms:.0f}",
            "binding floor": f"{s.binding_floor} ({s.floor_ms:.0f} ms)",
            "steady step (ms)": f"{s.steady_step_ms:.0f}",
            "steady / floor": f"{s.steady_vs_floor:.2f}",
        })
    return pd.DataFrame(rows)


def scorecard_table(card: Scorecard) -> pd.DataFrame:
    table = pd.DataFrame([{"result": r.result + (", fragile" if r.history and r.history.fragile else ""),
                           "claim": f"{r.claim} ({r.source}; {r.arm})",
                           "published": r.published_text, "measured here": r.measured_text,
                           "check": r.check, "across runs": r.history.text if r.history else "-",
                           "how": r.detail}
                          for r in card.claims])
    return table if card.history is not None else table.drop(columns="across runs")
