"""The claims scorecard: a paper's claims (and the study's own) as checks on the measured arms.

A study's claims live in a YAML file (`workflow/claims/<study>.yaml`, or the study's `claims:`
key), so another paper's claims are scored the same way. Each claim names one measurable
quantity of one arm and a bound:

    - id: tuned_faster
      claim: The tuned arm is faster than the baseline.
      source: article            # or: study (a claim of this project, not of the paper)
      metric: speedup            # see METRICS
      arm: tuned
      against: baseline          # speedup, speedup_of_allowed: the arm compared with
      at_least: 1.05             # and/or at_most; or equals (culprit_key, culprit_against_analyzer)
      published: 4.98            # the paper's own value, shown beside the measured one

A claim whose arm did not run, or whose quantity this run cannot measure (no diagnosis, no
arm at the advisor's pick), is `not scored` with the reason, never passed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from perfstudy.common.records import from_dict
from perfstudy.common.thresholds import pct
from perfstudy.decide import pick, remedy
from perfstudy.decide.advisor import predict
from perfstudy.decide.claim_result import ClaimResult, Scorecard
from perfstudy.decide.diagnosis import verdict_label
from perfstudy.decide.paired import Paired, absolute, paired_pick, paired_speedup, prediction_error
from perfstudy.decide.remedy_record import Remedies, RemedyEvidence
from perfstudy.measure.intervals import batch_means, median_interval

BOUNDS = ("at_least", "at_most", "equals")


class Unmeasured(Exception):
    """This run cannot measure the claim's quantity; the message says why."""


def _floor_name(text: str) -> str:
    return text.replace("cpu", "CPU")


def _arm(arms: dict, name: str | None, role: str = "arm"):
    if name not in arms:
        raise Unmeasured(f"the {role} {name!r} did not run in this study")
    return arms[name]


def _window(arm) -> pd.DataFrame | None:
    """The arm's measured steps (the window the summary's numbers come from), or None."""
    steps = getattr(arm, "steps", None)
    if not isinstance(steps, pd.DataFrame) or steps.empty or "phase" not in steps:
        return None
    return steps[steps["phase"] == "measured"]


def _gap_share(claim, arms, _prepared):
    """The share of the window spent waiting for data, with its batch-means interval: one
    window's steps are not independent (a wait lets the queue fill, the next steps do not
    wait), so the interval comes from batches of steps, and a share near the bound reads
    inconclusive rather than holding on one run and failing on the next."""
    arm = _arm(arms, claim["arm"])
    s = arm.summary
    detail = f"gap {s.gap_ms.mean:.0f} ms of a {s.steady_step_ms:.0f} ms step"
    if arm.diagnosis:  # why it waits (or not): the arm's own verdict
        detail += f"; diagnosed {_floor_name(verdict_label(arm.diagnosis.bound))}"
    window = _window(arm)
    found = batch_means(window["gap_ms"], window["step_ms"]) if window is not None else None
    if found is None:
        return s.gap_share, detail
    low, high = min(found.low, s.gap_share), max(found.high, s.gap_share)
    return Paired(s.gap_share, max(0.0, low), min(1.0, high), found.batches, found.level,
                  basis="batches"), detail + f" ({found.batches} batches of the window)"


def _culprit_key(claim, arms, _prepared):
    arm = _arm(arms, claim["arm"])
    if not arm.diagnosis:
        raise Unmeasured(f"{arm.name} has no diagnosis (run the analyze rule)")
    culprit = arm.diagnosis.culprit
    return ((culprit.config_key if culprit else None) or "none",
            culprit.label if culprit else "no slow operator")


def _culprit_against_analyzer(claim, arms, _prepared):
    """Who names the true culprit (`truth:`, a config key) on the arm's profile: ours only,
    both, the analyzer only, or neither (MindSpore's MindData analyzer, perfstudy.decide.peers)."""
    arm = _arm(arms, claim["arm"])
    if not arm.diagnosis:
        raise Unmeasured(f"{arm.name} has no diagnosis (run the analyze rule)")
    reading = arm.diagnosis.peers.msanalyzer if arm.diagnosis.peers else None
    if not reading:
        raise Unmeasured(f"{arm.name} has no dataset profile for MindSpore's analyzer (profiler off)")
    if reading.error:
        raise Unmeasured(reading.error)
    culprit = arm.diagnosis.culprit
    ours = culprit is not None and culprit.config_key == claim["truth"]
    theirs = reading.key == claim["truth"]
    value = {(True, False): "ours only", (True, True): "both", (False, True): "the analyzer only",
             (False, False): "neither"}[(ours, theirs)]
    return value, (f"ours: {culprit.label if culprit else 'none'}; MindSpore's analyzer: "
                   f"{reading.operator or 'none'} ({reading.advice})")


def _speedup(claim, arms, _prepared):
    arm, against = _arm(arms, claim["arm"]), _arm(arms, claim.get("against"), "compared arm")
    paired = paired_speedup(arm, against)
    if paired is not None:
        return paired
    return against.summary.steady_step_ms / arm.summary.steady_step_ms, (
        f"{arm.summary.steady_step_ms:.0f} vs {against.summary.steady_step_ms:.0f} ms per step, "
        "each arm's own window (measured minutes apart, not paired)")


def allowed_speedup(arm, against) -> float:
    """What this hardware allows: the compared arm's steady step over the arm's own floor (the
    slowest of network alone, pipeline alone and all CPU work over the cores, each measured)."""
    return against.summary.steady_step_ms / arm.summary.floor_ms


def _speedup_of_allowed(claim, arms, prepared):
    """The arm's floor over its own step (the compared arm cancels: both from the arms' own
    windows, so a paired speedup, measured another way, must not be mixed in), with the
    interval of the step's batch means carried through (the floor taken as measured)."""
    arm, against = _arm(arms, claim["arm"]), _arm(arms, claim.get("against"), "compared arm")
    speedup = against.summary.steady_step_ms / arm.summary.steady_step_ms
    allowed = allowed_speedup(arm, against)
    value = speedup / allowed
    detail = (f"{speedup:.2f}x of the {allowed:.2f}x its {_floor_name(arm.summary.binding_floor)} "
              f"floor allows ({arm.summary.floor_ms:.0f} ms)")
    window = _window(arm)
    found = batch_means(window["step_ms"]) if window is not None else None
    if found is None or found.low <= 0:
        return value, detail
    # value = floor / step: a slower step (the interval's top) gives the lower share
    low, high = value * found.value / found.high, value * found.value / found.low
    return Paired(value, min(low, value), max(high, value), found.batches, found.level,
                  basis="batches"), detail + f"; the step's {found.batches} batches"


def _prediction_error(claim, arms, _prepared):
    arm = _arm(arms, claim["arm"])
    source = (_arm(arms, claim["against"], "predicting arm") if claim.get("against")
              else pick.source_arm(list(arms.values())))
    advice = ((source.diagnosis.advisor if source.diagnosis else None) if source is not None else None)
    if not advice:
        raise Unmeasured("no arm's diagnosis has an advisor model to predict from")
    predicted = predict(advice, pick.settings(arm)).step_ms
    paired = paired_speedup(arm, source) if arm is not source else None
    if paired is not None:  # the predicted speedup against the one measured paired by round
        speedup, how = paired
        relative = predicted / source.summary.steady_step_ms
        error = prediction_error(relative, speedup.value, speedup.low, speedup.high)
        return Paired(*absolute(*error), speedup.rounds, speedup.level), (
            f"predicted from {source.name} {predicted:.0f} ms against its {source.summary.steady_step_ms:.0f} ms "
            f"({1 / relative:.2f}x), measured {speedup.value:.2f}x {how}: "
            f"{pct(error[0], 1, signed=True)}")
    measured = arm.summary.steady_step_ms
    return abs(predicted - measured) / measured, (
        f"predicted from {source.name} {predicted:.0f} ms, measured {measured:.0f} ms "
        f"({pct((predicted - measured) / measured, 1, signed=True)}; each arm's own window, "
        "not paired)")


def _advisor_pick(claim, arms, _prepared):
    check = pick.pick_check(list(arms.values()))
    if check is None:
        raise Unmeasured("no arm's diagnosis has an advisor model")
    if check.get("no_verdict"):
        raise Unmeasured(f"{check['source']} got no verdict (its window was not steady), so nothing "
                         "was recommended")
    source = arms[check["source"]]
    paired = paired_pick(source, check["recommended"], arms[check["best_arm"]])
    if paired is not None:
        return paired
    if "picked_step_ms" not in check:
        raise Unmeasured(f"no arm ran the recommended setting ({check['recommended_workers']} "
                         "workers); run study=sweep")
    return check["picked_vs_best"], (
        f"{check['source']}'s recommendation is {check['recommended_workers']} worker(s): "
        f"{check['picked_step_ms']:.0f} ms against the best measured, {check['best_arm']} "
        f"{check['best_step_ms']:.0f} ms")


def _prepared_row(claim, prepared: Remedies) -> RemedyEvidence:
    found = prepared.of(claim["arm"])
    if found is None or found.source is None:
        raise Unmeasured(f"no prepared arm {claim['arm']!r} with its source arm ran in this study")
    return found


def _prepared_speedup(claim, arms, prepared: Remedies):
    arm = _arm(arms, claim["arm"])
    found = prepared.of(arm.name)
    c = found.paired if found is not None else None
    if c is not None:  # the prepared arm measured its source beside itself (read once, in the record)
        return Paired(c.speedup, c.low, c.high, c.rounds, c.level), (
            f"the source's step over the prepared one, paired by round in {arm.name}'s run "
            f"({c.rounds} interleaved rounds at its own settings)")
    row = _prepared_row(claim, prepared)
    return row.source.speedup, (f"{row.steady_step_ms:.0f} vs {row.source.step_ms:.0f} ms per "
                                f"step ({row.source.arm} on the source; each arm's own window, "
                                "not paired)")


def _prepared_prediction_error(claim, arms, prepared: Remedies):
    _arm(arms, claim["arm"])  # "did not run" first, where it did not
    row = _prepared_row(claim, prepared)
    src, p = row.source, row.paired
    if src.predicted_step_ms is None:
        raise Unmeasured(f"{src.arm}'s diagnosis made no prediction for the prepared source")
    if p is not None and p.error is not None:
        value, low, high = absolute(p.error, p.error_low, p.error_high)
        return Paired(value, low, high, p.rounds, p.level), (
            f"predicted {src.predicted_step_ms:.0f} ms against {src.arm}'s {src.step_ms:.0f} ms "
            f"({src.step_ms / src.predicted_step_ms:.2f}x), measured {p.speedup:.2f}x paired by "
            f"round in {row.arm}'s run ({p.rounds} rounds): {pct(p.error, 1, signed=True)}")
    return abs(src.prediction_error), (
        f"predicted {src.predicted_step_ms:.0f} ms, measured {row.steady_step_ms:.0f} ms "
        f"({pct(src.prediction_error, 1, signed=True)}; each arm's own window, not paired)")


# metric -> (measure(claim, arms by name, the remedy records) -> (value, detail), how to show it)
METRICS: dict[str, tuple[Callable, str]] = {
    "gap_share": (_gap_share, "percent"),
    "culprit_key": (_culprit_key, "text"),
    "culprit_against_analyzer": (_culprit_against_analyzer, "text"),
    "speedup": (_speedup, "times"),
    "speedup_of_allowed": (_speedup_of_allowed, "percent"),
    "prediction_error": (_prediction_error, "percent"),
    "advisor_pick_vs_best": (_advisor_pick, "percent"),
    "prepared_speedup": (_prepared_speedup, "times"),
    "prepared_prediction_error": (_prepared_prediction_error, "percent"),
}


def fmt(value: Any, kind: str) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if kind == "percent":
        return f"{pct(value, 1)}"
    if kind == "times":
        return f"{value:.2f}x"
    return str(value)


def _check_text(claim: dict[str, Any], kind: str) -> str:
    parts = []
    if "at_least" in claim:
        parts.append(f">= {fmt(claim['at_least'], kind)}")
    if "at_most" in claim:
        parts.append(f"<= {fmt(claim['at_most'], kind)}")
    if "equals" in claim:
        parts.append(f"= {claim['equals']}")
    return " and ".join(parts)


def repeat_sets(runs: list) -> list[list]:
    """The study's runs grouped by repeat (repeat 1 first), each run named as its arm, so a
    claim about `baseline` reads `baseline.r2` in the second set."""
    sets: dict[int, list] = {}
    for run in runs:
        named = copy.copy(run)
        named.name = run.summary.arm
        sets.setdefault(int(run.summary.repeat or 1), []).append(named)
    return [sets[r] for r in sorted(sets)]


def _passes(claim: dict[str, Any], value: Any) -> bool:
    return bool(("at_least" not in claim or value >= claim["at_least"])
                and ("at_most" not in claim or value <= claim["at_most"])
                and ("equals" not in claim or value == claim["equals"]))


def interval(values: list[float]) -> tuple[float, float, str]:
    """(low, high, how) of the median of repeats: the exact order-statistic interval
    (perfstudy.measure.intervals.median_interval: 95 % or more, from 6 repeats), below that the
    range, labelled "range" (a bootstrap of 2-5 values can only return the values themselves:
    calling their min-max a 95 % interval would be false)."""
    found = median_interval(values)
    how = "range" if found.level is None else f"order-statistic {pct(found.level, 1)}"
    return found.low, found.high, how


def judge(claim: dict[str, Any], values: list[Any], kind: str) -> dict[str, Any]:
    """A claim's verdict over its repeats: holds (on every value, or the whole interval),
    does not hold (on none), inconclusive (the interval straddles the bound, or the repeats
    disagree), with the median (numbers) and the interval."""
    n = len(values)
    if n == 1 and isinstance(values[0], Paired):
        return _judge_paired(claim, values[0], kind)
    values = [float(v) if isinstance(v, Paired) else v for v in values]
    if n == 1:
        passed = _passes(claim, values[0])
        return {"measured": values[0], "measured_text": fmt(values[0], kind), "passed": passed,
                "result": "holds" if passed else "does not hold", "repeats": 1}
    out = {"values": values, "repeats": n}
    if kind == "text":
        held = sum(_passes(claim, v) for v in values)
        common = max(set(values), key=values.count)
        out.update(measured=common, measured_text=f"{fmt(common, kind)} (held in {held} of {n} repeats)")
    else:
        low, high, how = interval([float(v) for v in values])
        median = float(np.median(values))
        held = sum(_passes(claim, v) for v in (low, high))
        held = n if held == 2 else 0 if held == 0 else None
        out.update(measured=median, interval=[low, high], interval_kind=how,
                   measured_text=f"{fmt(median, kind)} ({fmt(low, kind)}-{fmt(high, kind)}, {how} of {n})")
    if held == n:
        return {**out, "passed": True, "result": "holds"}
    if held == 0:
        return {**out, "passed": False, "result": "does not hold"}
    return {**out, "passed": None, "result": "inconclusive"}


def _judge_paired(claim: dict[str, Any], found: Paired, kind: str) -> dict[str, Any]:
    """One run's paired ratio: holds when its whole interval meets the bound, does not hold when
    none of it does, inconclusive otherwise."""
    ends = sum(_passes(claim, v) for v in (found.low, found.high))
    result = {2: "holds", 0: "does not hold"}.get(ends, "inconclusive")
    unit = "rounds" if found.basis == "paired" else "batches"
    how = (f"paired {pct(found.level)} over {found.rounds} interleaved rounds" if found.basis == "paired"
           else f"batch means {pct(found.level)} over {found.rounds} batches of the window's steps")
    return {"measured": found.value, "interval": [found.low, found.high], "interval_kind": how,
            "measured_text": f"{fmt(found.value, kind)} ({fmt(found.low, kind)}-{fmt(found.high, kind)}, "
                             f"{pct(found.level)}, {found.rounds} {unit})",
            "passed": {"holds": True, "does not hold": False}.get(result), "result": result,
            "repeats": 1}


def score(spec: dict[str, Any], arms: list, runs: list | None = None) -> Scorecard:
    """Every claim checked against the arms: on each repeat when `runs` holds the repeats
    (median, interval, holds / does not hold / inconclusive), else on the arms (first repeat)."""
    sets = repeat_sets(runs) if runs else [arms]
    contexts = [({a.name: a for a in group}, remedy.evidence(group)) for group in sets]
    results = []
    for claim in spec["claims"]:
        measure, kind = METRICS[claim["metric"]]
        entry = {"id": claim["id"], "claim": claim["claim"], "source": claim.get("source", "study"),
                 "metric": claim["metric"], "arm": claim["arm"], "against": claim.get("against"),
                 "check": _check_text(claim, kind), "published": claim.get("published"),
                 "published_text": fmt(claim.get("published"), kind),
                 "note": claim.get("note", "")}
        values, details, why = [], [], None
        for by_name, prepared in contexts:
            try:
                value, detail = measure(claim, by_name, prepared)
            except Unmeasured as reason:
                why = why or str(reason)
                continue
            values.append(value)
            details.append(detail)
        if not values:
            entry.update(measured=None, measured_text="-", detail=why, passed=None,
                         result="not scored", repeats=0)
        else:
            entry.update(judge(claim, values, kind), detail=details[0])
        results.append(from_dict(ClaimResult, entry, f"claim {claim['id']!r}"))
    scored = [r for r in results if r.passed is not None]
    return Scorecard(title=spec.get("title", ""), reference=spec.get("reference", ""),
                     claims=results, scored=len(scored), held=sum(r.passed for r in scored),
                     inconclusive=sum(r.result == "inconclusive" for r in results),
                     not_scored=sum(r.result == "not scored" for r in results),
                     repeats=len(sets), headline=headline(results, arms))


def headline(results: list[ClaimResult], arms: list) -> str:
    """One sentence: how many claims hold, which do not, and the speedup in context."""
    scored = [r for r in results if r.passed is not None]
    if not results:
        return "This study has no claims file: nothing is scored."
    held = sum(r.passed for r in scored)
    judged = len(scored) + sum(r.result == "inconclusive" for r in results)
    text = (f"All {held} claims hold" if held == judged > 1 else
            f"{held} of {judged} claims hold") + " on this machine"
    repeats = max((r.repeats or 0 for r in results), default=0)
    if repeats > 1:
        text += f" over {repeats} repeats"
    env = (arms[0].summary.environment or {}) if arms else {}
    if env:
        text += f" ({env.get('usable_cpus') or env.get('cpu_count')} CPUs, {arms[0].summary.size} size)"
    missed = [f"{r.id} ({r.measured_text}, {r.check})" for r in scored if not r.passed]
    if missed:
        text += f"; {'these do' if len(missed) > 1 else 'this does'} not: {', '.join(missed)}"
    unsure = [f"{r.id} ({r.measured_text}, {r.check})" for r in results if r.result == "inconclusive"]
    if unsure:
        text += f"; inconclusive over the repeats: {', '.join(unsure)}"
    unscored = sum(r.result == "not scored" for r in results)
    if unscored:
        text += f"; {unscored} not scored"
    by_name = {a.name: a for a in arms}
    speed = next((r for r in results if r.metric == "speedup" and r.passed is not None), None)
    if speed and speed.against in by_name:
        arm, against = by_name[speed.arm], by_name[speed.against]
        paired = (speed.interval_kind or "").startswith("paired")
        # paired: the compared arm's step as the pairing measured it (the speedup x this arm's)
        allowed = (speed.measured * arm.summary.steady_step_ms / arm.summary.floor_ms if paired
                   else allowed_speedup(arm, against))
        text += (f". The {arm.name} arm runs {speed.measured_text if paired else f'{speed.measured:.2f}x'} "
                 f"as fast as the {against.name}" + (" (paired by round)" if paired else "")
                 + (f" (published {speed.published:.2f}x)"
                    if isinstance(speed.published, (int, float)) else "")
                 + f"; this hardware allows {allowed:.2f}x (the "
                 f"{arm.name} arm's {_floor_name(arm.summary.binding_floor)} floor)")
    return text + "."
