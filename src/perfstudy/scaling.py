"""The report's what-if part: the advisor's predictions set against the arms that ran them.

Every arm is a measured point (its effective map workers, its steady step); the advisor of
the source arm (the baseline when it was profiled) predicts every point. In a worker sweep
this is the scaling curve, predicted against measured, with the error stated whatever it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from perfstudy.advisor import PRIMARY_KEY, predict  # noqa: E402
from perfstudy.figstyle import legend_below  # noqa: E402

TARGET = 0.10  # the recommended setting's measured step should be within 10 % of the best


def source_arm(arms: list) -> Any | None:
    """The arm whose advisor speaks for the study: the baseline, else the first advised one.
    None in a diagnosis benchmark: its arms run different pipelines, each scored against its
    own sweep (perfstudy.scenarios), so no one arm predicts them all."""
    if any(a.summary.get("scenario") for a in arms):
        return None
    advised = [a for a in arms if (a.diagnosis or {}).get("advisor")]
    return next((a for a in advised if a.name == "baseline"), advised[0] if advised else None)


def _fixed(arms: list, source=None) -> list:
    """Arms that ran one worker count throughout (not AutoTune, which changes it as it goes)
    on the source arm's data (a prepared arm reads other data: its own prediction is in
    perfstudy.remedy)."""
    data = source.summary.get("dataset_sha256") if source is not None else None
    return [a for a in arms if not a.summary.get("autotune")
            and (data is None or a.summary.get("dataset_sha256") == data)]


def _workers(arm) -> int:
    return int(arm.summary["num_parallel_workers"]["effective"])


def settings(arm) -> dict[str, Any]:
    """The arm's sized operators as the advisor names them (older runs: the article's map)."""
    return arm.summary.get("operator_settings") or {PRIMARY_KEY: _workers(arm)}


def _counts(advice: dict[str, Any]) -> list[int]:
    return list(range(1, int(advice["cores"]) + 1))


def whatif_table(arms: list) -> pd.DataFrame:
    """Per arm: workers, measured and predicted steady step, error; then predicted-only rows."""
    source = source_arm(arms)
    if source is None:
        return pd.DataFrame()
    advice = source.diagnosis["advisor"]
    rows = []
    for arm in _fixed(arms, source):  # AutoTune has no single worker count to predict
        predicted = predict(advice, settings(arm))
        measured = arm.summary["steady_step_ms"]
        rows.append({"arm": arm.name, "map workers": _workers(arm),
                     "measured step (ms)": round(measured),
                     "predicted step (ms)": round(predicted["step_ms"]),
                     "error": f"{100 * (predicted['step_ms'] - measured) / measured:+.1f} %",
                     "predicted pace": predicted["binding"]})
    ran = {_workers(a) for a in _fixed(arms, source)}
    for workers in _counts(advice):
        if workers not in ran:
            row = predict(advice, {PRIMARY_KEY: workers})
            rows.append({"arm": "(not run)", "map workers": workers, "measured step (ms)": "",
                         "predicted step (ms)": round(row["step_ms"]), "error": "",
                         "predicted pace": row["binding"]})
    return pd.DataFrame(rows)


def pick_check(arms: list) -> dict[str, Any] | None:
    """The source arm's recommended setting against the best measured arm (None without an
    advisor). Without a verdict (its window was not steady) nothing was recommended: the check
    says so (`no_verdict`) and compares nothing."""
    source = source_arm(arms)
    if source is None:
        return None
    answer = source.diagnosis.get("recommendation") or {}
    fixed = _fixed(arms, source)
    best = min(fixed, key=lambda a: a.summary["steady_step_ms"])
    result = {"source": source.name, "best_arm": best.name, "best_workers": _workers(best),
              "best_step_ms": best.summary["steady_step_ms"]}
    if answer.get("action") == "not_steady":
        return {**result, "no_verdict": answer.get("sentence", "the window was not steady"),
                "recommended_workers": None}
    settings = answer.get("settings") or source.diagnosis["advisor"]["pick"]
    workers = int(settings.get(PRIMARY_KEY, _workers(source)))
    result["recommended_workers"] = workers
    picked = [a for a in fixed if _workers(a) == workers]
    if picked:
        step = min(a.summary["steady_step_ms"] for a in picked)
        result.update(picked_step_ms=step, picked_vs_best=step / best.summary["steady_step_ms"] - 1,
                      within_target=step <= best.summary["steady_step_ms"] * (1 + TARGET))
    return result


def advisor_lines(arms: list) -> list[str]:
    """Each arm's advisor sentence, then the pick checked against what was measured."""
    advised = [a for a in arms if (a.diagnosis or {}).get("advisor")]
    profiled = [a for a in advised if a.diagnosis.get("profiled")]
    lines = [f"{a.name}: {a.diagnosis['advisor']['sentence']}" for a in (profiled or advised)]
    check = pick_check(arms)
    if check is None:
        return lines
    if check.get("no_verdict"):
        no_pick = (f"{check['source']} got no verdict (its measured window was not steady), so nothing "
                   "was recommended and no pick is checked against the arms.")
        return [*lines, no_pick, *autotune_lines(arms, check)]
    head = (f"The recommendation (from {check['source']}) is {check['recommended_workers']} map "
            f"worker(s); the fastest arm measured is {check['best_arm']} "
            f"({check['best_workers']} worker(s), {check['best_step_ms']:.0f} ms)")
    if "picked_step_ms" in check:
        head += (f"; the pick measured {check['picked_step_ms']:.0f} ms, "
                 f"{100 * check['picked_vs_best']:+.1f} % against the best "
                 f"({'within' if check['within_target'] else 'outside'} the 10 % target)")
    else:
        head += "; no arm ran the pick, so it is not checked here (run study=sweep)"
    return lines + [head + "."] + autotune_lines(arms, check)


def autotune_lines(arms: list, check: dict[str, Any]) -> list[str]:
    """AutoTune's arms against the fastest fixed setting and the advisor's pick."""
    lines = []
    for arm in arms:
        tuned = arm.summary.get("autotune")
        if not tuned:
            continue
        step = arm.summary["steady_step_ms"]
        chosen = tuned.get("map_workers")
        line = (f"{arm.name}: Dataset AutoTune, started from {_workers(arm)} map worker(s), "
                + (f"ended with {chosen} map worker(s)" if chosen else "saved no setting")
                + f"; steady step {step:.0f} ms over the whole run (it tunes while the steps run), "
                f"{100 * (step / check['best_step_ms'] - 1):+.1f} % against the fastest fixed "
                f"setting ({check['best_arm']})")
        manual = next((a for a in arms if a.name == "tuned"), None)
        if manual is not None:  # the case study's manual fix, when the study has it
            line += (f", {100 * (step / manual.summary['steady_step_ms'] - 1):+.1f} % against the "
                     f"manual tuned arm ({_workers(manual)} worker(s))")
        if "picked_step_ms" in check:
            line += f" and {100 * (step / check['picked_step_ms'] - 1):+.1f} % against the advisor's pick"
        lines.append(line + (f"; its configuration: {Path(tuned['config_file']).name}"
                             if tuned.get("config_file") else "") + ".")
    return lines


def figure_scaling(arms: list, path: Path) -> Path | None:
    """Steady step (measured points, predicted line) and measured gap share against workers."""
    source = source_arm(arms)
    fixed = _fixed(arms, source)
    if source is None or len({_workers(a) for a in fixed}) < 2:
        return None
    advice = source.diagnosis["advisor"]
    counts = sorted({*(_workers(a) for a in fixed), *_counts(advice)})
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    ax.plot(counts, [predict(advice, {PRIMARY_KEY: w})["step_ms"] for w in counts], "--", color="#7f7f7f",
            label=f"predicted from {source.name}")
    points = sorted(fixed, key=_workers)
    ax.plot([_workers(a) for a in points], [a.summary["steady_step_ms"] for a in points], "o",
            color="#1f77b4", label="measured steady step")
    for arm in points:
        ax.annotate(arm.name, (_workers(arm), arm.summary["steady_step_ms"]), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    for arm in arms:
        if arm.summary.get("autotune"):
            ax.axhline(arm.summary["steady_step_ms"], color="#2ca02c", linewidth=1,
                       label=f"{arm.name} (AutoTune)")
    ax.set_xlabel("map num_parallel_workers (effective)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("steady step (ms)")
    ax.set_ylim(bottom=0)
    share = ax.twinx()
    share.plot([_workers(a) for a in points], [100 * a.summary["gap_share"] for a in points], "s:",
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
