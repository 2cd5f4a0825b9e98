"""Two studies, or two runs of one, side by side (scripts/compare_runs.py, `make compare`):
what differs in their configs and their machines, each claim's verdict and value in both, and
each arm's step in both with their ratio.

A run is read from its results folder as the workflow left it (report/<study>/scorecard.json,
runs/<study>/<arm>/summary.json, config.yaml and steps.csv), never re-measured. Two runs are not
paired: an arm's ratio across them carries the interval of the two windows' own noise
(batch means of each window's steps), which leaves out what differs between two runs of one
machine (a host's load, its clocks): the claims' own intervals, each paired inside its run, are
the comparison a verdict can rest on; the steps' ratio says how far apart the two machines or
runs are."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from scipy import stats

from perfstudy.common.config import ConfigError, flatten, load_run_config, to_container
from perfstudy.common.records import RecordError
from perfstudy.common.thresholds import pct
from perfstudy.decide.scorecard import Scorecard, read_scorecard
from perfstudy.measure.intervals import LEVEL, batch_means
from perfstudy.run.summary import RunSummary, read_summary

# config keys that say where a run wrote, not what it computed
NOT_COMPARED = ("paths.", "run", "arm", "repeat")
# environment facts compared (flattened; packages and device fields included)
ENVIRONMENT = ("python", "os", "cpu_model", "cpu_count", "usable_cpus", "onednn_max_cpu_isa",
               "packages.", "device.", "scheduler.name")


class CompareError(Exception):
    """A results folder that cannot be compared; the message says which and what to do."""


@dataclass(frozen=True)
class Side:
    """One results folder's study: its scorecard, and each arm's summary, config and steps."""

    label: str
    folder: Path
    study: str
    card: Scorecard | None
    summaries: dict[str, RunSummary]
    configs: dict[str, dict[str, object]]
    steps: dict[str, pd.DataFrame]


@dataclass(frozen=True)
class StepRatio:
    """An arm's steady step in both runs and B over A, with the windows' own interval."""

    arm: str
    a_ms: float
    b_ms: float
    ratio: float
    low: float | None
    high: float | None

    def words(self) -> str:
        if self.low is None:
            return f"{self.ratio:.2f}x (no interval: a window too short for batch means)"
        return f"{self.ratio:.2f}x ({self.low:.2f}-{self.high:.2f}, {pct(LEVEL)}, two windows, not paired)"


def read_side(folder: str | Path, study: str, label: str) -> Side:
    """The study's records under a results folder; CompareError names what is missing."""
    folder = Path(folder)
    runs = folder / "runs" / study
    if not runs.is_dir():
        found = sorted(p.name for p in (folder / "runs").glob("*") if p.is_dir()) \
            if (folder / "runs").is_dir() else []
        raise CompareError(
            f"{label}: {runs} does not exist; give the results folder of a finished run "
            + (f"(its studies: {', '.join(found)}; pick one with --study)" if found
               else "(the folder `make run` wrote, e.g. results)") + ".")
    summaries, configs, steps = {}, {}, {}
    for run_dir in sorted(p for p in runs.iterdir() if (p / "summary.json").is_file()):
        try:
            summaries[run_dir.name] = read_summary(run_dir)
            configs[run_dir.name] = flatten(to_container(load_run_config(run_dir / "config.yaml")))
        except (RecordError, ConfigError) as exc:
            raise CompareError(f"{label}: {run_dir} cannot be read ({exc}); run its study "
                               "again to rewrite it.") from None
        if (run_dir / "steps.csv").is_file():
            steps[run_dir.name] = pd.read_csv(run_dir / "steps.csv")
    if not summaries:
        raise CompareError(f"{label}: {runs} holds no trained run (no summary.json); run the "
                           "study first.")
    report = folder / "report" / study
    card = read_scorecard(report) if (report / "scorecard.json").is_file() else None
    return Side(label, folder, study, card, summaries, configs, steps)


def config_diff(a: Side, b: Side) -> list[tuple[str, str, object, object]]:
    """(arm, key, A's value, B's value) for every config key that differs in an arm both ran."""
    rows = []
    for arm in _arms(a, b):
        left, right = a.configs[arm], b.configs[arm]
        for key in sorted(set(left) | set(right)):
            if key.startswith(NOT_COMPARED) or key in NOT_COMPARED:
                continue
            if left.get(key, "(none)") != right.get(key, "(none)"):
                rows.append((arm, key, left.get(key, "(none)"), right.get(key, "(none)")))
    return rows


def _environment(side: Side) -> dict[str, object]:
    first = next(iter(side.summaries.values()))
    facts = {k: v for k, v in flatten(dict(first.environment or {})).items()
             if k.startswith(ENVIRONMENT) or k in ENVIRONMENT}
    facts.setdefault("device.target", first.device_target)  # a run from before the device group
    facts.update(mindspore=first.mindspore_version, git_sha=first.git_sha, size=first.size)
    return facts


def _arms(a: Side, b: Side) -> list[str]:
    """The arms both ran, in the order A trained them."""
    both = set(a.summaries) & set(b.summaries)
    return sorted(both, key=lambda arm: (str(a.summaries[arm].started_at), arm))


def environment_diff(a: Side, b: Side) -> list[tuple[str, object, object]]:
    """(fact, A's, B's) for the machine and software facts that differ (the first arm's)."""
    left, right = _environment(a), _environment(b)
    return [(k, left.get(k), right.get(k)) for k in sorted(set(left) | set(right))
            if left.get(k) != right.get(k)]


def _window(frame: pd.DataFrame) -> pd.Series:
    return frame.loc[frame["phase"] == "measured", "step_ms"] if "phase" in frame else frame["step_ms"]


def step_ratios(a: Side, b: Side) -> list[StepRatio]:
    """Each arm both ran: its steady step in each and B / A, the interval from each window's
    batch means (their log standard errors added; Student-t on the fewer batches' freedom)."""
    rows = []
    for arm in _arms(a, b):
        sa, sb = a.summaries[arm].steady_step_ms, b.summaries[arm].steady_step_ms
        ratio, low, high = sb / sa, None, None
        ba = batch_means(_window(a.steps[arm])) if arm in a.steps else None
        bb = batch_means(_window(b.steps[arm])) if arm in b.steps else None
        if ba is not None and bb is not None:
            se = math.hypot(_log_se(ba), _log_se(bb))
            t = float(stats.t.ppf(0.5 + LEVEL / 2, min(ba.batches, bb.batches) - 1))
            low, high = ratio * math.exp(-t * se), ratio * math.exp(t * se)
        rows.append(StepRatio(arm, sa, sb, ratio, low, high))
    return rows


def _log_se(found) -> float:
    """A batch-means interval's standard error on the log scale."""
    t = float(stats.t.ppf(0.5 + found.level / 2, found.batches - 1))
    return (found.high - found.low) / 2 / t / found.value


def _claims(a: Side, b: Side) -> list[tuple[str, str, str, str]]:
    """(id, check, A's verdict and value, B's) for every claim either scored."""
    left = {c.id: c for c in a.card.claims} if a.card else {}
    right = {c.id: c for c in b.card.claims} if b.card else {}
    ids = list(left) + [i for i in right if i not in left]

    def cell(c) -> str:
        return "-" if c is None else (c.result if c.result == "not scored"
                                      else f"{c.result}, {c.measured_text}")
    return [(i, (left.get(i) or right.get(i)).check, cell(left.get(i)), cell(right.get(i)))
            for i in ids]


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _text(value: object) -> str:
    return "-" if value is None or value == "" else str(value).replace("|", "/")


def render(a: Side, b: Side) -> str:
    """The comparison as Markdown: headlines, claims, steps, then what differs."""
    out = [f"# {a.study}: {a.label} against {b.label}", ""]
    for side in (a, b):
        env = _environment(side)
        out.append(f"- **{side.label}** ({side.folder}): commit {str(env.get('git_sha'))[:10]}, "
                   f"{_text(env.get('cpu_model'))}, {_text(env.get('usable_cpus'))} CPUs, "
                   f"device {_text(env.get('device.target'))} {_text(env.get('device.model'))}, "
                   f"size {env.get('size')}; "
                   + (f"{side.card.held} of {len(side.card.claims)} claims hold"
                      if side.card else "no scorecard (the report was not made)"))
    claims = _claims(a, b)
    if claims:
        changed = sum(1 for _, _, x, y in claims if x.split(",")[0] != y.split(",")[0])
        out += ["", f"## Claims ({changed} of {len(claims)} with another verdict)", "",
                f"| claim | check | {a.label} | {b.label} |", "|---|---|---|---|"]
        out += [f"| {i} | {_text(check)} | {_text(x)} | {_text(y)} |" for i, check, x, y in claims]
    ratios = step_ratios(a, b)
    out += ["", "## Each arm's steady step", "",
            f"| arm | {a.label} | {b.label} | {b.label} / {a.label} |", "|---|---|---|---|"]
    out += [f"| {r.arm} | {r.a_ms:.0f} ms | {r.b_ms:.0f} ms | {r.words()} |" for r in ratios]
    only = sorted(set(a.summaries) ^ set(b.summaries))
    if only:
        out += ["", "Arms in one only: " + ", ".join(
            f"{arm} ({a.label if arm in a.summaries else b.label})" for arm in only) + "."]
    out += ["", "Two runs are not paired: the steps' intervals hold each window's own noise, not "
            "what differs between two runs of one machine; the claims' intervals are paired "
            "inside each run."]
    env = environment_diff(a, b)
    out += ["", f"## Machine and software ({_count(len(env), 'fact differs', 'facts differ')})", ""]
    if env:
        out += [f"| fact | {a.label} | {b.label} |", "|---|---|---|"]
        out += [f"| {k} | {_text(x)} | {_text(y)} |" for k, x, y in env]
    else:
        out.append("The same in every recorded fact.")
    diff = config_diff(a, b)
    out += ["", f"## Configs ({_count(len(diff), 'setting differs', 'settings differ')})", ""]
    if diff:
        out += [f"| arm | key | {a.label} | {b.label} |", "|---|---|---|---|"]
        out += [f"| {arm} | {k} | {_text(x)} | {_text(y)} |" for arm, k, x, y in diff]
    else:
        out.append("Every arm both ran has the same config.")
    return "\n".join(out) + "\n"
