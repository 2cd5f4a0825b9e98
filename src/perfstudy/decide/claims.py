"""A study's claims: its claims file (where it is, read through its JSON Schema,
docs/schemas/claims.schema.json, into one sentence per problem), and each claim's measured
value (`METRICS`): a paper's claims (and the study's own) as quantities of the measured arms.

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
arm at the advisor's pick), is `not scored` with the reason, never passed (perfstudy.decide.scorecard judges them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import yaml

from perfstudy.common.config import ConfigError
from perfstudy.common.provenance import REPO_ROOT
from perfstudy.common.records import from_dict
from perfstudy.common.thresholds import fmt, pct
from perfstudy.decide import arms as arms_mod
from perfstudy.decide.arms import Arm
from perfstudy.decide.diagnosis import verdict_label
from perfstudy.decide.paired import (
    Paired,
    absolute,
    between,
    over_rounds,
    paired_pick,
    paired_speedup,
    pool,
    pool_shares,
    prediction_error,
    setting_windows,
    share_over_rounds,
)
from perfstudy.decide.remedy_proof import Remedies, RemedyEvidence
from perfstudy.decide.whatif import predict
from perfstudy.measure.intervals import batch_means
from perfstudy.measure.steptrace import counted_over_whole_cycles

SCHEMA = REPO_ROOT / "docs" / "schemas" / "claims.schema.json"


@dataclass(frozen=True)
class Claim:
    """One claim of a claims file (its keys: docs/schemas/claims.schema.json)."""

    id: str
    claim: str
    metric: str  # a key of METRICS
    arm: str
    source: str = "study"  # article | study
    against: str | None = None  # the compared or predicting arm
    at_least: float | None = None  # the bound: at least one of at_least, at_most, equals
    at_most: float | None = None
    equals: Any = None
    published: Any = None  # the paper's value
    note: str = ""
    truth: str | None = None  # the true culprit's config key (culprit_against_analyzer)

    def passes(self, value: Any) -> bool:
        """The value meets every bound the claim sets."""
        return bool((self.at_least is None or value >= self.at_least)
                    and (self.at_most is None or value <= self.at_most)
                    and (self.equals is None or value == self.equals))

    def check_text(self, kind: str) -> str:
        """The bound as the scorecard writes it ('>= 1.05x')."""
        parts = []
        if self.at_least is not None:
            parts.append(f">= {fmt(self.at_least, kind)}")
        if self.at_most is not None:
            parts.append(f"<= {fmt(self.at_most, kind)}")
        if self.equals is not None:
            parts.append(f"= {self.equals}")
        return " and ".join(parts)

    def margin(self, value: float) -> float:
        """How far a value sits from the nearest numeric bound (inf without one)."""
        return min((abs(value - b) for b in (self.at_least, self.at_most) if b is not None),
                   default=float("inf"))


@dataclass(frozen=True)
class ClaimsFile:
    """A study's claims file, read (`load`) through its JSON Schema."""

    claims: list[Claim]
    title: str = ""
    reference: str = ""

    @classmethod
    def of(cls, data: dict) -> ClaimsFile:
        """The records of a claims file's parsed YAML (already checked by its schema)."""
        return from_dict(cls, data, "the claims file")


def _problem(error, schema: dict[str, Any]) -> str:
    """One jsonschema error as the part of a sentence that says what is wrong and the fix."""
    props = schema["$defs"]["claim"]["properties"]
    if error.validator == "required":
        key = error.message.split("'")[1]
        if key in ("against", "truth"):
            return f"needs `{key}:` ({props[key]['description']})"
        return f"has no `{key}`; add it"
    if error.validator == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        unknown = sorted(set(error.instance) - known)
        return f"has unknown key(s) {unknown}; the keys are {sorted(known)}"
    if error.validator == "anyOf":
        return "has no bound; add at_least, at_most or equals"
    field = error.path[-1] if error.path else None
    if field == "metric":
        return f"has unknown metric {error.instance!r}; use one of {sorted(props['metric']['enum'])}"
    if field in ("at_least", "at_most"):
        return (f"has {field}: {error.instance!r}, not a number; write a number (shares and "
                "errors as fractions, e.g. 0.5)")
    if field is not None:
        wanted = props.get(field, {}).get("description", error.message)
        return f"has {field}: {error.instance!r}, which should be {wanted}"
    return error.message


def load(path: str | Path) -> ClaimsFile:
    """The claims file, validated by its JSON Schema (docs/schemas/claims.schema.json); any
    problem is one ConfigError sentence naming the file, the claim and the fix."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"The claims file {path} cannot be read ({exc.strerror}); fix the "
                          "study's `claims:` path or remove it.") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"The claims file {path} is not valid YAML ({str(exc).splitlines()[0]}); "
                          "fix it.") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ConfigError(f"The claims file {path} needs a `claims:` list; see workflow/claims/"
                          "seed_case.yaml for the format.")
    schema = json.loads(SCHEMA.read_text())
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        where = f"The claims file {path}"
        if len(error.path) >= 2 and error.path[0] == "claims":
            claim = data["claims"][error.path[1]]
            name = claim.get("id") if isinstance(claim, dict) else None
            where = f"The claim {name or error.path[1] + 1!r} of {path}"
            if not isinstance(claim, dict):
                raise ConfigError(f"{where} is not a mapping; write it as `- id: ..., metric: ...`.")
        raise ConfigError(f"{where} {_problem(error, schema)}.")
    ids = [c["id"] for c in data["claims"]]
    repeated = sorted({i for i in ids if ids.count(i) > 1})  # beyond what a JSON Schema says
    if repeated:
        raise ConfigError(f"The claims file {path} repeats the id(s) {repeated}; give each claim "
                          "its own.")
    return ClaimsFile.of(data)


def claims_path(study: str, configured: str | None, workflow_dir: str | Path) -> Path | None:
    """The study's claims file: its `claims:` key (relative to the workflow folder), else
    workflow/claims/<study>.yaml when it exists, else None (no scorecard)."""
    if configured:
        return Path(workflow_dir) / configured
    default = Path(workflow_dir) / "workflow" / "claims" / f"{study}.yaml"
    return default if default.is_file() else None



BOUNDS = ("at_least", "at_most", "equals")


def rounds_overrides(path: str | Path | None, arm: str) -> list[str]:
    """Hydra overrides that tell an arm's rounds the bounds its study's claims judge them by:
    a remedy's gain against its source (metric prepared_speedup on this arm) sets
    verify.against_source_bounds, so those rounds go on until each bound is decided or cannot
    be (perfstudy.run.remedy_rounds); a prediction of another arm's step made from this arm's
    model (metric prediction_error, `against: <this arm>`) sets verify.prediction_bound, so its
    verification measures the model's pick until its error is decided against the bound
    (perfstudy.run.verify); a bound on the source's prediction of this prepared arm's step
    (metric prepared_prediction_error) sets verify.against_source_prediction_bound, so its
    rounds against the source go on until that error is decided too. [] without a claims file
    or such a claim."""
    if path is None:
        return []
    claims = load(path).claims
    bounds = sorted({b for c in claims if c.metric == "prepared_speedup" and c.arm == arm
                     for b in (c.at_least, c.at_most) if b is not None})
    predicted = sorted({c.at_most for c in claims if c.metric == "prediction_error" and c.against == arm
                        and c.at_most is not None})
    remedy = sorted({c.at_most for c in claims if c.metric == "prepared_prediction_error"
                     and c.arm == arm and c.at_most is not None})
    return ([f"verify.against_source_bounds=[{','.join(f'{b:g}' for b in bounds)}]"] if bounds else []) + (
        [f"verify.prediction_bound={predicted[0]:g}"] if predicted else []) + (
        [f"verify.against_source_prediction_bound={remedy[0]:g}"] if remedy else [])


class Unmeasured(Exception):
    """This run cannot measure the claim's quantity; the message says why."""


def floor_name(text: str) -> str:
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


def _gap_share(claim: Claim, arms: dict[str, Arm], _prepared: Remedies):
    """The share of the window spent waiting for data, with its batch-means interval: one
    window's steps are not independent (a wait lets the queue fill, the next steps do not
    wait), so the interval comes from batches of steps, and a share near the bound reads
    inconclusive rather than holding on one run and failing on the next. Where rounds measured
    the arm's setting in windows counted over whole pipeline cycles (between two waits, or two
    full buffers of a pipeline that keeps up), each run's windows are an estimate of the same
    share, pooled with the training window's (random effects: the window and each run's rounds
    a source, their spread a variance component)."""
    arm = _arm(arms, claim.arm)
    s = arm.summary
    detail = f"gap {s.gap_ms.mean:.0f} ms of a {s.steady_step_ms:.0f} ms step"
    if arm.diagnosis:  # why it waits (or not): the arm's own verdict
        detail += f"; diagnosed {floor_name(verdict_label(arm.diagnosis.bound))}"
    window = _window(arm)
    found = batch_means(window["gap_ms"], window["step_ms"]) if window is not None else None
    if found is None:
        return s.gap_share, detail
    low, high = min(found.low, s.gap_share), max(found.high, s.gap_share)
    own = Paired(s.gap_share, max(0.0, low), min(1.0, high), found.batches, found.level, basis="batches")
    detail += f" ({found.batches} batches of the window)"
    rounds = [(name, shares) for name, shares in _cycle_shares(arm, arms) if len(shares) >= 2]
    if not rounds:
        return own, detail
    both = pool_shares([own, *(share_over_rounds(shares) for _, shares in rounds)])
    each = "; ".join(f"{name}'s {len(g)} ({', '.join(pct(x) for x in g)})" for name, g in rounds)
    return replace(both, basis="batches+rounds"), (
        detail + f", pooled with the gap shares of the windows its setting's rounds counted over "
        f"whole pipeline cycles ({each}); " + between(both, "sources", "their own noise"))


def _cycle_shares(arm, arms: dict[str, Arm]) -> list[tuple[str, list[float]]]:
    """Each run's gap shares of the windows at the arm's setting counted over whole pipeline
    cycles: between two waits, or between two full buffers of a pipeline that keeps up. Until
    2026-12-07 only the first: for a setting on the edge (the tuned arm on 2 cores, some windows
    waiting, some keeping up) that kept the windows that waited (3.8-12 %) and dropped those that
    kept up (0.3-3.4 %), so the pooled share leaned high."""
    return [(name, [w.gap_share for w in windows
                    if w.gap_share is not None and counted_over_whole_cycles(w.drain_rule)])
            for name, windows in setting_windows(arm, arms.values())]


def _culprit_key(claim: Claim, arms: dict[str, Arm], _prepared: Remedies):
    arm = _arm(arms, claim.arm)
    if not arm.diagnosis:
        raise Unmeasured(f"{arm.name} has no diagnosis (run the analyze rule)")
    culprit = arm.diagnosis.culprit
    return ((culprit.config_key if culprit else None) or "none",
            culprit.label if culprit else "no slow operator")


def _culprit_against_analyzer(claim: Claim, arms: dict[str, Arm], _prepared: Remedies):
    """Who names the true culprit (`truth:`, a config key) on the arm's profile: ours only,
    both, the analyzer only, or neither (MindSpore's MindData analyzer, perfstudy.decide.peers)."""
    arm = _arm(arms, claim.arm)
    if not arm.diagnosis:
        raise Unmeasured(f"{arm.name} has no diagnosis (run the analyze rule)")
    reading = arm.diagnosis.peers.msanalyzer if arm.diagnosis.peers else None
    if not reading:
        raise Unmeasured(f"{arm.name} has no dataset profile for MindSpore's analyzer (profiler off)")
    if reading.error:
        raise Unmeasured(reading.error)
    culprit = arm.diagnosis.culprit
    ours = culprit is not None and culprit.config_key == claim.truth
    theirs = reading.key == claim.truth
    value = {(True, False): "ours only", (True, True): "both", (False, True): "the analyzer only",
             (False, False): "neither"}[(ours, theirs)]
    return value, (f"ours: {culprit.label if culprit else 'none'}; MindSpore's analyzer: "
                   f"{reading.operator or 'none'} ({reading.advice})")


def _speedup(claim: Claim, arms: dict[str, Arm], _prepared: Remedies):
    arm, against = _arm(arms, claim.arm), _arm(arms, claim.against, "compared arm")
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


def _speedup_of_allowed(claim: Claim, arms: dict[str, Arm], prepared: Remedies):
    """The arm's floor over its own step (the compared arm cancels: both from the arms' own
    windows, so a paired speedup, measured another way, must not be mixed in). The step: every
    run's windows at the arm's setting (its own verification's and any other run's that measured
    it as a candidate: `setting_windows`), each a fresh pipeline counted over whole cycles; each
    run's rounds give an estimate and the runs are pooled (random effects: the spread between
    processes a variance component), never the union. One training window of a pipeline that
    cycles holds one or two cycles (1289 ms against 1525 over its whole cycle); without rounds,
    the training window with the interval of its batch means (the floor taken as measured)."""
    arm, against = _arm(arms, claim.arm), _arm(arms, claim.against, "compared arm")
    s = arm.summary
    runs = [(name, [w.step_ms for w in found]) for name, found in setting_windows(arm, arms.values())
            if len(found) >= 2]
    if runs:
        return _floor_over(s, runs)
    speedup = against.summary.steady_step_ms / s.steady_step_ms
    allowed = allowed_speedup(arm, against)
    value = speedup / allowed
    detail = (f"{speedup:.2f}x of the {allowed:.2f}x its {floor_name(s.binding_floor)} "
              f"floor allows ({s.floor_ms:.0f} ms)")
    window = _window(arm)
    found = batch_means(window["step_ms"]) if window is not None else None
    if found is None or found.low <= 0:
        return value, detail
    # value = floor / step: a slower step (the interval's top) gives the lower share
    low, high = value * found.value / found.high, value * found.value / found.low
    return Paired(value, min(low, value), max(high, value), found.batches, found.level,
                  basis="batches"), detail + f"; the step's {found.batches} batches"


def _floor_over(s, runs: list[tuple[str, list[float]]]) -> tuple[Paired, str]:
    """The floor over each run's windows at the setting (log per round), pooled over the runs."""
    found = pool([over_rounds([math.log(s.floor_ms / w) for w in windows]) for _, windows in runs])
    each = "; ".join(f"{name}'s {len(w)} ({', '.join(f'{x:.0f}' for x in w)} ms)" for name, w in runs)
    spread = "" if found.runs == 1 else "; " + between(found)
    return found, (f"its {floor_name(s.binding_floor)} floor {s.floor_ms:.0f} ms over its own setting's "
                   f"step {s.floor_ms / found.value:.0f} ms, the geometric mean of its setting's windows in "
                   f"{found.rounds} rounds of "
                   + ("its verification" if found.runs == 1 else f"{found.runs} runs' verifications, pooled")
                   + f" ({each}){spread}; its training window read {s.steady_step_ms:.0f} ms")


def _prediction_error(claim: Claim, arms: dict[str, Arm], _prepared: Remedies):
    arm = _arm(arms, claim.arm)
    source = (_arm(arms, claim.against, "predicting arm") if claim.against
              else arms_mod.source_arm(list(arms.values())))
    advice = ((source.diagnosis.advisor if source.diagnosis else None) if source is not None else None)
    if not advice:
        raise Unmeasured("no arm's diagnosis has an advisor model to predict from")
    predicted = predict(advice, arms_mod.settings(arm)).step_ms
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


def _advisor_pick(claim: Claim, arms: dict[str, Arm], _prepared: Remedies):
    check = arms_mod.pick_check(list(arms.values()))
    if check is None:
        raise Unmeasured("no arm's diagnosis has an advisor model")
    if check.no_verdict:
        raise Unmeasured(f"{check.source} got no verdict (its window was not steady), so nothing "
                         "was recommended")
    source = arms[check.source]
    paired = paired_pick(source, check.recommended, arms[check.best_arm])
    if paired is not None:
        return paired
    if check.picked_step_ms is None:
        raise Unmeasured(f"no arm ran the recommended setting ({check.recommended_workers} "
                         "workers); run study=sweep")
    return check.picked_vs_best, (
        f"{check.source}'s recommendation is {check.recommended_workers} worker(s): "
        f"{check.picked_step_ms:.0f} ms against the best measured, {check.best_arm} "
        f"{check.best_step_ms:.0f} ms")


def _prepared_row(claim: Claim, prepared: Remedies) -> RemedyEvidence:
    found = prepared.of(claim.arm)
    if found is None or found.source is None:
        raise Unmeasured(f"no prepared arm {claim.arm!r} with its source arm ran in this study")
    return found


def _prepared_speedup(claim: Claim, arms: dict[str, Arm], prepared: Remedies):
    arm = _arm(arms, claim.arm)
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


def _prepared_prediction_error(claim: Claim, arms: dict[str, Arm], prepared: Remedies):
    _arm(arms, claim.arm)  # "did not run" first, where it did not
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
