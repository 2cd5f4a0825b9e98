"""The report's figures (matplotlib, PNG): step breakdown, step time, published vs measured,
data queues."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from perfstudy.decide.arms import Arm
from perfstudy.present.figstyle import legend_below  # noqa: E402


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
    window = (arm.diagnosis.window if arm.diagnosis else None)
    if window:
        ax.axvspan(window.start_s - origin, window.end_s - origin, color="#dddddd", zorder=0,
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
