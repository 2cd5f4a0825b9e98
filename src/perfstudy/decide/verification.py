"""The model proposes, a measurement decides.

plan: which settings the training measures after its window (perfstudy.run.verify): the
model's pick, the slow operator in each mode it can run in (threads, processes: where the
model errs most), then the fastest predicted others, `k` in all; the run's own setting is
measured by the run's own window (or, with verify.own_window, by a short window too).
The model prunes: on a machine with many cores and several sized operators the settings grow
as CPUs^operators (x2 for each Python map), and the windows stay k + 1.

verdict: what the windows say. Each window's mean step has a standard error (its steps'
spread / sqrt(n)); two windows differ beyond noise when their ratio exceeds
    bar = max(10 %, 2 x sqrt(rse_a^2 + rse_b^2))
(two standard errors of the difference, and never below 10 %: the gain the diagnosis benchmark
counts as a setting that matters; a smaller one is within what one short window on a shared
host moves). A change is recommended only when a measured candidate beats the run's own
setting (its measured window, the run's longest) by more than the bar; among those within the
bar of the fastest, the cheapest (fewest changes, workers, processes).
When a candidate measured faster by more than 10 % but not beyond the noise, the windows
cannot tell ("unresolved": the setting is kept and the answer says how to decide it, longer
windows); otherwise the answer is "no setting helps (measured)". With verify.own_window, a
short window at the run's own setting is checked against the run's own measured window: when
they differ beyond the bar, the short windows had not reached the steady state (measured on 2
cores: a Python map's steps still moved by +-50 % over their first four) and decide nothing.
Every verified setting's predicted step is set against its measured one (the model's error,
by the kind of the operator).
"""

from __future__ import annotations

import math
from typing import Any

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, pct
from perfstudy.decide.advisor import canonical, cost, describe_settings, predict
from perfstudy.run.settings import MP, Settings
from perfstudy.run.summary import RunSummary


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return canonical(a) == canonical(b)


def _culprit_modes(advice: dict[str, Any], now: Settings) -> list[dict[str, Any]]:
    """The slow operator (the model's slowest at the run's setting) in each mode it can run in,
    the rest as now: where the model errs most (threads against processes of a Python map).
    Per mode its fastest predicted worker count; where the model sees no difference between
    counts, the most workers (the mode's strongest test)."""
    stage = next((s for s in advice["stages"] if s["label"] == advice.get("now_slowest_stage")), None)
    if stage is None:
        return []
    key = stage["key"]
    modes: dict[bool, tuple] = {}
    for row in advice["predictions"]:
        settings = canonical(row["settings"])
        others = {k: v for k, v in settings.items() if k != key and k != key + MP}
        rest = {k: v for k, v in now.items() if k != key and k != key + MP}
        if others != rest or _same(settings, now):
            continue
        mode = bool(settings.get(key + MP))
        rank = (row["step_ms"], -settings.get(key, 1))
        if mode not in modes or rank < modes[mode][0]:
            modes[mode] = (rank, settings)
    return [settings for _, settings in sorted(modes.values(), key=lambda m: m[0])]


def plan(advice: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """The windows to measure: the run's own setting first, then up to k candidates: the
    model's pick, the slow operator in each mode (threads, processes), the fastest others."""
    now = canonical(advice["now"])
    rows = sorted(advice["predictions"], key=lambda r: r["step_ms"])
    chosen: list[dict[str, Any]] = []
    pick = canonical(advice["pick"])
    ordered = ([pick] if not _same(pick, now) else []) + _culprit_modes(advice, now) \
        + [canonical(r["settings"]) for r in rows]
    for settings in ordered:
        if len(chosen) >= k:
            break
        if not _same(settings, now) and not any(_same(settings, c) for c in chosen):
            chosen.append(settings)
    out = []
    for rank, settings in enumerate([now, *chosen]):
        row = predict(advice, settings)
        out.append({"role": "current" if rank == 0 else "candidate", "rank": rank,
                    "settings": settings, "label": describe_settings(settings, advice),
                    "predicted_ms": row["step_ms"], "predicted_binding": row["binding"],
                    "is_model_pick": _same(settings, pick)})
    return out


def _noise(a: dict[str, Any], b: dict[str, Any]) -> float:
    return 2 * math.sqrt(a["rse"] ** 2 + b["rse"] ** 2)


def bar(a: dict[str, Any], b: dict[str, Any]) -> float:
    """The share by which two windows must differ to count as different."""
    return max(GAIN_THAT_MATTERS, _noise(a, b))


def reference(summary: RunSummary) -> dict[str, Any] | None:
    """The run's own measured window as a window: its mean step and standard error (from the
    p10..p90 spread of its steps: 2.56 standard deviations of a normal spread)."""
    spread, n = summary.step_ms, summary.steps_measured
    if not summary.steady_step_ms or n < 2:
        return None
    sd = (spread.p90 - spread.p10) / 2.56
    return {"step_ms": summary.steady_step_ms, "rse": sd / math.sqrt(n) / summary.steady_step_ms}


def verdict(verification: dict[str, Any] | None,
            own: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """What the windows decide, or None when they cannot (no windows, the run's own setting
    or every candidate unmeasured or not steady). `own`: the run's measured window
    (reference()); when a short window at the same setting (verify.own_window) differs from it
    beyond the bar, the short windows did not reach the steady state and decide nothing
    ("unrepresentative"). Without one, the run's own setting is its measured window."""
    windows = [w for w in (verification or {}).get("windows", [])
               if w.get("steady") and w.get("step_ms") and math.isfinite(w.get("rse", math.inf))]
    now = next((w for w in windows if w["role"] == "current"), None)
    others = [w for w in windows if w is not now]
    if now is None or not others:
        return None
    drift = None if own is None or now.get("main_window") else now["step_ms"] / own["step_ms"] - 1
    if drift is not None and abs(drift) > bar(now, own):
        return {"now": now, "chosen": now, "best": min(windows, key=lambda w: w["step_ms"]),
                "helps": False, "unresolved": True, "unrepresentative": drift, "own": own,
                "bar": bar(now, own), "measured": len(windows), "rows": accuracy_rows(verification)}
    helps = [w for w in others if now["step_ms"] / w["step_ms"] - 1 > bar(now, w)]
    chosen = now
    if helps:
        fastest = min(helps, key=lambda w: w["step_ms"])
        near = [w for w in helps if w["step_ms"] / fastest["step_ms"] - 1 <= bar(w, fastest)]
        chosen = min(near, key=lambda w: cost(canonical(w["settings"]), canonical(now["settings"])))
    best = min(windows, key=lambda w: w["step_ms"])
    # faster by what matters, but not beyond the windows' noise: the windows cannot tell
    unresolved = not helps and best is not now and now["step_ms"] / best["step_ms"] - 1 > GAIN_THAT_MATTERS
    return {"now": now, "chosen": chosen, "best": best, "helps": bool(helps), "unresolved": unresolved,
            "unrepresentative": None,
            "bar": bar(now, chosen if chosen is not now else best),
            "measured": len(windows), "rows": accuracy_rows(verification)}


def accuracy_rows(verification: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Predicted against measured step of every measured, steady window."""
    rows = []
    for w in (verification or {}).get("windows", []):
        if w.get("steady") and w.get("step_ms"):
            rows.append({"label": w["label"], "role": w["role"], "settings": w["settings"],
                         "predicted_ms": w["predicted_ms"], "measured_ms": w["step_ms"],
                         "error": (w["predicted_ms"] - w["step_ms"]) / w["step_ms"],
                         "rse": w["rse"], "steps": w["steps_measured"],
                         "main_window": bool(w.get("main_window"))})
    return rows


def cost_sentence(verification: dict[str, Any] | None) -> str | None:
    """What the verification cost, in words (None without one)."""
    if not verification or "wall_s" not in verification:
        return None
    measured = sum(1 for w in verification["windows"] if "step_ms" in w and not w.get("main_window"))
    skipped = sum(1 for w in verification["windows"] if "skipped" in w)
    text = (f"Verification: {measured} window(s) of {sum(w.get('steps', 0) for w in verification['windows'])} "
            f"steps in {verification['wall_s']:.0f} s, {pct(verification['share_of_training'])} of "
            f"the training's {verification['training_wall_s']:.0f} s (budget "
            f"{pct(verification['budget_share'])})"
            + ("; the current setting is the run's own measured window"
               if any(w.get("main_window") for w in verification["windows"]) else ""))
    return text + (f"; {skipped} skipped past the budget." if skipped else ".")


def operator_kind(advice: dict[str, Any], settings: Settings) -> str:
    """The kind of the operator a verified setting is about (the one it changes; the run's
    own setting: the slowest at it), as the model's measurements classify it:
    C++ map | waiting | Python computing | Python releasing the GIL | Python mixed, each
    'per-batch' when the map follows batch(), and 'threads' or 'processes' as set."""
    now = canonical(advice["now"])
    changed = [s for s in advice["stages"]
               if settings.get(s["key"]) != now.get(s["key"])
               or bool(settings.get(s["key"] + MP)) != bool(now.get(s["key"] + MP))]
    stage = changed[0] if changed else next(
        (s for s in advice["stages"] if s["label"] == advice.get("now_slowest_stage")), advice["stages"][0])
    busy = stage.get("busy_per_worker", 1.0)
    if stage["kind"] != "probed":
        kind = "waiting" if stage["kind"] == "waits" else "C++ map"
    elif busy < 0.3:
        kind = "Python waiting"
    elif busy < 0.7:
        kind = "Python mixed"
    else:
        threads = {p["workers"]: p["wall_ms_per_batch"] for p in stage["points"] if not p["multiprocessing"]}
        scales = len(threads) > 1 and threads[min(threads)] / threads[max(threads)] >= 1.3
        kind = "Python releasing the GIL" if scales else "Python computing"
    if stage["key"] == "pipeline.batch_transform_workers":
        kind += ", per-batch"
    if stage["kind"] == "probed":
        kind += ", processes" if settings.get(stage["key"] + MP) else ", threads"
    return kind
