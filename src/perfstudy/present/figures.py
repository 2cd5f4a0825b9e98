"""The report's figures (matplotlib, PNG): step breakdown, step time, published vs measured,
data queues, the verified candidates as a forest plot, each arm's step-time distribution."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib import ticker  # noqa: E402

from perfstudy.decide.arms import Arm
from perfstudy.present.figstyle import legend_below  # noqa: E402


def _legend_outside(ax, fontsize: int = 8, ncols: int = 2) -> None:
    legend_below(ax.figure, *ax.get_legend_handles_labels(), fontsize=fontsize, ncols=ncols)


def _not_drawn(path: Path, why: str) -> None:
    """A figure the workflow registers but that has nothing to show: a strip saying why."""
    fig, ax = plt.subplots(figsize=(6.4, 1.2), layout="constrained")
    ax.axis("off")
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True, fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


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


RATIO_TICKS = (0.25, 0.33, 0.5, 0.67, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
OUTCOME_COLOURS = {"faster": "#2ca02c", "slower": "#d62728", "equivalent": "#7f7f7f",
                   "inconclusive": "#ff7f0e"}


def verified_rows(arm: Arm) -> list[tuple[str, object]]:
    """(label, Comparison) for each candidate an arm's rounds measured against its own setting."""
    rec = arm.diagnosis.recommendation if arm.diagnosis else None
    checked = rec.verification if rec else None
    if checked is None:
        return []
    return [(f"{arm.name}: {m.label}" + (f" ({m.reused_from}'s rounds)" if m.reused_from else ""),
             m.comparison) for m in checked.settings[1:]
            if m.comparison is not None and m.comparison.ratio is not None]


def figure_verified(arms: list[Arm], path: Path) -> Path | None:
    """Forest plot: each verified candidate's step ratio against its arm's own setting, with its
    interval and paired rounds, beside the band inside which a change does not count. The file
    is always drawn (the workflow registers it); None, with a figure that says why, when no arm
    measured a candidate."""
    rows = [row for arm in arms for row in verified_rows(arm)]
    if not rows:
        return _not_drawn(path, "Not drawn: no candidate was measured against "
                          + ("its" if len(arms) == 1 else "an arm's") + " own setting "
                          "(verify.candidates=0, or the measured window was not steady)")
    margin = rows[0][1].margin
    fig, ax = plt.subplots(figsize=(7.6, 0.9 + 0.42 * len(rows)), layout="constrained")
    ax.axvspan(1 / (1 + margin), 1 + margin, color="#eeeeee", zorder=0,
               label=f"within {margin:.0%}: no change that matters")
    ax.axvline(1.0, color="black", lw=0.8)
    for y, (_, c) in enumerate(rows):
        colour = OUTCOME_COLOURS.get(c.outcome, "black")
        if c.low is not None and c.high is not None:
            ax.plot([c.low, c.high], [y, y], color=colour, lw=2.2, solid_capstyle="butt")
        ax.scatter([c.ratio], [y], color=colour, s=36, zorder=3,
                   label=c.outcome if c.outcome not in ax.get_legend_handles_labels()[1] else None)
        ends = f" ({c.low:.2f}-{c.high:.2f})" if c.low is not None and c.high is not None else ""
        ax.annotate(f"{c.ratio:.2f}x{ends}, {c.rounds} rounds", (1.0, y),
                    xycoords=("axes fraction", "data"), xytext=(6, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), [r[0] if len(r[0]) < 48 else r[0][:45] + "..." for r in rows],
                  fontsize=7)
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    ticks = [t for t in RATIO_TICKS if low <= t <= high]
    ax.xaxis.set_major_locator(ticker.FixedLocator(ticks))
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.invert_yaxis()
    level = rows[0][1].level
    ax.set_xlabel(f"step time / the arm's own setting's (paired rounds, {level:.0%} interval; "
                  "left of 1: faster)", fontsize=8)
    ax.set_title("Verified candidates against each arm's own setting", fontsize=10)
    _legend_outside(ax, fontsize=7, ncols=5)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def figure_step_distribution(arms: list[Arm], path: Path) -> Path:
    """Each arm's measured steps as a distribution: the iteration gap (waiting for data), the
    forward+backward (compute) and the whole step, as box plots with every step shown."""
    parts = (("gap_ms", "iteration gap", "#d62728"), ("fwd_bwd_ms", "forward+backward", "#1f77b4"),
             ("step_ms", "whole step", "#444444"))
    fig, ax = plt.subplots(figsize=(7.2, 0.9 + 0.75 * len(arms)), layout="constrained")
    ticks = []
    for i, arm in enumerate(arms):
        measured = arm.steps[arm.steps["phase"] == "measured"]
        for j, (column, label, colour) in enumerate(parts):
            y = i * (len(parts) + 1) + j
            values = measured[column].clip(lower=0.01).to_numpy()  # a log axis: 0 ms shown at 0.01
            if len(values):
                ax.boxplot([values], positions=[y], orientation="horizontal", widths=0.7, showfliers=False,
                           medianprops={"color": colour}, boxprops={"color": colour},
                           whiskerprops={"color": colour}, capprops={"color": colour})
                ax.scatter(values, [y] * len(values), s=8, color=colour, alpha=0.6, zorder=3,
                           label=label if i == 0 else None)
        ticks.append((i * (len(parts) + 1) + 1, f"{arm.name}\n({len(measured)} steps)"))
    ax.set_yticks([t for t, _ in ticks], [name for _, name in ticks], fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("ms (measured steps, log)")
    ax.set_title("Step time distribution per arm: waiting for data against computing", fontsize=10)
    _legend_outside(ax, fontsize=7, ncols=3)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


RESULT_COLOURS = {"holds": "#2ca02c", "does not hold": "#d62728", "inconclusive": "#7f7f7f"}


def figure_claim_history(card, path: Path) -> Path | None:
    """Each numeric claim across the study's recorded runs on this machine kind, oldest first,
    this run last: its value with its interval, coloured by the verdict it got, beside its
    bound. The file is always drawn (the workflow registers it); None, with a figure that says
    why, when the study has no numeric claim measured."""
    from perfstudy.decide.claims import METRICS

    claims = [c for c in card.claims if c.history is not None and c.history.points
              and any(p.value is not None for p in c.history.points)]
    if not claims:
        return _not_drawn(path, "Not drawn: this study has no claims file, or none of its claims "
                          "was measured as a number")
    cols = 2
    rows = -(-len(claims) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7.6, 0.6 + 1.55 * rows), layout="constrained",
                             squeeze=False)
    seen: set[str] = set()
    for ax, claim in zip(axes.flat, claims, strict=False):
        kind = METRICS[claim.metric][1]
        scale = 100.0 if kind == "percent" else 1.0
        points = claim.history.points
        for x, p in enumerate(points, start=1):
            if p.value is None:
                continue
            colour = RESULT_COLOURS.get(p.result, "black")
            if p.low is not None and p.high is not None:
                ax.plot([x, x], [p.low * scale, p.high * scale], color=colour, lw=2.2,
                        solid_capstyle="butt")
            last = x == len(points)
            ax.scatter([x], [p.value * scale], color=colour, s=46 if last else 26, zorder=3,
                       edgecolors="black" if last else colour)
            seen.add(p.result)
        for bound, style in ((claim.at_least, "--"), (claim.at_most, ":")):
            if bound is not None:
                ax.axhline(bound * scale, color="black", lw=0.9, ls=style)
        ax.set_xlim(0.4, len(points) + 0.6)
        ax.set_xticks(range(1, len(points) + 1))
        ax.tick_params(labelsize=7)
        unit = {"percent": "%", "times": "x"}.get(kind)
        if unit:
            ax.set_ylabel(unit, fontsize=7)
        ax.set_title(f"{claim.id} ({claim.check})" if claim.check else claim.id, fontsize=8)
    for ax in list(axes.flat)[len(claims):]:
        ax.axis("off")
    fig.suptitle("Each claim across the recorded runs on this machine kind, oldest first (outlined: "
                 "this run)\nvalue and interval, coloured by verdict; dashed: at least, dotted: at most",
                 fontsize=9)
    handles = [plt.Line2D([], [], marker="o", ls="", color=RESULT_COLOURS[r], label=r)
               for r in RESULT_COLOURS if r in seen]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
