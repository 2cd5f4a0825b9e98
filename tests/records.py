"""Typed records for tests: a RunSummary from a few hand-set fields.

`make_summary(fields)` lays `fields` (nested dicts merge into nested records) over the real
cpu_demo baseline's summary.json, then reads it through the one reader
(perfstudy.common.records.from_dict): a test states only the numbers it is about, and the
record it gets is whole and typed, as a real run's is."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfstudy.common.records import SCHEMA_KEY, from_dict, to_dict
from perfstudy.run.summary import RunSummary

BASE = Path(__file__).resolve().parent / "fixtures" / "cpu_demo" / "baseline" / "summary.json"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key not in (
                "operator_settings", "scenario", "verification", "steps_excluded_by_phase"):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def make_summary(fields: dict[str, Any] | None = None, **more: Any) -> RunSummary:
    """A RunSummary: the baseline fixture with `fields` (and keyword fields) laid over it."""
    neutral = {"profiled_window": None, "before_window_ms": 0.0, "verification": None,
               "autotune": None, "scenario": None, "sweep": None}  # what a test does not set does not act
    data = _merge({**json.loads(BASE.read_text()), **neutral}, {**(fields or {}), **more})
    data[SCHEMA_KEY] = RunSummary.SCHEMA_VERSION
    return from_dict(RunSummary, data, "a test's summary")


def as_dict(summary: RunSummary) -> dict[str, Any]:
    """A summary as summary.json holds it (for tests that write a run folder)."""
    return to_dict(summary)


def edited(summary: RunSummary, **fields: Any) -> RunSummary:
    """The same summary with some nested-or-not fields changed (nested dicts merge)."""
    return make_summary(_merge(to_dict(summary), fields)) if any(
        isinstance(v, dict) for v in fields.values()) else replace(summary, **fields)


def render_report(study: str, runs: list, out, spec=None) -> dict:
    """What scripts/make_report.py does: score the claims (decide/), write scorecard.json,
    then draw the report (present/); returns the report's paths and the scorecard's."""
    from perfstudy.decide import scorecard
    from perfstudy.present import report

    card = scorecard.make(spec, [r for r in runs if r.summary.repeat == 1], runs)
    card_path = scorecard.write(out, card)
    return {**report.build(study, runs, out, card), "scorecard": card_path}


BASE_RECOMMENDATION: dict[str, Any] = {
    "validity": {"steady": True}, "measured_step_ms": 1000.0, "predicted_now_ms": 1000.0,
    "source": "profile", "bound": "input", "action": "none", "settings": {},
    "predicted_step_ms": 1000.0, "sentence": "Keep the pipeline as it is."}
BASE_DIAGNOSIS: dict[str, Any] = {
    "arm": "baseline", "study": "seed_case", "bound": "input", "headline": "Highly input-bound.",
    "input_bound": {"band": "highly", "gap_share": 0.6, "gap_ms_mean": 600.0, "steady_step_ms": 1000.0,
                    "thresholds": {"highly": 0.2, "moderately": 0.05}},
    "culprit": None, "queue_rule": None,
    "cpu": {"cores": 2, "host_busy_pct": None, "process_pct": None, "per_op_pct": {},
            "cpu_floor_ms": 500.0, "steady_vs_cpu_floor": 2.0, "saturated": False, "near_cpu_floor": False},
    "compute_ms": 600.0, "iterator_wait": None, "cross_check": None,
    "profiled": False, "profiler_effect": None, "advisor": None}


def make_recommendation(fields: dict[str, Any] | None = None, **more: Any):
    """A Recommendation with the fields a test sets (the rest neutral)."""
    from perfstudy.decide.decision import Recommendation

    return from_dict(Recommendation, {**BASE_RECOMMENDATION, **(fields or {}), **more},
                     "a test's recommendation")


def make_diagnosis(fields: dict[str, Any] | None = None, **more: Any):
    """A Diagnosis with the fields a test sets; `recommendation` may be a partial dict."""
    from perfstudy.decide.diagnosis import Diagnosis

    data = {**BASE_DIAGNOSIS, **(fields or {}), **more}
    rec = data.get("recommendation")
    data["recommendation"] = {**BASE_RECOMMENDATION, **(to_dict(rec) if hasattr(rec, "sentence")
                                                        else rec or {})}
    if hasattr(data.get("advisor"), "stages"):  # an Advice record (make_advice)
        data["advisor"] = to_dict(data["advisor"])
    data[SCHEMA_KEY] = Diagnosis.SCHEMA_VERSION
    return from_dict(Diagnosis, data, "a test's diagnosis")


def make_verification(plan: list[tuple[dict, float]], series: list[list[float | None]],
                      training_wall_s: float = 100.0, dropped: int = 0):
    """A Verification as the rounds would record it: plan[i] = (settings, predicted ms),
    series[i] = setting i's mean step per round (None: not steady that round). Round r visits
    the settings in order r % n rotated (any order: the decision pairs by round)."""
    from perfstudy.measure.interference import Interference
    from perfstudy.measure.rounds import Rounds, Visit, Window
    from perfstudy.run.verify_record import Planned, Verification

    n, count = len(plan), len(series[0])
    planned = [Planned("current" if i == 0 else "candidate", i, settings, str(settings),
                       predicted, "pipeline", False) for i, (settings, predicted) in enumerate(plan)]
    orders = [[(r + i) % n for i in range(n)] for r in range(count)]
    visits = []
    for r, order in enumerate(orders):
        for position, setting in enumerate(order):
            step = series[setting][r]
            window = Window(step, 8, 4 if step else 0, 1.0)
            if len(visits) < dropped:
                visits.append(Visit(setting, r, position, window, Interference(1.0, 0.3, 0.0),
                                    dropped="other processes 30 % of the CPU time"))
            visits.append(Visit(setting, r, position, window, Interference(1.0, 0.0, 0.0)))
    rounds = Rounds(n, 1, orders, visits, "decided", 10.0 * count, training_wall_s, 0.10)
    return Verification(planned, rounds, training_wall_s, 1.0)


def make_sweep(key: str, steps: dict[int, float], rounds_: int = 6, noise: float = 0.0, seed: int = 0):
    """A truth run's Sweep record: every worker count in `steps` (threads) measured in `rounds_`
    interleaved rounds; each round drifts the host by ~30 % (shared: pairing cancels it), each
    window has its own noise (sd of its log)."""
    import numpy as np

    from perfstudy.measure import rounds
    from perfstudy.measure.rounds import Schedule, Window
    from perfstudy.run.sweep_record import Sweep, points

    rng = np.random.default_rng(seed)
    drift = np.exp(rng.normal(0, 0.3, rounds_))
    values = list(steps)
    series = {w: [float(ms * d * np.exp(rng.normal(0, noise))) for d in drift] for w, ms in steps.items()}
    found = rounds.run(lambda setting, round_: Window(series[values[setting]][round_], 8, 4, 1.0),
                       Schedule(len(values), seed=1, min_rounds=rounds_, max_rounds=rounds_), monitor=None)
    return Sweep(key, points(key, values, False, {key: 1}), found, 100.0, 4.0)


def make_advice(model, **fields: Any):
    """An Advice (diagnosis.json's `advisor`) from a Model and the fields a test sets; the rest
    neutral (predictions and curve empty, the pick the run's own setting)."""
    from perfstudy.decide.advisor import Advice
    from perfstudy.decide.whatif import current_settings

    now = fields.pop("now", None) or current_settings(model)
    neutral = {"now": now, "predictions": [], "pick": now, "curve": [], "pick_key": model.stages[0].key,
               "pick_workers": None, "predicted_best_ms": 0.0, "predicted_pick_ms": 0.0,
               "predicted_now_ms": 0.0, "pick_binding": "", "now_binding": "",
               "now_slowest_stage": model.stages[0].label, "gain": 0.0, "now_error": 0.0, "sentence": ""}
    return Advice.of(model, **{**neutral, **fields})


def one_map_model(key: str = "pipeline.num_parallel_workers", cores: int = 2):
    """A Model of one C++ map that computes (1 worker now), for tests about what reads a model."""
    from perfstudy.decide.whatif import Model, Stage

    stage = Stage(key=key, label="Map #3 [Decode]", op_id=3, operations=["Decode"], workers_now=1,
                  multiprocessing_now=False, cpu_ms_per_batch=1000.0, kind="computes", busy_per_worker=1.0)
    return Model(source="profile", cores=cores, stages=[stage], other_ops_cpu_ms_per_batch=0.0,
                 network_wall_ms=300.0, network_cpu_ms=500.0, network_cores=1.6, level=1.0)
