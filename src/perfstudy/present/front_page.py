"""README's measured section, written from a run's results, never typed.

`from_results` reads one study's results (scorecard.json, comparison.csv, each arm's
summary.json and diagnosis.json) into a FrontPage record, with the commit, date, host and
MindSpore it was measured on; `render` writes it as Markdown; `replace_block` puts it into
README.md between its two markers. The record is kept in docs/benchmarks/front-page.json, so
a test can check that README says what the record holds (scripts/front_page.py --check).
"""

from __future__ import annotations

import datetime as dt
import statistics
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perfstudy.common.records import doc, read_record, write_record
from perfstudy.common.thresholds import fmt, pct
from perfstudy.decide.diagnosis import read_diagnosis
from perfstudy.decide.scorecard import read_scorecard
from perfstudy.run.summary import read_summary

BEGIN = "<!-- measured: written by scripts/front_page.py from a run's results; do not edit -->"
END = "<!-- /measured -->"
RECORD = Path("docs/benchmarks/front-page.json")
FIGURE = Path("docs/img/step_breakdown.png")


@dataclass(frozen=True)
class ClaimRow:
    """One claim as the scorecard judged it."""

    claim: str = doc("the claim in words, with its source and arm")
    published: str = doc("the paper's value")
    measured: str = doc("the value measured, with its interval")
    check: str = doc("the bound")
    result: str = doc("holds | does not hold | inconclusive | not scored")


@dataclass(frozen=True)
class ArmRow:
    """One arm (or the article's) in the published-beside-measured table."""

    arm: str = doc("the arm, or 'published <arm>'")
    workers: str = doc("map workers requested (effective)")
    gap_ms: float = doc("mean iteration gap")
    step_ms: float = doc("steady step")
    gap_share: float = doc("gap / step")
    speedup: float = doc("the baseline's step / this one's")


@dataclass(frozen=True)
class FrontPage:
    """What one run of a study measured, as README shows it (docs/benchmarks/front-page.json)."""

    SCHEMA_VERSION = 1
    KIND = "front page (docs/benchmarks/front-page.json)"
    RERUN = "write it again from a run: .venv/bin/python scripts/front_page.py --results results"

    study: str = doc("the study")
    size: str = doc("its size")
    commit: str = doc("the commit the runs trained on (+dirty when the tree was)")
    date: str = doc("the day the first arm trained (UTC)")
    host: str = doc("CPU model and usable CPUs")
    mindspore: str = doc("MindSpore's version")
    steal: str = doc("the host's CPU steal over the verification windows (median, max)")
    trainings: str = doc("each arm's training wall time")
    headline: str = doc("the report's first sentence")
    claims: list[ClaimRow] = doc("each claim, scored")
    arms: list[ArmRow] = doc("published and measured arms")
    verdicts: list[str] = doc("each arm's answer, as its diagnosis says it")
    figure: str = doc("the step breakdown, copied beside README", default=str(FIGURE))
    extra: dict[str, str] = doc("free-form notes", default_factory=dict)


def from_results(results: Path, study: str) -> FrontPage:
    """The front page of `study`'s runs under `results` (its report made)."""
    report = results / "report" / study
    card = read_scorecard(report)
    table = pd.read_csv(report / "comparison.csv")
    runs = [r for r in table[table["source"] == "measured"]["arm"]]
    summaries = {arm: read_summary(results / "runs" / study / arm) for arm in runs}
    first = summaries[runs[0]]
    env = first.environment or {}
    steals = [v.interference.steal for s in summaries.values() if s.verification
              and s.verification.rounds for v in s.verification.rounds.kept() if v.interference]
    return FrontPage(
        study=study, size=first.size,
        commit=first.git_sha[:10] + ("+dirty" if first.git_dirty else ""),
        date=_day(results / "runs" / study / runs[0] / "steps.csv"),
        host=f"{env.get('cpu_model') or 'unknown CPU'}, {env.get('usable_cpus') or env.get('cpu_count')} CPUs",
        mindspore=first.mindspore_version,
        steal=(f"{pct(statistics.median(steals), 1)} median, {pct(max(steals), 1)} max" if steals
               else "not measured (no verification windows)"),
        trainings=", ".join(f"{arm} {_minutes(s.run_wall_s)}{_rounds_wall(s)}" for arm, s in summaries.items()),
        headline=card.headline,
        claims=[ClaimRow(f"{c.claim} ({c.source})", c.published_text or "", c.measured_text or "-",
                         c.check, c.result) for c in card.claims],
        arms=[_arm_row(row) for row in table.itertuples()],
        verdicts=[f"{arm}: {_verdict(results / 'runs' / study / arm)}" for arm in runs])


def _rounds_wall(summary) -> str:
    """' + 4:52': the wall time of a run's rounds after its training (verification, and the
    prepared source's), or nothing where it ran none."""
    walls = [r.wall_s for r in (summary.verification.rounds if summary.verification else None,
                                summary.against_source.rounds if summary.against_source else None) if r]
    return f" + {_minutes(sum(walls))}" if walls else ""


def _day(steps_csv: Path) -> str:
    start = float(pd.read_csv(steps_csv, usecols=["start_time_s"])["start_time_s"].iloc[0])
    return dt.datetime.fromtimestamp(start, dt.UTC).strftime("%Y-%m-%d")


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def _arm_row(row) -> ArmRow:
    requested = "default (1)" if pd.isna(row.workers_requested) else str(int(row.workers_requested))
    effective = int(row.workers_effective)
    workers = requested if requested in (str(effective), "default (1)") else f"{requested} → {effective}"
    name = row.arm if row.source == "measured" else f"published {row.arm}"
    return ArmRow(name, workers, float(row.gap_ms), float(row.steady_step_ms), float(row.gap_share),
                  float(row.speedup))


def _verdict(run_dir: Path) -> str:
    if not (run_dir / "diagnosis.json").is_file():
        return "not diagnosed"
    rec = read_diagnosis(run_dir).recommendation
    return rec.sentence if rec else "no recommendation"


def render(page: FrontPage) -> str:
    """The measured section, Markdown, between README's markers."""
    lines = [BEGIN, "## What one `make run` measured here", "",
             f"Study `{page.study}`, size `{page.size}`, MindSpore {page.mindspore} on {page.host}; "
             f"commit `{page.commit}`, {page.date}; trainings (+ their measured rounds, m:ss) "
             f"{page.trainings}; host CPU steal {page.steal}. Written from that run's results by "
             "`scripts/front_page.py`, not typed. The report opens with the answer:", "",
             f"> **{page.headline}**", "",
             "| claim | published | measured here | check | result |", "|---|---|---|---|---|"]
    lines += [f"| {c.claim} | {c.published} | {c.measured} | {c.check} | {c.result} |"
              for c in page.claims]
    lines += ["", "| arm | map workers | iteration gap | steady step | gap share | speed |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {a.arm} | {a.workers} | {fmt(a.gap_ms, 'number')} ms | "
              f"{fmt(a.step_ms, 'number')} ms | {fmt(a.gap_share, 'percent')} | "
              f"{fmt(a.speedup, 'times')} |" for a in page.arms]
    lines += ["", f"![Step breakdown per arm: gap, forward+backward and tail]({page.figure})", "",
              "Each arm's answer, measured before it was given (its start):", ""]
    lines += [f"- {_short(v)}" for v in page.verdicts]
    return "\n".join([*lines, "", END])


def _short(text: str, limit: int = 170) -> str:
    """A verdict cut at a word before `limit` characters (the whole one is in the report)."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " … (the report has it whole)"


def replace_block(readme: str, block: str) -> str:
    """README with its measured section replaced (ValueError when the markers are missing)."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README.md has no measured section: put {BEGIN!r} and {END!r} where it goes")
    head, rest = readme.split(BEGIN, 1)
    return head + block + rest.split(END, 1)[1]


def block_of(readme: str) -> str:
    """README's measured section as written."""
    return BEGIN + readme.split(BEGIN, 1)[1].split(END, 1)[0] + END


def write(page: FrontPage, root: Path) -> Path:
    return write_record(root / RECORD, page)


def read(root: Path) -> FrontPage:
    return read_record(root / RECORD, FrontPage)
