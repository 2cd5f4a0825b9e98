"""The study's scorecard (scorecard.json): each claim of the study's claims file judged on its
measured values (perfstudy.decide.claims) over the repeats, and each claim's line across the
study's recorded runs; made and written once, before the report is drawn, read back by
read_scorecard only.

`ClaimResult` is made by `score` (each claim judged over the repeats), its `history` by
`with_history`; `Scorecard` is written by `write` and read back by `read_scorecard`.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from perfstudy.common.records import doc, read_record, write_record
from perfstudy.common.thresholds import fmt, pct
from perfstudy.decide import remedy_proof
from perfstudy.decide.arms import Arm
from perfstudy.decide.claims import METRICS, Claim, ClaimsFile, Unmeasured, allowed_speedup, floor_name
from perfstudy.decide.paired import Paired, pool
from perfstudy.measure.intervals import median_interval

FILE = "scorecard.json"
RESULTS = ("holds", "does not hold", "inconclusive", "not scored")


@dataclass(frozen=True)
class RunPoint:
    """A claim in one recorded run: its verdict, and its value with its interval (numeric)."""

    result: str = doc("holds | does not hold | inconclusive")
    value: float | None = doc("its value (the median over that run's repeats)", default=None)
    low: float | None = doc("its interval's low end (None: not recorded)", default=None)
    high: float | None = doc("its interval's high end (None: not recorded)", default=None)


@dataclass(frozen=True)
class ClaimHistory:
    """A claim's line across the study's recorded runs on this machine kind."""

    runs: int = doc("recorded runs, this one included")
    held: int = doc("runs in which it held")
    text: str = doc("the line as the report and MLflow show it")
    fragile: bool = doc("its verdict changed, or its margin to the bound is inside the spread")
    why: str | None = doc("why it is fragile", default=None)
    values: list[float] | None = doc("its value in each run (numeric claims)", default=None)
    spread: float | None = doc("max - min across the runs (or its interval's width)", default=None)
    margin: float | None = doc("distance of this run's value to the nearest bound", default=None)
    points: list[RunPoint] | None = doc("each recorded run's point, oldest first, this one last "
                                        "(the claim-history figure draws them)", default=None)


@dataclass(frozen=True)
class ClaimResult:
    """One claim, checked against the measured arms."""

    id: str = doc("the claim's id (the claims file's)")
    claim: str = doc("the claim in words")
    source: str = doc("article | study")
    metric: str = doc("the measured quantity (perfstudy.decide.claims.METRICS)")
    arm: str = doc("the arm measured")
    against: str | None = doc("the arm compared with (speedups)")
    check: str = doc("the bound, as text ('>= 1.05x')")
    published: Any = doc("the paper's value")
    published_text: str = doc("the paper's value, formatted")
    note: str = doc("the claims file's note")
    measured: Any = doc("the value (the median over repeats); None: not scored")
    measured_text: str = doc("the value as the report shows it (with its interval or range)")
    detail: str | None = doc("how it was measured, or why it could not be")
    passed: bool | None = doc("holds: True; does not hold: False; inconclusive or not scored: None")
    result: str = doc("holds | does not hold | inconclusive | not scored")
    repeats: int = doc("the repeats it was measured on")
    values: list[Any] | None = doc("its value on each repeat (repeats > 1)", default=None)
    interval: list[float] | None = doc("low, high over the repeats (numeric claims)", default=None)
    interval_kind: str | None = doc("what the interval is: 'range' (min-max, below 6 repeats) "
                                    "or 'order-statistic' with its exact coverage",
                                    default=None)
    history: ClaimHistory | None = doc("its line across the recorded runs", default=None)
    at_least: float | None = doc("the bound's low end (numeric claims; None: none)", default=None)
    at_most: float | None = doc("the bound's high end (numeric claims; None: none)", default=None)


@dataclass(frozen=True)
class HistorySource:
    """Where a scorecard's history comes from (scorecard.json's `history`)."""

    runs: int = doc("recorded runs on this machine kind, this one included")
    machine: str = doc("this run's machine kind")
    other_machines: int = doc("recorded runs on other machine kinds (not counted)")
    error: str | None = doc("why the store could not be read (None: it was)")


@dataclass(frozen=True)
class PastClaim:
    """A claim as an earlier recorded run logged it."""

    result: str | None = None  # holds | does not hold | inconclusive (None: not logged)
    value: float | None = None  # its median
    low: float | None = None  # its interval, where logged
    high: float | None = None


@dataclass(frozen=True)
class PastRun:
    """An earlier recorded run of the study: when, on what machine kind, its claims."""

    stamp: int
    machine: str
    claims: dict[str, PastClaim]


@dataclass(frozen=True)
class History:
    """The study's earlier recorded runs, as perfstudy.present.history.read found them."""

    records: list[PastRun]
    machine: str  # this run's machine kind
    error: str | None = None  # why the store could not be read


@dataclass(frozen=True)
class Scorecard:
    """The study's claims, scored (scorecard.json): shown first in the report."""

    # 2: interval_kind "range" below 6 repeats, else "order-statistic <coverage>"; 3: each claim's
    # bounds and its history's points
    SCHEMA_VERSION = 3
    KIND = "scorecard (scorecard.json)"
    RERUN = "make the report again with this code (snakemake --cores all --forcerun report)"

    title: str = doc("the claims file's title")
    reference: str = doc("what the claims come from")
    claims: list[ClaimResult] = doc("each claim's result, in the file's order")
    scored: int = doc("claims that hold or do not hold")
    held: int = doc("claims that hold")
    inconclusive: int = doc("claims the repeats cannot decide")
    not_scored: int = doc("claims this study cannot measure")
    repeats: int = doc("repeats of the study")
    headline: str = doc("the report's first sentence")
    history: HistorySource | None = doc("where the history comes from: runs, machine kind, "
                                        "other machines, error", default=None)
    fragile: list[str] = doc("ids of the fragile claims", default_factory=list)


def read_scorecard(folder: str | Path) -> Scorecard:
    """Read `folder`/scorecard.json (refused, in one sentence, if another schema version)."""
    return read_record(Path(folder) / FILE, Scorecard)


def write_scorecard(folder: str | Path, card: Scorecard) -> Path:
    """Write `folder`/scorecard.json."""
    return write_record(Path(folder) / FILE, card)





def repeat_sets(runs: list[Arm]) -> list[list[Arm]]:
    """The study's runs grouped by repeat (repeat 1 first), each run named as its arm, so a
    claim about `baseline` reads `baseline.r2` in the second set."""
    sets: dict[int, list] = {}
    for run in runs:
        named = copy.copy(run)
        named.name = run.summary.arm
        sets.setdefault(int(run.summary.repeat or 1), []).append(named)
    return [sets[r] for r in sorted(sets)]


def interval(values: list[float]) -> tuple[float, float, str]:
    """(low, high, how) of the median of repeats: the exact order-statistic interval
    (perfstudy.measure.intervals.median_interval: 95 % or more, from 6 repeats), below that the
    range, labelled "range" (a bootstrap of 2-5 values can only return the values themselves:
    calling their min-max a 95 % interval would be false)."""
    found = median_interval(values)
    how = "range" if found.level is None else f"order-statistic {pct(found.level, 1)}"
    return found.low, found.high, how


@dataclass(frozen=True)
class Judgement:
    """A claim's verdict on its measured values (the ClaimResult's measured fields)."""

    measured: Any
    measured_text: str
    passed: bool | None
    result: str
    repeats: int
    values: list[Any] | None = None
    interval: list[float] | None = None
    interval_kind: str | None = None


def judge(claim: Claim, values: list[Any], kind: str) -> Judgement:
    """A claim's verdict over its repeats: holds (on every value, or the whole interval),
    does not hold (on none), inconclusive (the interval straddles the bound, or the repeats
    disagree), with the median (numbers) and the interval."""
    n = len(values)
    if n == 1 and isinstance(values[0], Paired):
        return _judge_paired(claim, values[0], kind)
    if _poolable(values, kind):
        # what each repeat measured in its own rounds: one estimate over all their rounds
        return replace(_judge_paired(claim, pool(values), kind), repeats=n,
                       values=[v.value for v in values])
    values = [float(v) if isinstance(v, Paired) else v for v in values]
    if n == 1:
        passed = claim.passes(values[0])
        return Judgement(measured=values[0], measured_text=fmt(values[0], kind), passed=passed,
                         result="holds" if passed else "does not hold", repeats=1)
    if kind == "text":
        held = sum(claim.passes(v) for v in values)
        common = max(set(values), key=values.count)
        out = Judgement(measured=common, measured_text=f"{fmt(common, kind)} (held in {held} of {n} repeats)",
                        passed=None, result="inconclusive", repeats=n, values=values)
    else:
        low, high, how = interval([float(v) for v in values])
        median = float(np.median(values))
        held = sum(claim.passes(v) for v in (low, high))
        held = n if held == 2 else 0 if held == 0 else None
        out = Judgement(measured=median, passed=None, result="inconclusive", repeats=n, values=values,
                        interval=[low, high], interval_kind=how,
                        measured_text=f"{fmt(median, kind)} ({fmt(low, kind)}-{fmt(high, kind)}, {how} of {n})")
    if held == n:
        return replace(out, passed=True, result="holds")
    if held == 0:
        return replace(out, passed=False, result="does not hold")
    return out


def _poolable(values: list[Any], kind: str) -> bool:
    """Every repeat's value measured in its own rounds, of one basis, positive and on a log
    scale: ratios paired by round ("times"), or one arm's quantity over rounds ("rounds");
    a signed error (percent, "paired") is not."""
    bases = {v.basis if isinstance(v, Paired) else None for v in values}
    return bases == {"rounds"} or (bases == {"paired"} and kind == "times")


def _judge_paired(claim: Claim, found: Paired, kind: str) -> Judgement:
    """One run's paired ratio: holds when its whole interval meets the bound, does not hold when
    none of it does, inconclusive otherwise."""
    ends = sum(claim.passes(v) for v in (found.low, found.high))
    result = {2: "holds", 0: "does not hold"}.get(ends, "inconclusive")
    unit = {"batches": "batches", "batches+rounds": "batches and rounds"}.get(found.basis, "rounds")
    how = (f"batch means {pct(found.level)} over {found.rounds} batches of the window's steps"
           if found.basis == "batches" else
           f"{pct(found.level)} over the window's batches and the rounds' windows at its setting "
           f"({found.rounds} in all, {found.runs} sources), pooled (random effects)"
           if found.basis == "batches+rounds" else
           f"{pct(found.level)} over the windows of the arm's own setting in {found.rounds} "
           "interleaved rounds" + ("" if found.runs == 1 else f" of {found.runs} runs, pooled (random effects)")
           if found.basis == "rounds" else
           f"paired {pct(found.level)} over {found.rounds} interleaved rounds" if found.runs == 1 else
           f"paired {pct(found.level)} over {found.rounds} interleaved rounds of {found.runs} runs, "
           "pooled (random effects)")
    if found.runs > 1 and found.basis != "batches+rounds":
        unit += f" of {found.runs} runs"
    return Judgement(measured=found.value, interval=[found.low, found.high], interval_kind=how,
                     measured_text=f"{fmt(found.value, kind)} ({fmt(found.low, kind)}-{fmt(found.high, kind)}, "
                                   f"{pct(found.level)}, {found.rounds} {unit})",
                     passed={"holds": True, "does not hold": False}.get(result), result=result, repeats=1)


def score(spec: ClaimsFile, arms: list[Arm], runs: list[Arm] | None = None) -> Scorecard:
    """Every claim checked against the arms: on each repeat when `runs` holds the repeats
    (median, interval, holds / does not hold / inconclusive), else on the arms (first repeat)."""
    sets = repeat_sets(runs) if runs else [arms]
    contexts = [({a.name: a for a in group}, remedy_proof.evidence(group)) for group in sets]
    results = [_scored(claim, contexts) for claim in spec.claims]
    scored = [r for r in results if r.passed is not None]
    return Scorecard(title=spec.title, reference=spec.reference,
                     claims=results, scored=len(scored), held=sum(r.passed for r in scored),
                     inconclusive=sum(r.result == "inconclusive" for r in results),
                     not_scored=sum(r.result == "not scored" for r in results),
                     repeats=len(sets), headline=headline(results, arms))


def _scored(claim: Claim, contexts: list) -> ClaimResult:
    """One claim measured on every repeat it can be (and judged), or not scored with the reason."""
    measure, kind = METRICS[claim.metric]
    values, details, why = [], [], None
    for by_name, prepared in contexts:
        try:
            value, detail = measure(claim, by_name, prepared)
        except Unmeasured as reason:
            why = why or str(reason)
            continue
        values.append(value)
        details.append(detail)
    judged = (judge(claim, values, kind) if values else
              Judgement(measured=None, measured_text="-", passed=None, result="not scored", repeats=0))
    return ClaimResult(id=claim.id, claim=claim.claim, source=claim.source, metric=claim.metric,
                       arm=claim.arm, against=claim.against, check=claim.check_text(kind),
                       at_least=claim.at_least, at_most=claim.at_most,
                       published=claim.published, published_text=fmt(claim.published, kind),
                       note=claim.note, detail=details[0] if values else why,
                       **dataclasses.asdict(judged))


def headline(results: list[ClaimResult], arms: list[Arm]) -> str:
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
        text += f"; inconclusive{' over the repeats' if repeats > 1 else ''}: {', '.join(unsure)}"
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
                 f"{arm.name} arm's {floor_name(arm.summary.binding_floor)} floor)")
    return text + "."



def make(spec: ClaimsFile | None, arms: list[Arm], runs: list[Arm] | None = None,
         history: History | None = None) -> Scorecard:
    """The study's scorecard, decided before any report is drawn.

    Args:
        spec: the claims file (perfstudy.decide.claims.load); None: nothing is scored, and the card says so.
        arms: the study's arms (first repeat); runs: every repeat (None: the arms only).
        history: the study's earlier recorded runs (perfstudy.present.history.read), or None.

    Returns:
        The Scorecard: headline, title, each claim's result, and its history.
    """
    card = score(spec or ClaimsFile(claims=[]), arms, runs)
    if history is not None and card.claims:
        card = with_history(card, spec, history, history.machine)
    return card


def write(out_dir: str | Path, card: Scorecard) -> Path:
    """scorecard.json in the report folder (the output contract's path)."""
    return write_scorecard(out_dir, card)


def with_history(card: Scorecard, spec: ClaimsFile, history: History, machine: str) -> Scorecard:
    """Each claim's line across the study's recorded runs (perfstudy.present.history.read):
    how often it held on this machine kind, this run included, and whether it is fragile: its
    verdict changed across the runs, or its margin to the bound is inside the spread of its
    values across them (a single run can be marked so, from the store's earlier runs)."""
    mine = [r for r in history.records if r.machine == machine]
    others = len(history.records) - len(mine)
    by_id = {c.id: c for c in spec.claims}
    claims = [entry if entry.result == "not scored" else
              replace(entry, history=_line(entry, by_id[entry.id], mine, others))
              for entry in card.claims]
    fragile = [c.id for c in claims if c.history is not None and c.history.fragile]
    text = card.headline
    if fragile:
        text += (f" Fragile across the {len(mine) + 1} recorded runs on this machine "
                 f"kind: {', '.join(fragile)}.")
    return replace(card, claims=claims, fragile=fragile, headline=text,
                   history=HistorySource(runs=len(mine) + 1, machine=machine, other_machines=others,
                                         error=history.error))


def _line(entry: ClaimResult, claim: Claim, mine: list[PastRun], others: int) -> ClaimHistory:
    """One claim's line across the recorded runs of this machine kind (and this one)."""
    past = [r.claims[entry.id] for r in mine if entry.id in r.claims and r.claims[entry.id].result]
    results = [p.result for p in past] + [entry.result]
    held, runs = results.count("holds"), len(results)
    text = (f"held in {held} of {runs} runs on this machine kind" if runs > 1
            else "the first recorded run on this machine kind")
    if others:
        text += f" ({others} run(s) on other machine kinds not counted)"
    numeric = isinstance(entry.measured, (int, float)) and not isinstance(entry.measured, bool)
    values = spread = margin = why = None
    if runs > 1 and len(set(results)) > 1:
        why = f"its verdict changed across the runs ({', '.join(results)})"
    elif numeric:
        values = [p.value for p in past if p.value is not None] + [float(entry.measured)]
        low, high = entry.interval or (entry.measured, entry.measured)
        spread = max(max(values) - min(values), high - low)
        margin = claim.margin(float(entry.measured))
        if len(values) > 1 and margin < spread:
            kind = METRICS[entry.metric][1]
            why = (f"its margin to the bound ({_delta(margin, kind)}) is inside the spread "
                   f"across the runs ({_delta(spread, kind)})")
    if why:
        text += f"; fragile: {why}"
    low, high = entry.interval or ((entry.measured, entry.measured) if numeric else (None, None))
    points = [RunPoint(result=p.result, value=p.value, low=p.low, high=p.high) for p in past]
    points.append(RunPoint(result=entry.result, value=float(entry.measured) if numeric else None,
                           low=None if low is None else float(low),
                           high=None if high is None else float(high)))
    return ClaimHistory(runs=runs, held=held, text=text, fragile=why is not None, why=why,
                        values=values, spread=spread, margin=margin, points=points)


def _delta(value: float, kind: str) -> str:
    return f"{100 * value:.1f} points" if kind == "percent" else f"{value:.2f}" + ("x" if kind == "times" else "")
