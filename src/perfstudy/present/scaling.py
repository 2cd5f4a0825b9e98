"""The report's what-if part: the advisor's predictions set against the arms that ran them.

Every arm is a measured point (its effective map workers, its steady step); the advisor of
the source arm (the baseline when it was profiled) predicts every point. In a worker sweep
this is the scaling curve, predicted against measured, with the error stated whatever it is.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.decide.advisor import Advice
from perfstudy.decide.arms import PickCheck, arm_workers, fixed_arms, pick_check, settings, source_arm
from perfstudy.decide.whatif import predict
from perfstudy.present.figstyle import legend_below  # noqa: E402
from perfstudy.run.settings import PRIMARY_KEY  # noqa: E402


def _counts(advice: Advice) -> list[int]:
    return list(range(1, int(advice.cores) + 1))


def whatif_table(arms: list) -> pd.DataFrame:
    """Per arm: workers, measured and predicted steady step, error; then predicted-only rows."""
    source = source_arm(arms)
    if source is None:
        return pd.DataFrame()
    advice = source.diagnosis.advisor
    rows = []
    for arm in fixed_arms(arms, source):  # AutoTune has no single worker count to predict
        predicted = predict(advice, settings(arm))
        measured = arm.summary.steady_step_ms
        rows.append({"arm": arm.name, "map workers": arm_workers(arm),
                     "measured step (ms)": round(measured),
                     "predicted step (ms)": round(predicted.step_ms),
                     "error": f"{pct((predicted.step_ms - measured) / measured, 1, signed=True)}",
                     "predicted pace": predicted.binding})
    ran = {arm_workers(a) for a in fixed_arms(arms, source)}
    for workers in _counts(advice):
        if workers not in ran:
            row = predict(advice, {PRIMARY_KEY: workers})
            rows.append({"arm": "(not run)", "map workers": workers, "measured step (ms)": "",
                         "predicted step (ms)": round(row.step_ms), "error": "",
                         "predicted pace": row.binding})
    return pd.DataFrame(rows)


def advisor_lines(arms: list) -> list[str]:
    """Each arm's advisor sentence, then the pick checked against what was measured."""
    advised = [a for a in arms if (a.diagnosis.advisor if a.diagnosis else None)]
    profiled = [a for a in advised if a.diagnosis.profiled]
    lines = [f"{a.name}: {a.diagnosis.advisor.sentence}" for a in (profiled or advised)]
    check = pick_check(arms)
    if check is None:
        return lines
    if check.no_verdict:
        no_pick = (f"{check.source} got no verdict (its measured window was not steady), so nothing "
                   "was recommended and no pick is checked against the arms.")
        return [*lines, no_pick, *autotune_lines(arms, check)]
    head = (f"The recommendation (from {check.source}) is {check.recommended_workers} map "
            f"worker(s); the fastest arm measured is {check.best_arm} "
            f"({check.best_workers} worker(s), {check.best_step_ms:.0f} ms)")
    if check.picked_step_ms is not None:
        head += (f"; the pick measured {check.picked_step_ms:.0f} ms, "
                 f"{pct(check.picked_vs_best, 1, signed=True)} against the best "
                 f"({'within' if check.within_target else 'outside'} the {pct(GAIN_THAT_MATTERS)} target)")
    else:
        head += "; no arm ran the pick, so it is not checked here (run study=sweep)"
    return lines + [head + "."] + autotune_lines(arms, check)


def autotune_lines(arms: list, check: PickCheck) -> list[str]:
    """AutoTune's arms against the fastest fixed setting and the advisor's pick."""
    lines = []
    for arm in arms:
        tuned = arm.summary.autotune
        if not tuned:
            continue
        step = arm.summary.steady_step_ms
        chosen = tuned.map_workers
        line = (f"{arm.name}: Dataset AutoTune, started from {arm_workers(arm)} map worker(s), "
                + (f"ended with {chosen} map worker(s)" if chosen else "saved no setting")
                + f"; steady step {step:.0f} ms over the whole run (it tunes while the steps run), "
                f"{pct((step / check.best_step_ms - 1), 1, signed=True)} against the fastest fixed "
                f"setting ({check.best_arm})")
        manual = next((a for a in arms if a.name == "tuned"), None)
        if manual is not None:  # the case study's manual fix, when the study has it
            line += (f", {pct((step / manual.summary.steady_step_ms - 1), 1, signed=True)} against the "
                     f"manual tuned arm ({arm_workers(manual)} worker(s))")
        if check.picked_step_ms is not None:
            line += f" and {pct((step / check.picked_step_ms - 1), 1, signed=True)} against the advisor's pick"
        lines.append(line + (f"; its configuration: {Path(tuned.config_file).name}"
                             if tuned.config_file else "") + ".")
    return lines


def figure_scaling(arms: list, path: Path) -> Path | None:
    """Steady step (measured points, predicted line) and measured gap share against workers.
    The file is always drawn (the workflow registers it); None, with a figure that says why,
    when no arm's advisor speaks for the study (a diagnosis benchmark: each scenario is scored
    against its own sweep) or the arms ran fewer than two worker counts."""
    source = source_arm(arms)
    fixed = fixed_arms(arms, source)
    if source is None or len({arm_workers(a) for a in fixed}) < 2:
        fig, ax = plt.subplots(figsize=(6.4, 1.6), layout="constrained")
        ax.axis("off")
        ax.text(0.5, 0.5, "Not drawn: " + ("no arm's advisor speaks for this study (a diagnosis "
                "benchmark scores each scenario against its own sweep)" if source is None else
                "the arms ran fewer than two map worker counts here"),
                ha="center", va="center", wrap=True, fontsize=9)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return None
    advice = source.diagnosis.advisor
    counts = sorted({*(arm_workers(a) for a in fixed), *_counts(advice)})
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    ax.plot(counts, [predict(advice, {PRIMARY_KEY: w}).step_ms for w in counts], "--", color="#7f7f7f",
            label=f"predicted from {source.name}")
    points = sorted(fixed, key=arm_workers)
    ax.plot([arm_workers(a) for a in points], [a.summary.steady_step_ms for a in points], "o",
            color="#1f77b4", label="measured steady step")
    for arm in points:
        ax.annotate(arm.name, (arm_workers(arm), arm.summary.steady_step_ms), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    for arm in arms:
        if arm.summary.autotune:
            ax.axhline(arm.summary.steady_step_ms, color="#2ca02c", linewidth=1,
                       label=f"{arm.name} (AutoTune)")
    ax.set_xlabel("map num_parallel_workers (effective)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("steady step (ms)")
    ax.set_ylim(bottom=0)
    share = ax.twinx()
    share.plot([arm_workers(a) for a in points], [100 * a.summary.gap_share for a in points], "s:",
               color="#d62728", label="measured gap share")
    share.set_ylabel("gap share (%)", color="#d62728")
    share.set_ylim(0, 100)
    handles = ax.get_legend_handles_labels()
    extra = share.get_legend_handles_labels()
    legend_below(fig, handles[0] + extra[0], handles[1] + extra[1], fontsize=7, ncols=2)
    ax.set_title("Step time against map workers", fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
