"""The model proposes, a measurement decides: plan, verdict and the answer built on them."""

import math

import pytest
from records import edited
from unit.decide.test_diagnosis import steps, summary

from perfstudy.decide import diagnosis, verification
from perfstudy.decide.advisor import candidates, canonical, current_settings, predict
from perfstudy.run.settings import MP

KEY = "pipeline.extra_transform_workers"


def window(settings, step_ms, rse=0.01, role="candidate", steady=True, predicted=None):
    return {"role": role, "settings": settings, "label": str(settings), "step_ms": step_ms,
            "rse": rse, "steady": steady, "steps_measured": 5,
            "predicted_ms": predicted if predicted is not None else step_ms}


def probed_advice():
    """A model of one Python map on 2 cores: its probe in threads and processes."""
    points = [{"workers": w, "multiprocessing": mp, "wall_ms_per_batch": ms, "cpu_ms_per_batch": 600.0}
              for (w, mp, ms) in [(1, False, 600.0), (2, False, 590.0), (1, True, 610.0), (2, True, 320.0)]]
    stage = {"key": KEY, "label": "Map #1 [Burn]", "op_id": 1, "operations": ["Burn"],
             "workers_now": 1, "multiprocessing_now": False, "cpu_ms_per_batch": 600.0,
             "kind": "probed", "points": points, "busy_per_worker": 1.0, "holds_gil": True}
    return {"source": "profile", "cores": 2, "stages": [stage], "other_ops_cpu_ms_per_batch": 0.0,
            "network_wall_ms": 300.0, "network_cpu_ms": 500.0, "network_cores": 1.6, "level": 1.0}


def test_plan_measures_the_own_setting_first_then_the_pick_then_the_fastest_others():
    model = probed_advice()
    now = current_settings(model)
    table = [predict(model, s) for s in candidates(model)]
    advice = {**model, "now": now, "predictions": table, "pick": {KEY: 2, KEY + MP: True}}
    plan = verification.plan(advice, 2)
    assert [w["role"] for w in plan] == ["current", "candidate", "candidate"]
    assert plan[0]["settings"] == {KEY: 1}
    assert plan[1]["settings"] == {KEY: 2, KEY + MP: True} and plan[1]["is_model_pick"]
    assert plan[2]["settings"] == {KEY: 2}  # the fastest in threads: the other mode, verified too
    assert len({str(sorted(w["settings"].items())) for w in plan}) == 3  # distinct settings
    assert all(v for w in plan for k, v in w["settings"].items() if k.endswith(MP))  # never MP False
    assert verification.plan(advice, 0) == plan[:1]


def test_a_candidate_beyond_the_noise_is_chosen_and_one_within_it_is_not():
    now = window({KEY: 1}, 900.0, role="current")
    faster = window({KEY: 2, KEY + MP: True}, 600.0)
    checked = verification.verdict({"windows": [now, faster]})
    assert checked["helps"] and checked["chosen"] is faster
    slight = window({KEY: 2}, 830.0)  # 8.4 % faster: under the 10 % bar
    assert not verification.verdict({"windows": [now, slight]})["helps"]
    noisy = window({KEY: 2}, 760.0, rse=0.10)  # 18 % faster, but 2 se of the difference is 20 %
    checked = verification.verdict({"windows": [now, noisy]})
    assert not checked["helps"] and checked["bar"] == pytest.approx(2 * math.hypot(0.01, 0.10))


def test_among_candidates_within_noise_of_the_fastest_the_cheapest_wins():
    now = window({KEY: 1}, 900.0, role="current")
    procs = window({KEY: 2, KEY + MP: True}, 590.0)
    threads = window({KEY: 2}, 600.0)
    assert verification.verdict({"windows": [now, procs, threads]})["chosen"] is threads


def test_windows_that_are_not_steady_or_missing_decide_nothing():
    now = window({KEY: 1}, 900.0, role="current")
    assert verification.verdict({"windows": [now, window({KEY: 2}, 500.0, steady=False)]}) is None
    assert verification.verdict({"windows": [window({KEY: 2}, 500.0)]}) is None
    assert verification.verdict({"windows": [now, {"role": "candidate", "settings": {KEY: 2},
                                                   "skipped": "budget"}]}) is None
    assert verification.verdict(None) is None


def _verified(summary_, windows):
    return summary_.with_verification({"windows": windows})


def test_the_measurement_overrules_a_promise_it_does_not_keep():
    base = summary()
    model = diagnosis.diagnose(base, steps()).recommendation
    assert model.action == "set_workers" and not model.verified  # the model promises 2 workers
    promised = model.predicted_step_ms
    key = "pipeline.num_parallel_workers"
    answer = diagnosis.diagnose(_verified(base, [
        window({key: 1}, 4000.0, role="current", predicted=4000.0),
        window({key: 2}, 3900.0, predicted=promised)]), steps()).recommendation
    assert answer.verified and answer.action in ("cannot_help", "none")
    assert answer.settings == canonical(model.model_answer.settings) or answer.changes == {}
    assert answer.sentence.startswith("No setting helps (measured)")
    assert f"{promised:.0f} ms" in answer.sentence  # what the model had promised, quoted
    kept = diagnosis.diagnose(_verified(base, [
        window({key: 1}, 4000.0, role="current", predicted=4000.0),
        window({key: 2}, 2500.0, predicted=promised)]), steps()).recommendation
    assert kept.action == "set_workers" and kept.changes == {key: 2}
    assert kept.verified_step_ms == 2500.0 and kept.verified_now_ms == 4000.0
    assert "measured 2500 ms per step against 4000 ms" in kept.sentence
    assert f"predicted {promised:.0f} ms" in kept.sentence
    assert [r["role"] for r in kept.verification["rows"]] == ["current", "candidate"]


def test_a_gain_the_model_missed_is_found_by_measuring():
    base = summary(steady=2000.0, workers=2, pipeline_wall=1900.0)  # the model: nothing helps
    model = diagnosis.diagnose(base, steps()).recommendation
    assert model.action != "set_workers"
    key = "pipeline.num_parallel_workers"
    answer = diagnosis.diagnose(_verified(base, [
        window({key: 2}, 2000.0, role="current"), window({key: 1}, 1500.0)]), steps()).recommendation
    assert answer.action == "set_workers" and answer.changes == {key: 1}


def test_operator_kinds_come_from_the_probe():
    advice = {**probed_advice(), "now": {KEY: 1}, "now_slowest_stage": "Map #1 [Burn]"}
    assert verification.operator_kind(advice, {KEY: 1}) == "Python computing, threads"
    assert verification.operator_kind(advice, {KEY: 2, KEY + MP: True}) == "Python computing, processes"
    stage = advice["stages"][0]
    stage["points"] = [{**p, "wall_ms_per_batch": 300.0} if p["workers"] == 2 and not p["multiprocessing"]
                       else p for p in stage["points"]]
    assert verification.operator_kind(advice, {KEY: 2}).startswith("Python releasing the GIL")
    stage["busy_per_worker"] = 0.5
    assert verification.operator_kind(advice, {KEY: 2}).startswith("Python mixed")


def test_the_cost_is_said_with_its_budget():
    text = verification.cost_sentence({"windows": [{"steps": 6, "step_ms": 1.0}, {"steps": 7, "step_ms": 1.0},
                                                   {"skipped": "budget"}],
                                       "wall_s": 12.0, "share_of_training": 0.2, "training_wall_s": 60.0,
                                       "budget_share": 0.25})
    assert text == ("Verification: 2 window(s) of 13 steps in 12 s, 20 % of the training's 60 s "
                    "(budget 25 %); 1 skipped past the budget.")


def test_a_gain_within_the_noise_is_unresolved_and_keeps_the_setting():
    now = window({KEY: 1}, 900.0, role="current")
    noisy = window({KEY: 2}, 700.0, rse=0.12)  # 29 % faster, 2 se of the difference 24 %: ...
    assert verification.verdict({"windows": [now, noisy]})["helps"]
    noisier = window({KEY: 2}, 700.0, rse=0.20)  # ... 41 %: the windows cannot tell
    checked = verification.verdict({"windows": [now, noisier]})
    assert not checked["helps"] and checked["unresolved"]
    base = summary()
    key = "pipeline.num_parallel_workers"
    answer = diagnosis.diagnose(_verified(base, [window({key: 1}, 4000.0, role="current"),
                                                 window({key: 2}, 3000.0, rse=0.25)]), steps())
    rec = answer.recommendation
    assert rec.action == "unresolved" and rec.changes == {} and rec.verified
    assert rec.sentence.startswith("Unresolved (measured)") and "verify.budget_share" in rec.sentence


def test_the_slow_operators_other_mode_is_measured_even_where_the_model_sees_nothing_in_it():
    """Threads of a Python map predicted no faster than now (the model's GIL rule) are still
    measured, at the most workers, before any other operator's setting: the measurements that
    showed threads helping where the model said not."""
    model = probed_advice()
    stage = model["stages"][0]
    stage["points"] = [{**p, "wall_ms_per_batch": 600.0} if not p["multiprocessing"] else p
                       for p in stage["points"]]
    other = {"key": "pipeline.num_parallel_workers", "label": "Map #2 [Decode]", "op_id": 2,
             "operations": ["Decode"], "workers_now": 1, "multiprocessing_now": False,
             "cpu_ms_per_batch": 50.0, "kind": "computes", "points": []}
    model["stages"].append(other)
    now = current_settings(model)
    table = [predict(model, s) for s in candidates(model)]
    pick = {**now, KEY: 2, KEY + MP: True}
    advice = {**model, "now": now, "predictions": table, "pick": pick,
              "now_slowest_stage": stage["label"]}
    plan = verification.plan(advice, 2)
    assert plan[1]["settings"] == canonical(pick)
    assert plan[2]["settings"] == canonical({**now, KEY: 2})  # threads, the rest as now


def test_without_an_own_window_the_runs_measured_window_is_the_reference():
    """The run's own setting measured by its main window is never 'unrepresentative' of itself."""
    key = "pipeline.num_parallel_workers"
    base = edited(summary(), step_ms={"p10": 3900.0, "p90": 4100.0, "median": 4000.0, "mean": 4000.0})
    own = {**window({key: 1}, 4000.0, role="current"), "main_window": True, "steps_measured": 28}
    rec = diagnosis.diagnose(_verified(base, [own, window({key: 2}, 2500.0)]), steps()).recommendation
    assert rec.action == "set_workers" and rec.verification["unrepresentative"] is None


def test_short_windows_that_disagree_with_the_runs_own_window_decide_nothing():
    """With verify.own_window, the short window at the run's own setting is checked against the
    run's measured window: 30 % off it means the short windows had not reached the steady state."""
    key = "pipeline.num_parallel_workers"
    base = edited(summary(), step_ms={"p10": 3900.0, "p90": 4100.0, "median": 4000.0, "mean": 4000.0})
    windows = [window({key: 1}, 2800.0, role="current"), window({key: 2}, 2000.0)]
    rec = diagnosis.diagnose(_verified(base, windows), steps()).recommendation
    assert rec.action == "unresolved" and rec.changes == {}
    assert rec.verification["unrepresentative"] == pytest.approx(-0.3)
    assert "had not reached the steady state" in rec.sentence
    agreeing = [window({key: 1}, 3950.0, role="current"), window({key: 2}, 2500.0)]
    assert diagnosis.diagnose(_verified(base, agreeing), steps()).recommendation.action == "set_workers"
    assert verification.reference(edited(base, steps_measured=1)) is None
