"""Rounds spent where an answer can change: a pair an earlier run's rounds settled is not
measured again (perfstudy.decide.reuse), and the claims do not count it twice."""

from dataclasses import replace
from types import SimpleNamespace

import pytest
from records import make_summary, make_verification

from perfstudy.decide import verify
from perfstudy.decide.paired import paired_speedup
from perfstudy.decide.reuse import decided_elsewhere
from perfstudy.run.settings import MP
from perfstudy.run.verify_record import Planned

KEY = "pipeline.num_parallel_workers"
ONE, TWO, TWO_MP = {KEY: 1}, {KEY: 2}, {KEY: 2, KEY + MP: True}
SLOW = [4000.0, 4100.0, 3950.0, 4050.0, 4020.0]


def _baseline(candidate_steps, **fields):
    """The baseline's run: its own setting (1 worker) beside 2 workers, in interleaved rounds."""
    return replace(make_summary(**fields), run="baseline").with_verification(
        make_verification([(ONE, 4000.0), (TWO, 2600.0)], [SLOW, candidate_steps]))


def _plan(*candidates, pick=None):
    """The tuned arm's plan: its own setting (2 workers) first."""
    return [Planned("current" if i == 0 else "candidate", i, s, str(s), 2600.0 + 100 * i, "pipeline",
                    s == pick) for i, s in enumerate([TWO, *candidates])]


def test_a_return_to_a_setting_an_earlier_run_settled_is_not_measured_again():
    baseline = _baseline([2600.0, 2650.0, 2580.0, 2620.0, 2610.0])  # 0.65x: decided there
    plan, reused, pooled = decided_elsewhere(_plan(ONE, TWO_MP), make_summary(), [baseline])
    assert pooled == []  # TWO_MP: the baseline never measured it
    assert [p.settings for p in plan] == [TWO, TWO_MP] and [p.rank for p in plan] == [0, 1]
    assert len(reused) == 1 and reused[0].settings == ONE and reused[0].source_run == "baseline"
    comp = reused[0].comparison  # read from this run's side: one worker is slower
    assert comp.setting == 2 and comp.outcome == "slower"
    assert comp.ratio == pytest.approx(1 / 0.65, rel=0.02) and comp.rounds == 5
    assert comp.low > 1.1  # the whole interval past the margin: settled


def test_an_open_pair_a_model_pick_or_another_pipeline_is_measured_here():
    noisy = _baseline([2000.0, 4400.0, 2500.0, 4300.0, 3000.0])  # neither faster nor ruled out
    assert decided_elsewhere(_plan(ONE, TWO_MP), make_summary(), [noisy])[1] == []
    decided = _baseline([2600.0, 2650.0, 2580.0, 2620.0, 2610.0])
    assert decided_elsewhere(_plan(ONE, TWO_MP, pick=ONE), make_summary(), [decided])[1] == []
    other_data = make_summary(dataset_sha256="0" * 64)
    assert decided_elsewhere(_plan(ONE, TWO_MP), other_data, [decided])[1] == []
    # the only candidate, settled there: no rounds here at all (the verdict reads the baseline's)
    plan, reused, pooled = decided_elsewhere(_plan(ONE), make_summary(), [decided])
    assert [p.settings for p in plan] == [TWO] and [r.settings for r in reused] == [ONE]
    assert pooled == [] and reused[0].settled


# the baseline's two workers beside its one: 0.98x, but spread so widely (log sd 0.23 over 5
# rounds) that settling the pair would take about 40 rounds
WIDE = [3000.0, 5000.0, 3200.0, 4900.0, 4000.0]


def test_an_open_pair_out_of_this_runs_reach_is_not_measured_again():
    """The baseline's rounds left a return to one worker open so far from settled that the 12
    rounds the tuned arm may run could not settle it either: not measured again, its answer
    open with the rounds that would settle it. With room for them, it is measured and pooled."""
    baseline = _baseline(WIDE)
    plan, reused, pooled = decided_elsewhere(_plan(ONE, TWO_MP), make_summary(), [baseline],
                                             max_rounds=12)
    assert [p.settings for p in plan] == [TWO, TWO_MP] and pooled == []
    (far,) = reused
    assert far.settings == ONE and not far.settled and far.comparison.outcome == "inconclusive"
    assert far.comparison.rounds_needed - far.comparison.rounds > 12
    plan, reused, pooled = decided_elsewhere(_plan(ONE, TWO_MP), make_summary(), [baseline],
                                             max_rounds=far.comparison.rounds_needed)
    assert reused == [] and [(e.setting, e.source_run) for e in pooled] == [(1, "baseline")]
    # without max_rounds (no reach asked), an open pair is always measured here
    assert decided_elsewhere(_plan(ONE), make_summary(), [baseline])[1] == []


def test_an_arm_whose_every_candidate_is_accounted_for_runs_no_rounds_and_reads_the_earlier_ones():
    baseline = _baseline(WIDE)
    plan, reused, _ = decided_elsewhere(_plan(ONE), make_summary(), [baseline], max_rounds=12)
    assert len(plan) == 1 and len(reused) == 1
    ver = replace(make_verification([(TWO, 2600.0)], [[2600.0, 2650.0, 2580.0]]), plan=plan,
                  rounds=None, reused=reused)
    checked = verify.verdict(ver)
    assert checked.rounds == 0 and checked.stopped == verify.EARLIER and checked.wall_s == 0.0
    assert checked.outcome == "inconclusive" and checked.chosen == 0
    row = checked.settings[1]
    assert row.reused_from == "baseline" and row.out_of_reach and row.comparison.rounds == 5
    assert checked.open_candidate() is row  # the answer names the rounds that would settle it
    words = verify.protocol_words(checked)
    assert words.startswith("no rounds run here")
    assert f"about {row.comparison.rounds_needed} rounds in all would settle it" in words
    assert "(out of reach)" in words
    # settled there instead: the earlier run's answer, with no rounds here either
    settled_plan, settled, _ = decided_elsewhere(
        _plan(ONE), make_summary(), [_baseline([2600.0, 2650.0, 2580.0, 2620.0, 2610.0])])
    checked = verify.verdict(replace(ver, plan=settled_plan, reused=settled))
    assert checked.outcome == "no_gain" and checked.rounds == 0
    assert "baseline's rounds settled it" in verify.protocol_words(checked)


def test_the_verdict_reads_the_settled_pair_and_the_claim_counts_it_once():
    baseline = _baseline([2600.0, 2650.0, 2580.0, 2620.0, 2610.0])
    plan, reused, _ = decided_elsewhere(_plan(ONE, TWO_MP), make_summary(), [baseline])
    own = [2600.0, 2700.0, 2550.0, 2650.0]
    ran = make_verification([(p.settings, p.predicted_ms) for p in plan],
                            [own, [v * 1.02 for v in own]])
    tuned_ver = replace(ran, reused=reused)
    checked = verify.verdict(tuned_ver)
    assert [m.reused_from for m in checked.settings] == [None, None, "baseline"]
    assert checked.settings[2].measured_ms is None and checked.settings[2].windows == 0
    assert checked.outcome == "no_gain"  # the re-measured pair rules a gain out, the reused is slower
    words = verify.protocol_words(checked)
    assert "4 interleaved rounds of 2 settings" in words
    assert "not measured again: baseline's rounds settled it" in words

    def arm(name, summary, checked_):
        rec = SimpleNamespace(verification=checked_)
        return SimpleNamespace(name=name, summary=summary, diagnosis=SimpleNamespace(recommendation=rec))

    tuned = arm("tuned", replace(make_summary(operator_settings=TWO), run="tuned").with_verification(tuned_ver),
                checked)
    base = arm("baseline", replace(make_summary(operator_settings=ONE), run="baseline"),
               verify.verdict(baseline.verification))
    found, how = paired_speedup(tuned, base)
    assert found.runs == 1 and found.rounds == 5  # the baseline's rounds alone, not twice
    assert found.value == pytest.approx(1 / 0.65, rel=0.02) and "baseline's verification" in how


def _arm(name, summary, checked):
    rec = SimpleNamespace(verification=checked)
    return SimpleNamespace(name=name, summary=summary, diagnosis=SimpleNamespace(recommendation=rec))


def test_a_pair_left_open_in_both_runs_is_decided_by_their_rounds_pooled():
    """Three rounds each way read a return to one worker 1.0-1.3x slower, neither interval clear
    of a 10 % gain; their six rounds pooled rule the gain out, and the tuned arm keeps its
    setting: "no gain", not "inconclusive". The claim still counts each run's rounds once."""
    baseline = replace(make_summary(operator_settings=ONE), run="baseline").with_verification(
        make_verification([(ONE, 4000.0), (TWO, 2600.0)], [[3000.0, 3900.0, 3600.0], [3000.0] * 3]))
    plan, reused, pooled = decided_elsewhere(_plan(ONE), make_summary(), [baseline])
    assert reused == [] and [(e.setting, e.source_run) for e in pooled] == [(1, "baseline")]
    there = pooled[0].comparison
    assert there.ratio == pytest.approx((1.3 * 1.2) ** (1 / 3), rel=0.01) and not there.settled
    ran = make_verification([(p.settings, p.predicted_ms) for p in plan],
                            [[3000.0] * 3, [2850.0, 4050.0, 3450.0]])
    alone = verify.verdict(ran)
    assert alone.outcome == "inconclusive" and not alone.settings[1].comparison.settled
    tuned_ver = replace(ran, earlier=pooled)
    checked = verify.verdict(tuned_ver)
    row = checked.settings[1]
    assert checked.outcome == "no_gain" and row.comparison.rules_out_gain
    assert row.comparison.runs == 2 and row.comparison.rounds == 6 and row.pooled_with == ["baseline"]
    assert row.this_run == row.alone == alone.settings[1].comparison  # this run's rounds alone
    assert "6 rounds of 2 runs" in row.comparison.words()
    assert "read with baseline's rounds of the same pair pooled in" in verify.protocol_words(checked)

    tuned = _arm("tuned", replace(make_summary(operator_settings=TWO), run="tuned").with_verification(tuned_ver),
                 checked)
    base = _arm("baseline", baseline, verify.verdict(baseline.verification))
    found, how = paired_speedup(tuned, base)
    assert found.runs == 2 and found.rounds == 6  # each run's 3 rounds, once
    assert "2 runs' verifications" in how
