"""The study's comparison: tables, figures, verdicts, report.md and a self-contained report.html."""

from __future__ import annotations

import base64
import html
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from perfstudy.common.io import read_json, read_table, write_csv, write_json, write_text_atomic  # noqa: E402
from perfstudy.common.thresholds import pct
from perfstudy.decide import claims, remedy, scenarios  # noqa: E402
from perfstudy.decide.decision import describe_changes  # noqa: E402
from perfstudy.decide.diagnosis import input_bound_band, verdict_label  # noqa: E402
from perfstudy.present import peers, repeats, scaling, verified  # noqa: E402
from perfstudy.present.figstyle import legend_below  # noqa: E402
from perfstudy.run.settings import ADDRESSED, BUILTIN_PIPELINE, MP  # noqa: E402
from perfstudy.run.summary import RunSummary, read_summary

# The case study's table (CASE_STUDY.md): ResNet50, batch 32, accelerator, MindInsight.
PUBLISHED = {
    "baseline": {"gap_ms": 72.8, "step_ms": 90.0},
    "tuned": {"gap_ms": 0.25, "step_ms": 18.07},
}


@dataclass
class Arm:
    """One arm's results as the report needs them."""

    name: str
    summary: RunSummary
    steps: pd.DataFrame
    diagnosis: dict[str, Any] | None = None
    ops: pd.DataFrame | None = None
    queues: pd.DataFrame | None = None


def load_arm(run_dir: str | Path, name: str) -> Arm:
    """An arm's results from its run folder (analysis outputs when present)."""
    run = Path(run_dir)
    diagnosis = read_json(run / "diagnosis.json") if (run / "diagnosis.json").is_file() else None
    return Arm(name, read_summary(run), pd.read_csv(run / "steps.csv"), diagnosis,
               read_table(run / "pipeline_ops.csv"), read_table(run / "queues.csv"))


def _workers_text(summary: RunSummary) -> str:
    factory = summary.factories.pipeline
    if factory != BUILTIN_PIPELINE:  # a user's pipeline: its operators by address
        settings = summary.operator_settings or {}
        sized = [f"{key.removeprefix(ADDRESSED)} {value} worker{'s' if value != 1 else ''}"
                 + (" in processes" if settings.get(key + MP) else "")
                 for key, value in settings.items() if not key.endswith(MP)]
        return f"{factory.rpartition('.')[2]}: {', '.join(sized) or 'as built'}"
    workers = summary.num_parallel_workers
    if workers.requested is None:
        return f"map() without num_parallel_workers ({workers.effective} worker by default)"
    text = f"num_parallel_workers={workers.requested}"
    if workers.clamped:
        text += f" (clamped to {workers.effective}: {workers.cpu_count} CPUs)"
    return text


def verdict(arm: Arm, baseline: Arm | None) -> str:
    """One sentence per arm: how input-bound, how fast, and the diagnosis's answer (the one
    decision.decide gave; without a diagnosis, only the measured floor, no advice)."""
    s = arm.summary
    band = input_bound_band(s.gap_share)
    head = (f"{arm.name} ({_workers_text(s)}): "
            + ("not input-bound" if band == "not" else f"{band} input-bound")
            + f", the step waits for data {pct(s.gap_share)} of the time "
            f"(gap {s.gap_ms.mean:.0f} ms of a {s.steady_step_ms:.0f} ms steady step)")
    if baseline is not None and arm is not baseline:
        head += f", {baseline.summary.steady_step_ms / s.steady_step_ms:.2f}x the baseline's speed"
    if arm.diagnosis:
        return f"{head}. {arm.diagnosis['headline']} {arm.diagnosis['recommendation']['sentence']}"
    return (f"{head}; its binding floor is {s.binding_floor} ({s.floor_ms:.0f} ms, reached at "
            f"{s.steady_vs_floor:.2f}x); run the analyze rule for a diagnosis.")


# What to do when no worker setting helps, by the kind of the culprit (decision.culprit_kind);
# the full remedy, with its numbers, is in the reasoning one click away. data.prepared serves
# the case study's pipeline only; a user's is told to read a smaller copy (verdict_line).
REMEDY_WORDS = {"decode": "decode less (data.prepared=true)", "python": "vectorise it or make it a C++ op",
                "waits": "fetch asynchronously or cache", "computes": "cheaper transforms or more cores"}
MAX_VERDICT_WORDS = 40


def _models(arms: list[Arm]) -> str:
    """The models the study trained, as the title names them ('ResNet50': the study's own)."""
    names = sorted({a.summary.factories.model_name or "resnet50" for a in arms})
    return " and ".join("ResNet50" if n == "resnet50" else n for n in names)


def _short_label(label: str) -> str:
    """'Map #2 [RandomCropDecodeResize, RandomHorizontalFlip, ...] (map_1)' ->
    'Map #2 [RandomCropDecodeResize, …] (map_1)'."""
    head, bracket, rest = label.partition(" [")
    if not bracket:
        return label
    inside, _, tail = rest.partition("]")
    ops = inside.split(", ")
    return f"{head} [{ops[0]}{', …' if len(ops) > 1 else ''}]{tail}"


def verdict_line(arm: Arm, baseline: Arm | None) -> str:
    """The arm's answer in one line (at most 40 words): verdict, culprit, what to do, the gain
    predicted for it, and the step measured. It presents decision.decide's answer, nothing else."""
    d, s = arm.diagnosis, arm.summary
    rec = d["recommendation"]
    parts = [verdict_label(d["bound"])]
    if rec.get("culprit_label"):
        parts.append(f"culprit {_short_label(rec['culprit_label'])}")
    action, kind = rec["action"], rec.get("culprit_kind")
    prepared = rec.get("prepared_prediction")
    if action == "set_workers":
        parts.append(f"do: set {describe_changes(rec['changes'], d['advisor'])}")
        if rec.get("verified"):  # the promise is the measured step; the prediction beside it
            parts.append(f"verified {rec['verified_now_ms']:.0f} → {rec['verified_step_ms']:.0f} ms "
                         f"({1 + rec['measured_gain']:.2f}x; predicted {rec['predicted_step_ms']:.0f})")
        else:
            parts.append(f"predicted {rec['predicted_now_ms']:.0f} → {rec['predicted_step_ms']:.0f} ms "
                         f"({1 + rec['predicted_gain']:.2f}x, not verified)")
    elif action == "unresolved":
        parts.append("do: nothing yet (a gain within the windows' noise); raise verify.budget_share")
    elif action == "not_steady":
        needed = (rec.get("validity") or {}).get("steps_needed")
        parts.append(f"do: run trainer.steps >= {needed}" if needed else "do: run more trainer.steps")
    else:
        decode = kind == "decode" or any(str(r).startswith("decode less") for r in rec.get("remedies", []))
        measured_word = " (measured)" if rec.get("verified") else ""
        decode_words = (REMEDY_WORDS["decode"] if s.factories.pipeline == BUILTIN_PIPELINE
                        else "decode less (a copy of the source re-encoded smaller)")
        todo = (f"no worker setting helps{measured_word}; " if action == "cannot_help"
                else f"keep the settings{measured_word}; ") + (
            decode_words if decode else REMEDY_WORDS.get(kind, "more cores or an accelerator"))
        parts.append(f"do: {todo}")
        if decode and prepared:
            parts.append(f"predicted {prepared['now']:.0f} ms prepared")
    measured = f"measured {s.steady_step_ms:.0f} ms"
    if baseline is not None and arm is not baseline:
        measured += f", {baseline.summary.steady_step_ms / s.steady_step_ms:.2f}x the baseline"
    return f"{arm.name}: " + "; ".join([*parts, measured]) + "."


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


def _legend_outside(ax, fontsize: int = 8, ncols: int = 2) -> None:
    legend_below(ax.figure, *ax.get_legend_handles_labels(), fontsize=fontsize, ncols=ncols)


def figure_breakdown(arms: list[Arm], path: Path) -> Path:
    """Stacked bar of mean gap / fwd+bwd / tail per arm (they add up to the steady step)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.9), layout="constrained")
    names = [a.name for a in arms]
    bottom = [0.0] * len(arms)
    for part, colour in (("gap_ms", "#d62728"), ("fwd_bwd_ms", "#1f77b4"), ("tail_ms", "#2ca02c")):
        values = [getattr(a.summary, part).mean for a in arms]
        ax.barh(names, values, left=bottom, color=colour,
                label={"gap_ms": "iteration gap", "fwd_bwd_ms": "forward+backward",
                       "tail_ms": "iteration tail"}[part])
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.scatter([a.summary.floor_ms for a in arms], names, marker="|", s=900, color="black",
               zorder=3, label="floor (compute, input or CPU)")
    ax.set_xlabel("ms per step (mean over the measured steps)")
    ax.invert_yaxis()
    _legend_outside(ax, ncols=4)
    ax.set_title("Where a step's time goes")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def figure_steps(arms: list[Arm], path: Path) -> Path:
    """Step time over steps per arm; excluded steps (compile, warm-up, drain) hollow."""
    fig, ax = plt.subplots(figsize=(7.2, 4.2), layout="constrained")
    for arm in arms:
        frame = arm.steps
        line = ax.plot(frame["step"], frame["step_ms"], lw=1, label=arm.name)[0]
        measured = frame["phase"] == "measured"
        ax.scatter(frame["step"][measured], frame["step_ms"][measured], s=14, color=line.get_color())
        ax.scatter(frame["step"][~measured], frame["step_ms"][~measured], s=18,
                   facecolors="none", edgecolors=line.get_color())
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("step time (ms, log)")
    ax.set_title("Step time per step (hollow: excluded from the summary)")
    _legend_outside(ax, ncols=4)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def figure_published(table: pd.DataFrame, path: Path) -> Path:
    """Gap share and speedup: the article's against ours."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.2, 3.5), layout="constrained")
    for source, offset, colour in (("published", -0.2, "#7f7f7f"), ("measured", 0.2, "#1f77b4")):
        rows = table[table["source"] == source]
        xs = range(len(rows))
        left.bar([x + offset for x in xs], rows["gap_share"] * 100, width=0.4, color=colour,
                 label=source)
        right.bar([x + offset for x in xs], rows["speedup"], width=0.4, color=colour, label=source)
        left.set_xticks(list(xs), rows["arm"], rotation=20, ha="right")
        right.set_xticks(list(xs), rows["arm"], rotation=20, ha="right")
    left.set_ylabel("iteration gap, % of step")
    right.set_ylabel("speed vs baseline (x)")
    _legend_outside(right)
    fig.suptitle("Published (accelerator) vs measured (this machine)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def figure_queues(arm: Arm, path: Path) -> Path:
    """Output-queue fill (size / capacity) of each operator over time, like MindInsight's
    queue-relationship view; the profiled steps shaded."""
    fig, ax = plt.subplots(figsize=(7.2, 4.0), layout="constrained")
    origin = float(arm.steps["start_time_s"].min())
    if arm.queues is not None:
        for label, rows in arm.queues.groupby("label", sort=False):
            ax.step(rows["time_s"] - origin, 100 * rows["size"] / rows["capacity"], where="post",
                    lw=1.2, label=label if len(label) < 60 else label[:57] + "...")
    else:
        ax.text(0.5, 0.5, "no dataset profile (profiler=off)", ha="center", va="center",
                transform=ax.transAxes)
    window = (arm.diagnosis or {}).get("window")
    if window:
        ax.axvspan(window["start_s"] - origin, window["end_s"] - origin, color="#dddddd", zorder=0,
                   label="profiled steps")
    ax.set_ylim(-5, 105)
    ax.set_xlabel("seconds since the first step")
    ax.set_ylabel("output queue fill (%)")
    ax.set_title(f"{arm.name}: data queues per operator (shaded: the analysed steps)")
    if ax.get_legend_handles_labels()[0]:
        _legend_outside(ax, fontsize=7, ncols=2)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def _diagnosis_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        d = arm.diagnosis
        if d is None:
            continue
        culprit = d.get("culprit") or {}
        cpu = d["cpu"]
        busy = cpu.get("host_busy_pct")
        rows.append({
            "arm": arm.name,
            "verdict": verdict_label(d["bound"]),
            "input-bound (TF bands)": f"{d['input_bound']['band']} ({pct(d['input_bound']['gap_share'], 1)})",
            "culprit operator": (f"{culprit['label']}, {culprit.get('num_workers')} worker(s)"
                                 if culprit else "none"),
            "host CPU busy": f"{busy:.0f} % of {cpu['cores']}" if busy is not None else "not profiled",
            "step / CPU floor": f"{cpu['steady_vs_cpu_floor']:.2f}",
            "iterator wait (median ms)": (f"{d['iterator_wait']['median_ms']:.0f}"
                                          if d["iterator_wait"].get("batches") else "-"),
        })
    return pd.DataFrame(rows)


def _ops_table(arms: list[Arm]) -> pd.DataFrame:
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


def _cross_check_lines(arms: list[Arm]) -> list[str]:
    lines = []
    for arm in arms:
        cross = (arm.diagnosis or {}).get("cross_check") or {}
        if cross.get("sentence"):
            extra = ""
            if cross.get("steps"):
                extra = (f" Timeline medians: forward+backward {cross['tl_fwd_bwd_ms_median']:.0f} ms, "
                         f"tail {cross['tl_tail_ms_median']:.0f} ms, optimizer kernels busy "
                         f"{cross['optimizer_busy_ms_median']:.0f} ms.")
            lines.append(f"{arm.name}: {cross['sentence']}{extra}")
        effect = (arm.diagnosis or {}).get("profiler_effect")
        if effect:
            lines.append(f"{arm.name}, profiler's own effect: {effect['sentence']}")
        else:
            profiler = (arm.summary.profile or {}).get("profiler", "off")
            lines.append(f"{arm.name}: no op timeline (profiler={profiler}).")
    return lines


def _or_none(frame: pd.DataFrame) -> pd.DataFrame | None:
    return None if frame.empty else frame


def _md_table(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def _html_table(frame: pd.DataFrame, css: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    attr = f" class='{css}'" if css else ""
    return f"<table{attr}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _cell(value: Any) -> str:
    """A table cell; a claim's result coloured (holds / does not hold / not scored)."""
    css = RESULT_CLASS.get(value) if isinstance(value, str) else None
    attr = f" class='{css}'" if css else ""
    return f"<td{attr}>{html.escape(str(value))}</td>"


def _published_vs_measured(arms: list[Arm]) -> pd.DataFrame:
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
            row[f"published {arm_name}"] = _fmt(key, value)
        for arm in arms:
            s = arm.summary
            value = {"gap": s.gap_ms.mean, "step": s.steady_step_ms,
                     "share": s.gap_share,
                     "speedup": (base.steady_step_ms / s.steady_step_ms) if base else float("nan")}[key]
            row[f"measured {arm.name}"] = _fmt(key, value)
        rows.append(row)
    return pd.DataFrame(rows)


def _fmt(key: str, value: float) -> str:
    if key == "share":
        return f"{pct(value, 1)}"
    if key == "speedup":
        return f"{value:.2f}x"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _setup_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        s = arm.summary
        env = s.environment
        rows.append({
            "arm": arm.name, "map workers": _workers_text(s),
            "device": f"{s.device_target} ({s.mode} mode)",
            "CPU": f"{env['cpu_model']} x{env['usable_cpus']}",
            "input": f"{s.batch_size} x {s.image_size} px",
            "data": (f"{s.dataset.num_images} JPEGs, {s.dataset.total_bytes / 1e6:.0f} MB "
                     f"({s.dataset.source})"),
            "steps measured / excluded": (f"{s.steps_measured} / {s.steps_excluded} "
                                          f"{s.steps_excluded_by_phase}"),
            "MindSpore": s.mindspore_version,
            "config hash": s.config_hash,
        })
    return pd.DataFrame(rows)


def _spread_table(arms: list[Arm]) -> pd.DataFrame:
    rows = []
    for arm in arms:
        s = arm.summary
        for part in ("step_ms", "gap_ms", "fwd_bwd_ms", "tail_ms"):
            rows.append({"arm": arm.name, "part": part,
                         **{k: f"{v:.1f}" for k, v in asdict(getattr(s, part)).items()}})
    return pd.DataFrame(rows)


def _floor_table(arms: list[Arm]) -> pd.DataFrame:
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


def machines_check(arms: list[Arm]) -> str | None:
    """One sentence when the arms ran on unlike machines (CPU model or usable cores differ):
    their speedups then compare machines as well as settings."""
    seen = {}
    for arm in arms:
        env = arm.summary.environment or {}
        kind = (env.get("cpu_model"), env.get("usable_cpus") or env.get("cpu_count"))
        seen.setdefault(kind, []).append(arm.name)
    if len(seen) < 2:
        return None
    parts = "; ".join(f"{', '.join(names)} on {model} x{cores}" for (model, cores), names in seen.items())
    return (f"The arms ran on unlike CPUs ({parts}): their speedups compare machines as well as "
            "settings, so do not read them as the settings' effect; run every arm on one node type "
            "(with a SLURM --constraint) and compare again.")


def _hosts(arms: list[Arm]) -> str:
    """Where each arm ran: host and scheduler job (when there was one)."""
    out = []
    for arm in arms:
        env = arm.summary.environment or {}
        job = (env.get("scheduler") or {}).get("job_id")
        out.append(f"{arm.name} {env.get('host', '?')}" + (f" (SLURM job {job})" if job else ""))
    return ", ".join(out)


def _provenance(arms: list[Arm]) -> str:
    """The footer: what every number above was made with (summary.json of each arm)."""
    s = arms[0].summary
    env = s.environment
    shas = sorted({(a.summary.git_sha, bool(a.summary.git_dirty)) for a in arms})
    code = "; ".join(f"git {sha}{' (dirty: uncommitted changes)' if dirty else ''}"
                     for sha, dirty in shas)
    datasets = ", ".join(sorted({a.summary.dataset_sha256[:16] for a in arms}))
    configs = ", ".join(f"{a.name} {a.summary.config_hash}" for a in arms)
    mindspore = s.mindspore_version + (f" (commit {s.mindspore_commit})"
                                          if s.mindspore_commit else "")
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items() if k != "mindspore")
    return (f"{code}; config hash {configs}; dataset sha256 {datasets}; hosts {_hosts(arms)}; "
            f"{env['cpu_model']} x"
            f"{env.get('usable_cpus') or env['cpu_count']} CPUs, {env['os']}, Python "
            f"{env['python']}; MindSpore {mindspore}; {packages}. Every run's full environment "
            "(all packages, CPU flags, memory) is its environment.json, also in MLflow.")


def build(study: str, runs: list[Arm], out_dir: str | Path,
          claims_spec: dict[str, Any] | None = None,
          history: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write scorecard.json, comparison.csv, repeats.csv, figures/*.png, report.md and
    report.html: the scorecard, the headline figure and the verdicts first, the detail below.

    runs: every run of the study; the detailed sections show each arm's first repeat, the
    repeats section all of them. claims_spec: the study's claims file (perfstudy.claims.load).
    history: the study's earlier recorded runs (perfstudy.present.history.read), or None.
    """
    out = Path(out_dir)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    arms = [r for r in runs if r.summary.repeat == 1]
    table = comparison_table(arms)
    spread = repeats.table(runs)
    paths = {"comparison": write_csv(out / "comparison.csv", table),
             "repeats": write_csv(out / "repeats.csv", spread)}
    paths["fig_breakdown"] = figure_breakdown(arms, figures / "step_breakdown.png")
    paths["fig_steps"] = figure_steps(arms, figures / "step_time.png")
    paths["fig_published"] = figure_published(table, figures / "published_vs_measured.png")
    for arm in arms:
        paths[f"fig_queues_{arm.name}"] = figure_queues(arm, figures / f"queues_{arm.name}.png")
    scaling_fig = scaling.figure_scaling(arms, figures / "scaling.png")
    baseline = next((a for a in arms if a.name == "baseline"), None)
    prepared = remedy.evidence(arms)
    if not prepared.empty:
        paths["prepared"] = write_csv(out / "prepared.csv", prepared)
    unlike = machines_check(arms)
    verdicts: list[tuple[str, str | None]] = [(unlike, None)] if unlike else []
    across = {a["arm"]: a for a in repeats.answers(runs)}  # each answer against run-to-run noise
    if across:
        paths["answers"] = write_csv(out / "answers.csv", pd.DataFrame(
            [{"arm": a["arm"], "repeats": a["repeats"], "settled": a["settled"],
              "step_spread": a["spread"], "sentence": a["sentence"]} for a in across.values()]))
    else:  # one repeat: no answers across repeats (none left over from an earlier study)
        (out / "answers.csv").unlink(missing_ok=True)
    for arm in arms:
        if not arm.diagnosis:  # not analysed: the measured floor only, no advice
            verdicts.append((verdict(arm, baseline), None))
            continue
        why = (f"{_workers_text(arm.summary)}. {arm.diagnosis['headline']} "
               f"{arm.diagnosis['recommendation']['sentence']}{remedy.quote(arm, prepared)}")
        line = verdict_line(arm, baseline)
        if arm.summary.arm in across:
            answer = across[arm.summary.arm]
            why += " " + answer["sentence"]
            if not answer["settled"]:
                line += f" The {answer['repeats']} repeats do not settle it (see why)."
        verdicts.append((line, why))
    exclusions = [f"{a.name}: {a.summary.steps_measured} measured, excluded "
                  f"{a.summary.steps_excluded_by_phase}; {a.summary.drain_rule}" for a in arms]
    bench, bench_points = scenarios.score(runs)  # every repeat: the sweep's medians
    if not bench.empty:
        paths["scenarios"] = write_csv(out / "scenarios.csv", bench)
        write_csv(out / "scenario_predictions.csv", bench_points)
    # a diagnosis benchmark's answer is its score: shown first, open, like a scorecard
    benchmark = [] if bench.empty else [("Diagnosis benchmark, by scenario", bench)]
    details = [
        ("Diagnosis benchmark: predicted against measured at every swept setting", _or_none(bench_points)),
        ("The remedy, measured: the source prepared at a bounded resolution",
         remedy.lines(prepared, arms) or None),
        ("Published vs measured", _published_vs_measured(arms)),
        ("Repeats: spread across seeds, and the speedup's interval",
         repeats.report_table(spread) if spread["repeats"].max() > 1 else None),
        ("Diagnosis, side by side", _diagnosis_table(arms)),
        ("What-if advisor: predicted from one profiled run", scaling.advisor_lines(arms) or None),
        ("Verification: the model's candidates measured, each on a fresh pipeline",
         _or_none(verified.windows_table(arms))),
        ("Verification: what it cost", verified.cost_lines(arms) or None),
        ("The model's accuracy by operator kind (verification windows)",
         _or_none(verified.accuracy_by_kind(arms))),
        ("Predicted against measured, by worker count", _or_none(scaling.whatif_table(arms))),
        ("Pipeline operators over the profiled steps", _ops_table(arms)),
        ("Step trace: op timeline vs host timers, and the profiler's own effect",
         _cross_check_lines(arms)),
        ("Which steps count", exclusions),
        ("Setup", _setup_table(arms)),
        ("Spread over the measured steps (ms)", _spread_table(arms)),
        ("What bounds each step", _floor_table(arms)),
        ("How to read these numbers", [NOTES]),
    ]
    figs = [("Step time per step", paths["fig_steps"]),
            ("Published vs measured", paths["fig_published"])]
    figs += [(f"Data queues: {a.name}", paths[f"fig_queues_{a.name}"]) for a in arms]
    if scaling_fig is not None:
        paths["fig_scaling"] = scaling_fig
        figs.append(("Step time against map workers, predicted and measured", scaling_fig))
    card = claims.score(claims_spec or {"claims": []}, arms, runs)  # none: "nothing is scored"
    if history is not None and card["claims"]:
        card = claims.with_history(card, claims_spec, history, history["machine"])
    paths["scorecard"] = write_json(out / "scorecard.json", card)
    doc = _Document(f"Study {study}: {_models(arms)} input-pipeline tuning")
    scored = bool(card["claims"])
    doc.lead(card["headline"] if scored else scenarios.summary_line(bench) if benchmark else None)
    if scored:
        note = " ".join(t for t in (card.get("reference"), history_note(card)) if t)
        doc.section(card.get("title") or "The claims, scored", _scorecard_table(card),
                    note=note or None, css="scorecard")
    for title, table_ in benchmark:
        doc.section(title, table_)
    doc.figure("Where a step's time goes, per arm", paths["fig_breakdown"], open_=True)
    doc.verdicts("Verdicts", verdicts)
    side = peers.table(arms)
    if not side.empty:
        paths["peers"] = write_csv(out / "peers.csv", side)
        doc.section("Beside the tools you have: MindSpore's analyzer (and AutoTune) on the same runs", side)
    scored_peers = peers.against_sweep(arms)
    if not scored_peers.empty:
        paths["peers_scored"] = write_csv(out / "peers_scored.csv", scored_peers)
        doc.section("The tools scored against the measured arms", scored_peers)
    doc.heading("Details")
    for title, content in details:
        if content is not None:  # an optional section with nothing to say
            doc.section(title, content, collapsed=True)
    for title, path in figs:
        doc.figure(title, path)
    doc.footer(f"Provenance: {_provenance(arms)}")
    paths["md"] = write_text_atomic(out / "report.md", doc.markdown())
    paths["html"] = write_text_atomic(out / "report.html", doc.html(study))
    return paths


NOTES = (
    "Steady step = wall time of the measured window / its steps (the tuned arm's steps "
    "alternate fast and slow, so the median misleads). The iteration gap is the time a step "
    "waits for its batch; its share of the step is what the article's MindInsight step trace "
    "shows. The CPU floor is (pipeline CPU-ms + network CPU-ms per batch) / cores, each "
    "measured alone after training; an arm's floor is the slowest of network alone, pipeline "
    "alone and the CPU floor, so 'what this hardware allows' is the baseline's step over the "
    "tuned arm's floor (an estimate: an arm can beat it by a few %). Step 0 (graph compile, or "
    "the pipeline's start-up when the graphs were compiled first) and the warm-up steps are "
    "excluded, then the drain rule drops steps served from a queue filled during the compile "
    "(see 'Which steps count'). The article ran on an accelerator at 224 px; this machine is "
    "a CPU, so absolute times differ by design: compare gap shares and speedups.")


def _scorecard_table(card: dict[str, Any]) -> pd.DataFrame:
    table = pd.DataFrame([{"result": r["result"] + (", fragile" if (r.get("history") or {}).get("fragile") else ""),
                           "claim": f"{r['claim']} ({r['source']}; {r['arm']})",
                           "published": r["published_text"], "measured here": r["measured_text"],
                           "check": r["check"], "across runs": (r.get("history") or {}).get("text", "-"),
                           "how": r["detail"]}
                          for r in card["claims"]])
    return table if "history" in card else table.drop(columns="across runs")


def history_note(card: dict[str, Any]) -> str | None:
    """Under the scorecard: where its history comes from (or why it could not be read)."""
    h = card.get("history")
    if not h:
        return None
    if h.get("error"):
        return f"History not read: {h['error']}"
    text = (f"History: {h['runs']} recorded run(s) of this study, claims and configs on this machine "
            f"kind ({h['machine']}), this one included, read back from the tracking store")
    if h["other_machines"]:
        text += f"; {h['other_machines']} run(s) on other machine kinds are not mixed in"
    return text + (". Fragile: the verdict changed across the runs, or the margin to the bound is "
                   "inside the spread of the values across them.")


RESULT_CLASS = {"holds": "pass", "does not hold": "fail", "inconclusive": "unsure", "not scored": "na",
                "holds, fragile": "unsure", "does not hold, fragile": "unsure",
                "inconclusive, fragile": "unsure"}
STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
         "line-height:1.4}table{border-collapse:collapse;margin:1em 0;font-size:90%}"
         "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
         "th{background:#eee}img{max-width:100%}footer{font-size:80%;color:#555}"
         ".lead{font-size:115%;font-weight:bold}td.pass{background:#d9f2d9}"
         "td.fail{background:#f8d0d0}td.na{background:#eee;color:#555}td.unsure{background:#fbeec1}"
         "details{margin:.4em 0;border-top:1px solid #ddd;padding-top:.3em}"
         "summary{cursor:pointer;font-weight:bold;font-size:105%}.note{color:#555}"
         "details.why{border:0;padding:0;margin:0 0 .3em}details.why summary{font-weight:normal;"
         "font-size:90%;color:#555}"
         "td{overflow-wrap:anywhere}table.scorecard td:nth-child(2){min-width:18em}"
         "table.scorecard td:last-child{color:#555;font-size:90%}")


class _Document:
    """The report as Markdown and as one self-contained HTML page (images inlined)."""

    def __init__(self, title: str) -> None:
        self.md = [f"# {title}", ""]
        self.body = [f"<h1>{html.escape(title)}</h1>"]

    def lead(self, text: str | None) -> None:
        if text:
            self.md += [f"**{text}**", ""]
            self.body.append(f"<p class='lead'>{html.escape(text)}</p>")

    def heading(self, title: str) -> None:
        self.md += [f"## {title}", ""]
        self.body.append(f"<h2>{html.escape(title)}</h2>")

    def section(self, title: str, content: list[str] | pd.DataFrame, *, collapsed: bool = False,
                note: str | None = None, css: str = "") -> None:
        self.md += [f"{'###' if collapsed else '##'} {title}", ""]
        inner = f"<p class='note'>{html.escape(note)}</p>" if note else ""
        if note:
            self.md += [f"_{note}_", ""]
        if isinstance(content, list):
            self.md += [f"- {line}" for line in content] + [""]
            inner += "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in content) + "</ul>"
        else:
            self.md += [_md_table(content), ""]
            inner += _html_table(content, css)
        self.body.append(f"<details><summary>{html.escape(title)}</summary>{inner}</details>"
                         if collapsed else f"<h2>{html.escape(title)}</h2>{inner}")

    def verdicts(self, title: str, items: list[tuple[str, str | None]]) -> None:
        """One line per arm, its reasoning one click away (<details class='why'>; in Markdown, the
        line's sub-item)."""
        self.md += [f"## {title}", ""]
        inner = []
        for line, why in items:
            self.md.append(f"- {line}")
            if why:
                self.md.append(f"  - why: {why}")
            inner.append(f"<li>{html.escape(line)}" + (
                f"<details class='why'><summary>why</summary>{html.escape(why)}</details>" if why else "")
                + "</li>")
        self.md.append("")
        self.body.append(f"<h2>{html.escape(title)}</h2><ul>{''.join(inner)}</ul>")

    def figure(self, title: str, path: Path, *, open_: bool = False) -> None:
        self.md += [f"{'##' if open_ else '###'} {title}", "", f"![{title}](figures/{path.name})", ""]
        encoded = base64.b64encode(path.read_bytes()).decode()
        img = (f"<figure><img alt='{html.escape(title)}' src='data:image/png;base64,{encoded}'>"
               f"<figcaption>{html.escape(title)}</figcaption></figure>")
        self.body.append(f"<h2>{html.escape(title)}</h2>{img}" if open_ else
                         f"<details><summary>Figure: {html.escape(title)}</summary>{img}</details>")

    def footer(self, text: str) -> None:
        self.md += ["---", text, ""]
        self.body.append(f"<footer><hr><p>{html.escape(text)}</p></footer>")

    def markdown(self) -> str:
        return "\n".join(self.md)

    def html(self, title: str) -> str:
        return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
                f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>"
                f"<body>{''.join(self.body)}</body></html>\n")
