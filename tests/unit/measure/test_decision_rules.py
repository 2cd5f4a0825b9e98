"""Decision rules: each kind's reading of an interval, the simulation, the replay, the choice."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from perfstudy.measure import decision_rules as rules
from perfstudy.measure.intervals import LEVEL, Outcome, log_interval, outcome

MARGIN = 0.10
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("logs, expected", [
    # estimate 1.12x faster, interval 8-14 %: past half the margin, short of all of it
    ([-0.10, -0.13, -0.09, -0.12], {"interval": "inconclusive", "asv": "faster", "criterion": "faster",
                                     "half": "faster"}),
    # estimate 4 % faster, surely faster: only Criterion's noise threshold lets it through
    ([-0.04, -0.035, -0.045, -0.04], {"interval": "equivalent", "asv": "equivalent",
                                       "criterion": "faster", "half": "equivalent"}),
    # estimate 12 % faster but noisy: significant, not surely past 5 %
    ([-0.02, -0.20, -0.11, -0.15, -0.12], {"interval": "inconclusive", "asv": "faster",
                                     "criterion": "faster", "half": "inconclusive"}),
])
def test_each_kind_reads_an_interval_its_own_way(logs, expected):
    found = log_interval(logs)
    for kind, word in expected.items():
        assert outcome(found, MARGIN, rules.Rule(kind, 0.95)) is Outcome(word), kind


def test_the_arrays_reading_is_the_scalar_one():
    rng = np.random.default_rng(3)
    logs = rng.normal(-0.08, 0.08, size=(200, 1, 6))
    mean, half = rules.cumulative(logs, 0.95)
    said = rules.outcomes(mean, half, rules.CHOSEN, MARGIN)
    for i in range(0, 200, 17):
        for n in (2, 4, 6):
            assert said[i, 0, n - 1] == outcome(log_interval(logs[i, 0, :n]), MARGIN).value


def test_a_race_lets_each_candidate_leave_once_settled():
    # candidate 0 clearly faster from round 3; candidate 1 equal to the reference but noisy
    fast = [-0.30, -0.31, -0.29, -0.30, -0.30, -0.31]
    open_ = [0.15, -0.2, 0.1, -0.12, 0.05, -0.01]
    logs = np.array([[fast, open_]])
    raced = rules.run_sequential(logs, rules.CHOSEN, MARGIN, min_rounds=3, race=True)
    assert raced.outcome[0, 0] == "faster" and raced.rounds[0, 0] == 3
    assert raced.rounds[0, 1] == 6
    together = rules.run_sequential(logs, rules.CHOSEN, MARGIN, min_rounds=3, race=False)
    assert list(together.rounds[0]) == [6, 6]


def test_the_simulation_measures_what_it_says():
    noise = np.random.default_rng(0).normal(0, 0.07, 5000)
    strict = rules.score(rules.Rule("interval", 0.95), noise, "gauss", margin=MARGIN, candidates=2,
                         min_rounds=3, max_rounds=12, trials=1500)
    loose = rules.score(rules.Rule("criterion", 0.90), noise, "gauss", margin=MARGIN, candidates=2,
                        min_rounds=3, max_rounds=12, trials=1500)
    # a significance test with a 1 % threshold, peeked at every round, reads A/A as changed often
    assert loose.aa_false_changed_family > 0.10 > strict.aa_false_changed_family
    assert loose.detect_10 > strict.detect_10 and strict.detect_25 > 0.95
    assert strict.aa_false_changed_family >= strict.aa_false_changed


def test_the_choice_is_the_rule_that_decides_most_within_the_error_bound():
    def made(rule, family, decided):
        return rules.RuleScore(rule, "s", 0.1, 2, family, family / 2, 0.5, 0.5, 1.0, 0.0, decided, 4)
    scores = [made("interval@95", 0.01, 0.5), made("asv@95", 0.08, 0.9), made("half@95", 0.04, 0.7)]
    assert rules.choose(scores) == "half@95"
    assert rules.choose([made("asv@95", 0.08, 0.9)]) is None


def test_the_product_decides_by_the_rule_its_recorded_calibration_chose():
    recorded = json.loads((REPO / "docs" / "benchmarks" / "decision-rules.json").read_text())
    assert recorded["chosen"] == rules.CHOSEN.name
    assert rules.CHOSEN.level == LEVEL  # the interval every sentence shows is the one that decides
    chosen = [s for s in recorded["scores"] if s["rule"] == rules.CHOSEN.name
              and not s["source"].startswith("normal")]  # the stress rows are reported only
    assert chosen and all(s["aa_false_changed_family"] <= 0.05 for s in chosen)


def test_a_recorded_comparison_is_replayed_in_its_order():
    verdict, rounds, settled = rules.replay(rules.CHOSEN, [-0.2, -0.25, -0.22, -0.21], MARGIN, 3)
    assert (verdict, rounds, settled) == ("faster", 3, True)
    verdict, rounds, settled = rules.replay(rules.CHOSEN, [0.3, -0.3, 0.1], MARGIN, 3)
    assert not settled and rounds == 3 and verdict == "inconclusive"
    assert math.isclose(rules.Rule("half", 0.95).bounds(MARGIN)[1], math.log(1.05))


def test_the_comparison_script_chooses_from_the_recorded_rounds(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "rules.json"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "compare_decision_rules.py"),
                           "--trials", "300", "--stress", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "chosen: " in done.stdout and "| A/A |" in done.stdout
    written = json.loads(out.read_text())
    assert written["today"] == "interval@95" and written["replay"]
    empty = subprocess.run([sys.executable, str(REPO / "scripts" / "compare_decision_rules.py"),
                            "--recorded", str(tmp_path), "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert empty.returncode == 2 and "no recorded comparisons" in empty.stderr
