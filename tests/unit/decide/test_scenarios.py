"""The diagnosis benchmark's score: a diagnosed run against its measured sweep."""

from dataclasses import replace

import pandas as pd
from records import make_diagnosis, make_summary

from perfstudy.decide import advisor, scenarios
from perfstudy.decide.arm import Arm

KEY = "pipeline.num_parallel_workers"


def _advice():
    summary = {"steady_step_ms": 3200.0,
               "num_parallel_workers": {"effective": 1, "cpu_count": 4, "requested": None},
               "calibration": {"compute_wall_ms": 500.0, "compute_cpu_ms": 900.0,
                               "pipeline_wall_ms": 3040.0, "pipeline_cpu_ms": 3000.0}}
    ops = pd.DataFrame([{"op_id": 1, "op_type": "Map", "label": "Map #1 [Decode]", "num_workers": 1,
                         "cpu_pct": 95.0, "cpu_pct_per_worker": 95.0, "child_id": None,
                         "queue_usage": 0.0, "config_key": KEY}])
    return advisor.advise(make_summary(summary), ops)


def _arm(name, role, workers, step, answer=None, advice=None, bound="input"):
    summary = {"scenario": {"name": "s", "role": role, "truth": "s", "key": KEY},
               "operator_settings": {KEY: workers}, "steady_step_ms": step, "arm": name, "run": name}
    diagnosis = None if answer is None else make_diagnosis(recommendation=answer, advisor=advice, bound=bound)
    return Arm(name, make_summary(summary), pd.DataFrame(), diagnosis)


def _sweep(steps):
    return [_arm(f"s_w{w}", "truth", w, ms) for w, ms in steps.items()]


def test_a_right_culprit_and_pick_score_yes():
    advice = _advice()
    answer = {"action": "set_workers", "culprit_key": KEY, "culprit_label": "Map #1 [Decode]",
              "changes": {KEY: 4}, "settings": {KEY: 4}}
    arms = [_arm("s", "diagnosed", 1, 3200.0, answer, advice)] + _sweep(
        {1: 3100.0, 2: 1600.0, 3: 1100.0, 4: 800.0})
    table, points = scenarios.score(arms)
    row = table.iloc[0]
    assert row["culprit right"] == "yes" and row[scenarios.PICK_WITHIN] == "yes"
    assert row["its measured step (ms)"] == 800 and row[scenarios.WRONG_NO_HELP] == "no"
    assert len(points) == 4  # one prediction per swept setting, each with its error
    assert row[scenarios.PREDICTIONS_WITHIN] == ("yes" if max(
        abs(float(e.rstrip(" %"))) for e in points["error"]) <= 15 else "NO")


def test_no_help_where_a_setting_is_much_faster_scores_no():
    answer = {"action": "cannot_help", "culprit_key": KEY, "culprit_label": "Map #1 [Decode]",
              "changes": {}, "settings": {KEY: 1}}
    arms = [_arm("s", "diagnosed", 1, 3200.0, answer, _advice())] + _sweep({1: 3100.0, 2: 1600.0})
    row = scenarios.score(arms)[0].iloc[0]
    assert row[scenarios.WRONG_NO_HELP] == "NO"
    assert row["recommended"] == "keep (1)"
    assert "a wrong 'no setting helps' in 1" in scenarios.summary_line(scenarios.score(arms)[0])


def test_where_workers_do_not_matter_keeping_them_is_right():
    answer = {"action": "none", "culprit_key": None, "culprit_label": None, "changes": {},
              "settings": {KEY: 1}}
    arms = [_arm("s", "diagnosed", 1, 700.0, answer, _advice(), bound="compute")] + _sweep(
        {1: 700.0, 2: 720.0, 3: 690.0, 4: 705.0})
    row = scenarios.score(arms)[0].iloc[0]
    assert row["culprit right"] == "yes" and row["culprit named"] == "none"
    wrong = {**answer, "action": "set_workers", "culprit_key": KEY, "changes": {KEY: 2}}
    arms[0] = _arm("s", "diagnosed", 1, 700.0, wrong, _advice())
    assert scenarios.score(arms)[0].iloc[0]["culprit right"] == "NO"


def test_repeats_of_a_swept_setting_count_by_their_median():
    advice = _advice()
    answer = {"action": "set_workers", "culprit_key": KEY, "culprit_label": "Map #1 [Decode]",
              "changes": {KEY: 4}, "settings": {KEY: 4}}
    runs = [_arm("s", "diagnosed", 1, 3200.0, answer, advice)] + _sweep({1: 3100.0, 4: 800.0})
    for step in (1500.0, 790.0):  # two more repeats of 4 workers, one of them a slow spell
        again = _arm("s_w4", "truth", 4, step)
        again.summary = replace(again.summary, arm="s_w4", repeat=2 if step > 1000 else 3)
        runs.append(again)
    row = scenarios.score(runs)[0].iloc[0]
    assert row["runs per setting"] == 1  # 1 worker ran once
    assert row["its measured step (ms)"] == 800  # median of 800, 1500, 790
