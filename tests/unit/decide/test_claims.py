"""The claims scorecard: a study's claims file, checked against real measured arms."""

import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from records import render_report

from perfstudy.common.config import ConfigError
from perfstudy.common.io import read_json
from perfstudy.decide import claims, scorecard
from perfstudy.decide.arms import load_arm
from perfstudy.decide.claims import Claim, ClaimsFile
from perfstudy.decide.scorecard import read_scorecard
from perfstudy.measure.steptrace import BUFFER_CYCLES, WAITED_CYCLES
from perfstudy.present import sentences

SEED_CLAIMS = REPO / "workflow" / "claims" / "seed_case.yaml"


@pytest.fixture(scope="module")
def arms(analysed):
    """The real cpu_demo baseline and tuned runs, analysed (no prepared arm: not scored)."""
    return [load_arm(analysed / arm, arm) for arm in ("baseline", "tuned")]


def _by_id(card):
    return {c.id: c for c in card.claims}


def test_the_case_study_claims_are_scored_from_the_measured_arms(arms):
    card = scorecard.score(claims.load(SEED_CLAIMS), arms)
    base, tuned = (a.summary for a in arms)
    got = _by_id(card)
    assert got["baseline_input_bound"].measured == pytest.approx(base.gap_share)
    assert got["baseline_input_bound"].passed is (base.gap_share >= 0.5)
    assert got["culprit_is_map"].measured == "pipeline.num_parallel_workers"
    # MindSpore's own analyzer, run on the same profile, names Batch / prefetch_size here
    assert got["culprit_beats_analyzer"].measured == "ours only"
    assert "Batch #1 (increase prefetch_size)" in got["culprit_beats_analyzer"].detail
    assert got["tuned_faster"].measured == pytest.approx(base.steady_step_ms / tuned.steady_step_ms)
    assert got["tuned_faster"].published_text == "4.98x"
    allowed = base.steady_step_ms / tuned.floor_ms
    assert got["tuned_near_allowed"].measured == pytest.approx(got["tuned_faster"].measured / allowed)
    assert f"{allowed:.2f}x" in card.headline and "(published 4.98x)" in card.headline
    # the advisor's pick ran (2 workers on 2 CPUs): it is checked against the best measured
    assert got["advisor_pick"].passed is not None
    # no prepared arm ran: those claims are not scored, and say why; never passed
    for key in ("prepared_5x", "prepared_predicted"):
        assert got[key].passed is None and got[key].result == "not scored"
        assert "did not run" in got[key].detail
    # the one-window shares are judged on their batch means' interval: decided or inconclusive
    for key in ("baseline_input_bound", "tuned_not_input_bound", "tuned_near_allowed"):
        assert got[key].interval_kind.startswith("batch means"), got[key]
    assert card.scored + card.inconclusive == 8 and card.not_scored == 2
    assert card.held == sum(c.passed is True for c in card.claims)
    assert "2 not scored" in card.headline


def test_a_claim_that_does_not_hold_is_failed_and_named_in_the_headline(arms):
    spec = claims.load(SEED_CLAIMS)
    spec = replace(spec, claims=[replace(c, at_least=4.98) if c.id == "tuned_faster" else c  # the article's
                                 for c in spec.claims])
    card = scorecard.score(spec, arms)
    assert _by_id(card)["tuned_faster"].result == "does not hold"
    assert "tuned_faster (1.44x, >= 4.98x)" in card.headline.split(" not: ")[1]
    assert "All" not in card.headline.split(" on this machine")[0]


@pytest.mark.parametrize("text, words", [
    ("claims: [{id: a, claim: x, metric: speed, arm: tuned, at_least: 1}]", "unknown metric 'speed'"),
    ("claims: [{id: a, claim: x, metric: gap_share, arm: tuned}]", "has no bound"),
    ("claims: [{id: a, claim: x, metric: gap_share, arm: tuned, at_least: high}]", "not a number"),
    ("claims: [{id: a, claim: x, metric: speedup, arm: tuned, at_least: 1}]", "needs `against:`"),
    ("claims: [{id: a, claim: x, metric: gap_share, arm: tuned, at_lest: 1}]", "unknown key(s) ['at_lest']"),
    ("claims: [{claim: x, metric: gap_share, arm: tuned, at_most: 1}]", "has no `id`"),
    ("claims: [{id: a, claim: x, metric: culprit_against_analyzer, arm: b, equals: ours only}]",
     "needs `truth:` (the config key of the true culprit"),
    ("claims: [{id: a, claim: x, metric: gap_share, arm: b, at_most: 1, source: paper}]",
     "has source: 'paper', which should be article (the paper's) or study"),
    ("claims: [{id: a, claim: x, metric: gap_share, arm: b, at_most: 1},"
     " {id: a, claim: y, metric: gap_share, arm: c, at_most: 1}]", "repeats the id(s) ['a']"),
    ("claims: [just words]", "is not a mapping"),
    ("claims: {a: 1}", "needs a `claims:` list"),
    ("claims: [a: b: c]", "not valid YAML"),
])
def test_a_bad_claims_file_is_one_sentence_naming_the_claim(tmp_path, text, words):
    """The file is checked by its published JSON Schema (docs/schemas/claims.schema.json)."""
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        claims.load(path)
    assert words in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_the_report_opens_with_the_scorecard_and_writes_scorecard_json(arms, tmp_path):
    paths = render_report("seed_case", arms, tmp_path, claims.load(SEED_CLAIMS))
    card = read_scorecard(paths["scorecard"].parent)  # scorecard.json, read back as its record
    md = paths["md"].read_text()
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections[:6] == ["## Did the case study reproduce here?",
                            "## Where a step's time goes, per arm", "## Verdicts",
                            "## Beside the tools you have: MindSpore's analyzer (and AutoTune) on the same runs",
                            "## The tools scored against the measured arms", "## Details"]
    assert md.splitlines()[2] == f"**{card.headline}**"  # the answer, first
    html = paths["html"].read_text()
    assert html.index('class="lead"') < html.index('class="scorecard"') < html.index("<h2>Verdicts")
    assert re.search(r'<td class="[^"]*\bpass\b[^"]*" >holds</td>', html)  # the result's colour
    assert re.search(r'<td class="[^"]*\bna\b[^"]*" >not scored</td>', html)
    # the detail is collapsed below the verdicts; only the headline figure is open
    assert html.index("<details>") > html.index("<h2>Details")
    assert html.count("<figure>") == html.count("<details><summary>Figure: ") + 1


def test_without_a_claims_file_the_report_says_nothing_is_scored(arms, tmp_path):
    paths = render_report("other", arms, tmp_path)
    assert read_json(paths["scorecard"])["claims"] == []
    assert "reproduce here" not in paths["md"].read_text()
    assert claims.claims_path("other", "", REPO) is None
    assert claims.claims_path("seed_case", "", REPO) == SEED_CLAIMS
    assert claims.claims_path("x", "conf/mine.yaml", REPO) == REPO / "conf/mine.yaml"


def test_make_report_refuses_a_bad_claims_file_before_any_work(tmp_path):
    bad = tmp_path / "claims.yaml"
    bad.write_text(yaml.safe_dump({"claims": [{"id": "a", "claim": "x", "metric": "nope",
                                               "arm": "tuned", "at_least": 1}]}))
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_report.py"), "--study", "seed_case",
         "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--arms", "baseline",
         "--claims", str(bad)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "unknown metric 'nope'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_every_shipped_claims_file_loads_and_belongs_to_a_study():
    studies = yaml.safe_load((REPO / "workflow" / "config.yaml").read_text())["studies"]
    files = sorted((REPO / "workflow" / "claims").glob("*.yaml"))
    assert files
    for path in files:
        spec = claims.load(path)
        assert path.stem in studies and spec.claims and spec.title


def test_each_verdict_is_one_line_with_its_reasoning_one_click_away(arms, tmp_path):
    paths = render_report("seed_case", arms, tmp_path, claims.load(SEED_CLAIMS))
    md = paths["md"].read_text()
    block = md.split("## Verdicts\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    lines = [line[2:] for line in block if line.startswith("- ")]
    assert [line.split(":")[0] for line in lines] == ["baseline", "tuned"]
    for line, arm in zip(lines, arms, strict=True):
        assert len(line.split()) <= sentences.MAX_VERDICT_WORDS, line
        answer = arm.diagnosis.recommendation
        assert sentences.verdict_label(arm.diagnosis.bound) in line and "do: " in line
        assert f"measured {arm.summary.steady_step_ms:.0f} ms" in line
        if answer.action == "set_workers":  # what to do and its predicted gain, the decision's
            assert f"{answer.predicted_step_ms:.0f} ms ({1 + answer.predicted_gain:.2f}x, not verified)" in line
    assert sum(line.startswith("  - why: ") for line in block) == 2
    assert arms[0].diagnosis.recommendation.sentence in md  # the reasoning, kept
    html = paths["html"].read_text()
    verdicts = html.split("<h2>Verdicts</h2>", 1)[1].split("<h2>", 1)[0]
    assert verdicts.count('<details class="why"><summary>why</summary>') == 2


def test_a_claim_over_repeats_gets_its_median_interval_and_an_honest_inconclusive():
    claim = Claim(id="gap", claim="x", metric="gap_share", arm="tuned", at_most=0.05)
    # the four tuned-arm gap shares measured on one machine in four make runs
    straddles = scorecard.judge(claim, [0.027, 0.045, 0.136, 0.001], "percent")
    assert straddles.result == "inconclusive" and straddles.passed is None
    assert straddles.interval == [0.001, 0.136] and straddles.interval_kind == "range"
    assert "range of 4" in straddles.measured_text
    assert straddles.measured == pytest.approx(0.036)
    assert scorecard.judge(claim, [0.01, 0.02, 0.03], "percent").result == "holds"
    assert scorecard.judge(claim, [0.1, 0.2], "percent").result == "does not hold"
    assert scorecard.judge(claim, [0.04], "percent").result == "holds"  # one run: as before
    six = [0.01, 0.012, 0.011, 0.2, 0.013, 0.012]  # from 6 repeats an exact 95 % exists: min-max
    assert scorecard.interval(six) == (0.01, 0.2, "order-statistic 96.9 %")
    many = six + [0.011, 0.014, 0.012, 0.013]  # ten: the 2nd smallest to the 2nd largest
    low, high, how = scorecard.interval(many)
    assert how == "order-statistic 97.9 %" and (low, high) == (0.011, 0.014)
    text = scorecard.judge(Claim(id="t", claim="x", metric="culprit_key", arm="a", equals="a"),
                           ["a", "b", "a"], "text")
    assert text.result == "inconclusive" and "held in 2 of 3 repeats" in text.measured_text


def test_the_scorecard_scores_every_repeat(arms):
    import copy
    from dataclasses import replace

    runs = list(arms)
    for repeat, share in ((2, 0.30), (3, 0.01)):
        for arm in arms:
            again = copy.deepcopy(arm)
            again.name = f"{arm.name}.r{repeat}"
            again.summary = replace(arm.summary, repeat=repeat,
                                    gap_share=share if arm.name == "tuned" else arm.summary.gap_share)
            runs.append(again)
    card = scorecard.score(claims.load(SEED_CLAIMS), arms, runs)
    got = _by_id(card)
    assert card.repeats == 3 and got["tuned_faster"].repeats == 3
    tuned = got["tuned_not_input_bound"]
    assert tuned.interval[0] == 0.01 and tuned.interval[1] >= 0.30
    assert tuned.result == "inconclusive" and card.inconclusive >= 1
    assert "over 3 repeats" in card.headline and "inconclusive over the repeats: " in card.headline
    assert got["culprit_is_map"].result == "holds"  # the same key on every repeat


def test_the_claims_schema_names_every_metric_the_scorer_knows():
    import json

    schema = json.loads(claims.SCHEMA.read_text())
    assert sorted(schema["$defs"]["claim"]["properties"]["metric"]["enum"]) == sorted(claims.METRICS)
    for path in (REPO / "workflow" / "claims").glob("*.yaml"):  # every shipped file is valid
        assert claims.load(path).claims


def test_a_speedup_between_arms_that_differ_only_in_settings_is_read_paired_by_round():
    """The tuned arm's verification measured the baseline's setting beside its own in 4 rounds:
    the speedup is that paired ratio with its interval (not the arms' own windows, minutes
    apart), and the claim is judged on the whole interval; without such rounds it falls back
    to the windows and says they were not paired."""
    from records import make_diagnosis, make_recommendation, make_summary, make_verification

    from perfstudy.decide import verify

    key, reader = "pipeline.num_parallel_workers", "pipeline.reader_workers"
    base_set, tuned_set = {key: 1, reader: 1}, {key: 2, reader: 1}

    class Arm:
        def __init__(self, name, settings, step, checked=None):
            self.name = name
            self.summary = make_summary(arm=name, run=name, steady_step_ms=step,
                                        operator_settings=settings)
            self.diagnosis = make_diagnosis(recommendation=make_recommendation(verification=checked))

    def rounds(slow):  # the baseline's setting over the tuned one's, per round (host drift shared)
        own = [3300.0, 3000.0, 3600.0, 3200.0]
        return verify.verdict(make_verification(
            [(tuned_set, 3300.0), (base_set, 4500.0)], [own, [t * s for t, s in zip(own, slow, strict=True)]]))
    spec = ClaimsFile.of({"claims": [{"id": "fast", "claim": "x", "metric": "speedup", "arm": "tuned",
                        "against": "baseline", "at_least": 1.05}]})
    quiet = rounds([1.40, 1.42, 1.39, 1.41])
    arms = [Arm("baseline", base_set, 3680.0), Arm("tuned", tuned_set, 3338.0, quiet)]
    got = scorecard.score(spec, arms).claims[0]
    assert got.result == "holds" and got.measured == pytest.approx(1.405, abs=0.01)
    assert got.interval_kind.startswith("paired") and got.interval[0] > 1.05
    assert "paired by round in tuned's verification" in got.detail
    assert "(paired by round)" in scorecard.score(spec, arms).headline
    # noisy rounds straddling the bound: inconclusive, not "holds" on a point
    noisy = rounds([1.45, 0.85, 1.30, 0.90])
    arms[1] = Arm("tuned", tuned_set, 3338.0, noisy)
    card = scorecard.score(spec, arms)
    assert card.claims[0].result == "inconclusive"
    assert "; inconclusive: fast (" in card.headline and "over the repeats" not in card.headline  # one run
    # the baseline's own rounds measured the tuned setting: read inverted
    arms = [Arm("baseline", base_set, 3680.0, verify.verdict(make_verification(
        [(base_set, 4500.0), (tuned_set, 3300.0)],
        [[4400.0, 4300.0, 4500.0], [3150.0, 3070.0, 3210.0]]))), Arm("tuned", tuned_set, 3338.0)]
    got = scorecard.score(spec, arms).claims[0]
    assert got.measured == pytest.approx(4400 / 3143, rel=0.02) and "baseline's verification" in got.detail
    # both runs measured the pair (1.40x and 1.41x, two processes): one estimate over their 7
    # rounds, the spread between the runs a variance component; never the union of intervals
    baseline_alone = scorecard.score(spec, arms).claims[0]  # the baseline's 3 rounds
    tuned_alone = scorecard.score(spec, [Arm("baseline", base_set, 3680.0),
                                         Arm("tuned", tuned_set, 3338.0, quiet)]).claims[0]
    arms[1] = Arm("tuned", tuned_set, 3338.0, quiet)
    got = scorecard.score(spec, arms).claims[0]
    assert "2 runs' verifications" in got.detail and "pooled over their 7 rounds" in got.detail
    assert got.result == "holds" and "of 2 runs, pooled" in got.interval_kind
    assert got.interval[0] == pytest.approx(1.39, abs=0.03)
    # narrower than the noisier run's own interval and than the union of the two: the rounds of
    # both runs are evidence on one ratio (a union could only widen what either run said)
    width = got.interval[1] - got.interval[0]
    assert width < tuned_alone.interval[1] - tuned_alone.interval[0]
    assert width < (max(tuned_alone.interval[1], baseline_alone.interval[1])
                    - min(tuned_alone.interval[0], baseline_alone.interval[0]))
    strict = replace(spec, claims=[replace(spec.claims[0], at_least=1.405)])  # inside the pooled
    assert scorecard.score(strict, arms).claims[0].result == "inconclusive"  # interval: undecided
    # other data: not the same arm at another setting, so the windows, said unpaired
    arms[1].summary = make_summary(arm="tuned", run="tuned", steady_step_ms=3338.0,
                                   operator_settings=tuned_set, dataset_sha256="other")
    got = scorecard.score(spec, arms).claims[0]
    assert got.measured == pytest.approx(3680 / 3338) and "not paired" in got.detail


def test_the_advisors_pick_against_the_best_arm_is_read_paired_where_one_run_measured_both():
    """The baseline kept its setting (inconclusive) and the best arm ran 2 workers: its
    verification measured both settings in the same rounds, so the pick's distance to the best
    is that paired ratio with its interval (here straddling 10 %: inconclusive), not two
    windows minutes apart (which read 37.7 % in one run and 0 % in the one before)."""
    from records import make_advice, make_diagnosis, make_recommendation, make_summary, make_verification, one_map_model

    from perfstudy.decide import verify

    key, reader = "pipeline.num_parallel_workers", "pipeline.reader_workers"
    base_set, tuned_set = {key: 1, reader: 1}, {key: 2, reader: 1}
    own = [4400.0, 4000.0, 4800.0, 4200.0]

    def arms(slow):
        ver = make_verification([(base_set, 4400.0), (tuned_set, 3300.0)],
                                [own, [o / s for o, s in zip(own, slow, strict=True)]])
        rec = make_recommendation(action="inconclusive", settings=base_set, verification=verify.verdict(ver))

        class Arm:
            def __init__(self, name, settings, step, **summary):
                self.name = name
                self.summary = make_summary(arm=name, run=name, steady_step_ms=step, operator_settings=settings,
                                            num_parallel_workers={"effective": settings[key]}, **summary)
                self.diagnosis = None
        base, tuned = Arm("baseline", base_set, 5470.0, verification=ver), Arm("tuned", tuned_set, 3973.0)
        base.diagnosis = make_diagnosis(recommendation=rec,
                                        advisor=make_advice(one_map_model(key), pick={key: 2}))
        return [base, tuned]
    spec = ClaimsFile.of({"claims": [{"id": "pick", "claim": "x", "metric": "advisor_pick_vs_best", "arm": "baseline",
                        "at_most": 0.10}]})
    got = scorecard.score(spec, arms([1.05, 1.60, 1.20, 1.45])).claims[0]
    assert got.interval_kind.startswith("paired") and "paired by round in baseline's verification" in got.detail
    assert got.result == "inconclusive" and got.interval[0] < 0.10 < got.interval[1]
    got = scorecard.score(spec, arms([1.35, 1.38, 1.33, 1.36])).claims[0]  # the pick clearly slower
    assert got.result == "does not hold" and got.measured == pytest.approx(0.355, abs=0.02)


def test_the_remedy_is_read_paired_by_round_where_the_prepared_arm_measured_its_source(tmp_path):
    """The prepared arm measured its source's pipeline beside its own in interleaved rounds
    (perfstudy.run.remedy_rounds): its gain is that paired ratio with its interval, and the
    prediction's error is read against it (predicted / the source's step it was made from,
    against prepared / source paired), not against a window of another run minutes apart.
    Without the rounds, both fall back to the arms' own windows and say so."""
    from records import make_diagnosis, make_recommendation, make_summary

    from perfstudy.common.records import to_dict
    from perfstudy.measure.interference import Interference
    from perfstudy.measure.rounds import Rounds, Visit, Window
    from perfstudy.run.verify_record import AgainstSource

    dataset = read_json(REPO / "docs/records/runs/after-638deea/prepared/summary.json")["dataset"]
    sha = dataset["prepared"]["source_manifest"]["dataset_sha256"]
    settings = {"pipeline.num_parallel_workers": 1, "pipeline.reader_workers": 1}

    def against(prepared, source):  # per-round mean steps; the host's drift shared by both
        visits = [Visit(i, r, i, Window(step, 8, 4, 1.0), Interference(1.0, 0.0, 0.0))
                  for r, pair in enumerate(zip(prepared, source, strict=True))
                  for i, step in enumerate(pair)]
        found = Rounds(2, 1, [[0, 1]] * len(prepared), visits, "decided", 60.0, 60.0, 0.10)
        return to_dict(AgainstSource("/data/photos", sha, found, 60.0, 1.0))

    class Arm:
        def __init__(self, name, summary, diagnosis=None):
            self.name, self.summary, self.diagnosis, self.steps = name, summary, diagnosis, []

    prediction = {"megapixels_now": 16.0, "megapixels_prepared": 0.016, "rule": None,
                  "decoding_stage": "Map #2 [Decode]", "basis": "scaled", "binding_now": "pipeline",
                  "now": 600.0, "predictions": [{"settings": settings, "step_ms": 600.0,
                                                 "binding": "network", "levelled": False}]}
    source = Arm("baseline", make_summary(arm="baseline", run="baseline", steady_step_ms=3000.0,
                                          operator_settings=settings, dataset_sha256=sha,
                                          num_parallel_workers={"effective": 1}),
                 make_diagnosis(recommendation=make_recommendation(prepared_prediction=prediction)))

    def prepared(**more):  # its own window read 500 ms, minutes after the source's 3000 ms
        return Arm("prepared", make_summary(arm="prepared", run="prepared", steady_step_ms=500.0,
                                            images_per_s=64.0, operator_settings=settings,
                                            dataset={**dataset}, num_parallel_workers={"effective": 1},
                                            dataset_sha256="prepared-sha", **more))
    spec = ClaimsFile.of({"claims": [{"id": "five", "claim": "x", "metric": "prepared_speedup", "arm": "prepared",
                        "at_least": 5},
                       {"id": "predicted", "claim": "x", "metric": "prepared_prediction_error",
                        "arm": "prepared", "at_most": 0.15}]})
    own = [560.0, 620.0, 540.0, 600.0]
    arms = [source, prepared(against_source=against(own, [5.2 * o for o in own]))]
    got = _by_id(scorecard.score(spec, arms))
    assert got["five"].result == "holds" and got["five"].measured == pytest.approx(5.2, rel=0.01)
    assert got["five"].interval_kind.startswith("paired") and "paired by round in prepared's run" in got["five"].detail
    # predicted 600 against the source's 3000 ms (5.0x); measured 5.2x paired: +4 %, holds
    assert got["predicted"].result == "holds" and got["predicted"].measured == pytest.approx(0.04, abs=0.005)
    assert got["predicted"].interval_kind.startswith("paired")
    from perfstudy.decide import remedy_proof
    from perfstudy.decide.remedy_proof import read_remedies, write_remedies

    found = remedy_proof.evidence(arms)  # the record later stages read back (prepared.json)
    write_remedies(tmp_path, found)
    assert read_remedies(tmp_path) == found and found.of("prepared").paired.rounds == 4
    assert found.from_source("baseline").paired.error == pytest.approx(0.04, abs=0.005)
    said = " ".join(remedy_proof.lines(found))
    assert "paired by round in prepared's run" in said and "5.2x (" in said
    assert "against the paired ratio +4 %" in said
    # a noisy pairing straddling the bound: inconclusive, never "holds" on a point
    noisy = [5.0 * o * f for o, f in zip(own, [0.8, 1.3, 0.85, 1.25], strict=True)]
    got = _by_id(scorecard.score(spec, [source, prepared(against_source=against(own, noisy))]))
    assert got["five"].result == "inconclusive" and got["five"].interval[0] < 5 < got["five"].interval[1]
    # no rounds against the source: the arms' own windows (6.0x, +20 %), said unpaired
    got = _by_id(scorecard.score(spec, [source, prepared()]))
    assert "not paired" in got["five"].detail and "not paired" in got["predicted"].detail
    assert got["predicted"].measured == pytest.approx(0.20, abs=0.01) and got["predicted"].result == "does not hold"
    # another model on the same source at the same settings is not its source arm (a study of
    # two models pairs each prepared arm with its own model's): only the same training pairs
    other_model = Arm("mobilenet", make_summary(
        arm="mobilenet", run="mobilenet", steady_step_ms=1900.0, operator_settings=settings,
        dataset_sha256=sha, num_parallel_workers={"effective": 1},
        factories={"model": "mindcv.models.create_model", "model_name": "mobilenet", "pipeline":
                   "perfstudy.run.pipeline.case_study"}))
    mine = prepared()
    assert remedy_proof.pair(mine, [other_model, mine]) is None
    assert remedy_proof.pair(mine, [other_model, source, mine]) is source


def test_the_advisors_prediction_of_another_arm_is_read_against_the_paired_speedup():
    """The advisor predicted the tuned step from the baseline's run; the tuned arm's own window
    ran minutes later on a host that drifted. Where the two settings were measured paired by
    round, the error is the predicted speedup (prediction / the baseline's step it was made
    from) against the paired one, with its interval; else the windows, said unpaired."""
    from records import make_advice, make_diagnosis, make_recommendation, make_summary, make_verification, one_map_model

    from perfstudy.decide import verify
    from perfstudy.decide.whatif import predict

    key, reader = "pipeline.num_parallel_workers", "pipeline.reader_workers"
    base_set, tuned_set = {key: 1, reader: 1}, {key: 2, reader: 1}
    advice = make_advice(one_map_model(key))

    class Arm:
        def __init__(self, name, settings, step, diagnosis):
            self.name, self.diagnosis = name, diagnosis
            self.summary = make_summary(arm=name, run=name, steady_step_ms=step, operator_settings=settings,
                                        num_parallel_workers={"effective": settings[key]})
    own = [1200.0, 1100.0, 1300.0, 1150.0]
    checked = verify.verdict(make_verification([(tuned_set, 600.0), (base_set, 1200.0)],
                                                     [own, [1.8 * o for o in own]]))
    base = Arm("baseline", base_set, 1000.0, make_diagnosis(advisor=advice))
    tuned = Arm("tuned", tuned_set, 800.0, make_diagnosis(recommendation=make_recommendation(verification=checked)))
    predicted = predict(advice, tuned_set).step_ms
    spec = ClaimsFile.of({"claims": [{"id": "p", "claim": "x", "metric": "prediction_error", "arm": "tuned",
                        "against": "baseline", "at_most": 0.2}]})
    got = scorecard.score(spec, [base, tuned]).claims[0]
    assert got.interval_kind.startswith("paired") and "paired by round in tuned's verification" in got.detail
    assert got.measured == pytest.approx(abs(predicted / 1000.0 * 1.8 - 1), abs=0.01)
    assert got.interval[0] <= got.measured <= got.interval[1]
    tuned.diagnosis = make_diagnosis()  # no rounds paired the settings: the windows, said so
    got = scorecard.score(spec, [base, tuned]).claims[0]
    assert got.measured == pytest.approx(abs(predicted - 800.0) / 800.0) and "not paired" in got.detail


def test_a_share_of_one_window_is_judged_on_its_batch_means_interval():
    """A gap share (or the share of the allowed speedup) comes from one window whose steps are
    not independent; the claim is judged on the interval of the window's batch means, so a
    share near its bound reads inconclusive rather than holding in one run and failing in the
    next (cpu_demo's tuned arm read 8.6 % against a 5 % bound, its batches 0 % to 18 %)."""
    from records import make_summary

    class Arm:
        def __init__(self, name, gaps, steps):
            self.name, self.diagnosis = name, None
            self.steps = pd.DataFrame({"phase": "measured", "gap_ms": gaps, "step_ms": steps})
            self.summary = make_summary(arm=name, run=name, gap_share=sum(gaps) / sum(steps),
                                        steady_step_ms=float(np.median(steps)))

    spec = ClaimsFile.of({"claims": [{"id": "c", "claim": "x", "metric": "gap_share", "arm": "tuned",
                        "at_most": 0.05}]})
    bursty = [1200.0, 1, 500, 1, 1, 700, 1, 1, 560, 5, 1, 5, 1, 1, 1, 1, 1, 850, 50, 690, 1, 70, 1,
              1080, 220, 870, 830, 910]
    steps = [3000.0 + g for g in bursty]
    got = scorecard.score(spec, [Arm("tuned", bursty, steps)]).claims[0]
    assert got.result == "inconclusive" and got.interval[0] < 0.05 < got.interval[1]
    assert got.interval_kind.startswith("batch means") and "5 batches" in got.measured_text
    quiet = [10.0 + (i % 3) for i in range(28)]  # 0.4 % of every batch: holds on the whole interval
    got = scorecard.score(spec, [Arm("tuned", quiet, [3000.0 + g for g in quiet])]).claims[0]
    assert got.result == "holds" and got.interval[1] < 0.05
    short = Arm("tuned", bursty[:6], steps[:6])  # too few steps for batches: the point, as before
    assert scorecard.score(spec, [short]).claims[0].interval is None


def test_a_ratio_each_repeat_measured_in_its_rounds_is_pooled_over_the_repeats():
    """Two repeats whose rounds read 1.39x (1.04-1.85) and 1.33x (1.07-1.65): one estimate over
    their 6 rounds (it holds at 1.05x), where the union of the two intervals could not decide."""
    from perfstudy.decide.paired import Paired

    claim = Claim(id="fast", claim="x", metric="speedup", arm="tuned", against="baseline", at_least=1.05)
    got = scorecard.judge(claim, [Paired(1.39, 1.04, 1.85, 3, 0.95), Paired(1.33, 1.07, 1.65, 3, 0.95)],
                          "times")
    assert got.result == "holds" and got.repeats == 2 and got.values == [1.39, 1.33]
    assert "6 interleaved rounds of 2 runs, pooled" in got.interval_kind and got.interval[0] > 1.05


def test_a_remedys_claimed_bound_is_told_to_its_arms_rounds():
    """The claims size the rounds that judge them: the seed case's "5x" on the prepared arm's
    gain against its source becomes that arm's verify.against_source_bounds (and nothing for
    an arm no such claim reads), composed into its config as the workflow does."""
    from perfstudy.orchestrate.study import compose_arm
    from perfstudy.orchestrate.workflow_config import Workflow

    assert claims.rounds_overrides(SEED_CLAIMS, "prepared") == [
        "verify.against_source_bounds=[5]", "verify.against_source_prediction_bound=0.15"]
    assert claims.rounds_overrides(SEED_CLAIMS, "tuned") == []
    assert claims.rounds_overrides(None, "prepared") == []
    flow = Workflow.of(yaml.safe_load((REPO / "workflow" / "config.yaml").read_text()))
    assert list(compose_arm(flow, "seed_case", "prepared", SEED_CLAIMS).verify.against_source_bounds) == [5.0]
    assert list(compose_arm(flow, "seed_case", "tuned", SEED_CLAIMS).verify.against_source_bounds) == []


def test_a_claimed_prediction_bound_is_told_to_the_predicting_arms_rounds():
    """advisor_predicts_tuned (|error| <= 20 %, `against: baseline`) judges the prediction the
    baseline's model makes: the baseline's verification gets verify.prediction_bound=0.2 and
    measures its pick until that error is decided; the predicted arm's rounds get nothing."""
    from perfstudy.orchestrate.study import compose_arm
    from perfstudy.orchestrate.workflow_config import Workflow

    assert claims.rounds_overrides(SEED_CLAIMS, "baseline") == ["verify.prediction_bound=0.2"]
    flow = Workflow.of(yaml.safe_load((REPO / "workflow" / "config.yaml").read_text()))
    assert compose_arm(flow, "seed_case", "baseline", SEED_CLAIMS).verify.prediction_bound == 0.2
    assert compose_arm(flow, "seed_case", "tuned", SEED_CLAIMS).verify.prediction_bound == 0.0


def test_the_share_of_the_allowed_speedup_reads_the_arms_own_windows_over_its_rounds():
    """A pipeline that cycles holds one or two cycles in a training window (cpu_demo's tuned
    arm read 1289 ms, its whole cycle 1525 ms, its CPU floor 1531 ms): the claim reads the
    windows its verification measured at its own setting, one a round, with their interval;
    without them, the training window's batch means as before."""
    from types import SimpleNamespace

    from records import make_summary

    from perfstudy.measure.rounds import Rounds, Visit, Window

    def arm(name, own=()):
        visits = [Visit(0, r, 0, Window(ms, 20, 16, 30.0), None) for r, ms in enumerate(own)]
        rounds = Rounds(1, 0, [[0]] * len(own), visits, "decided", 1.0, None, 0.10)
        summary = make_summary(arm=name, run=name, steady_step_ms=1289.0 if own else 2000.0,
                               floor_ms=1531.0, binding_floor="cpu")
        summary = replace(summary, verification=SimpleNamespace(rounds=rounds) if own else None)
        return SimpleNamespace(name=name, diagnosis=None, steps=None, summary=summary)

    spec = ClaimsFile.of({"claims": [{"id": "c", "claim": "x", "metric": "speedup_of_allowed",
                                      "arm": "tuned", "against": "baseline", "at_least": 0.8}]})
    got = scorecard.score(spec, [arm("baseline"), arm("tuned", [1540.0, 1500.0, 1560.0, 1525.0])]).claims[0]
    assert got.measured == pytest.approx(1531.0 / (1540.0 * 1500.0 * 1560.0 * 1525.0) ** 0.25)
    assert got.result == "holds" and 0.8 < got.interval[0] < got.measured < got.interval[1]
    assert "4 rounds" in got.measured_text and "own setting" in got.interval_kind
    assert "training window read 1289 ms" in got.detail
    far = scorecard.score(spec, [arm("baseline"), arm("tuned", [2100.0, 2000.0, 2050.0])]).claims[0]
    assert far.result == "does not hold"  # 1531 / ~2050: 75 %, the whole interval below 80 %
    alone = scorecard.score(spec, [arm("baseline"), arm("tuned")]).claims[0]
    assert alone.interval is None and "floor allows" in alone.detail  # no rounds: the window


def test_the_share_of_the_allowed_speedup_pools_every_run_that_measured_the_arms_setting():
    """The baseline's rounds measure the tuned arm's setting as a candidate: its windows there
    are evidence about the tuned step too. Each run's rounds give an estimate, pooled with the
    spread between the runs as a variance component: two agreeing runs of 3 rounds narrow the
    interval past the bound where the tuned arm's own 3 rounds could not decide; a run of
    another dataset (not only settings differ) is never pooled."""
    from types import SimpleNamespace

    from records import make_summary

    from perfstudy.measure.rounds import Rounds, Visit, Window

    tuned_settings = {"pipeline.num_parallel_workers": 2}

    def arm(name, series, settings, plan_settings=(), sha="d"):
        visits = [Visit(s, r, 0, Window(ms, 20, 16, 30.0), None)
                  for s, windows in enumerate(series) for r, ms in enumerate(windows)]
        rounds = Rounds(len(series), 0, [list(range(len(series)))] * len(series[0]), visits, "decided",
                        1.0, None, 0.10)
        plan = [SimpleNamespace(rank=i, settings=p, label=str(p))
                for i, p in enumerate([settings, *plan_settings])]
        summary = make_summary(arm=name, run=name, steady_step_ms=1289.0, floor_ms=1531.0,
                               binding_floor="cpu", operator_settings=settings, dataset_sha256=sha)
        summary = replace(summary, verification=SimpleNamespace(rounds=rounds, plan=plan))
        return SimpleNamespace(name=name, diagnosis=None, steps=None, summary=summary)

    spec = ClaimsFile.of({"claims": [{"id": "c", "claim": "x", "metric": "speedup_of_allowed",
                                      "arm": "tuned", "against": "baseline", "at_least": 0.8}]})
    tuned = arm("tuned", [[1640.0, 1560.0, 1800.0]], tuned_settings)
    alone = scorecard.score(spec, [arm("baseline", [[3000.0] * 3], {}), tuned]).claims[0]
    assert alone.result == "inconclusive" and "3 rounds" in alone.measured_text
    base = arm("baseline", [[3000.0, 3100.0, 2950.0], [1600.0, 1680.0, 1720.0]], {}, [tuned_settings])
    both = scorecard.score(spec, [base, tuned]).claims[0]
    assert both.result == "holds" and "6 rounds of 2 runs" in both.measured_text
    assert both.interval[1] - both.interval[0] < alone.interval[1] - alone.interval[0]
    assert "baseline's 3 (1600, 1680, 1720 ms)" in both.detail and "pooled (random effects)" in both.interval_kind
    other = arm("baseline", [[3000.0, 3100.0, 2950.0], [1600.0, 1680.0, 1720.0]], {}, [tuned_settings], sha="e")
    assert scorecard.score(spec, [other, tuned]).claims[0].measured_text == alone.measured_text


def test_a_gap_share_pools_the_rounds_windows_counted_over_whole_pipeline_cycles():
    """The baseline's rounds measure its own setting in windows counted between two steps that
    waited (whole pipeline cycles), each a gap share of the same pipeline: pooled with the
    training window's batches, a share near its bound is decided where the window alone was
    not (55.9 %, 49.4-62.8 % against >= 50 % in one make run). A window counted by another rule
    (a pipeline that keeps up: not cut at waits) is never pooled."""
    from types import SimpleNamespace

    from records import make_summary

    from perfstudy.measure.rounds import Rounds, Visit, Window

    gaps = [1500.0, 600, 1400, 700, 1300, 800, 1450, 650, 1350, 750] * 2 + [1100.0] * 5
    steps = [2000.0] * len(gaps)

    def baseline(shares, rule=f"12 batches between the arrivals of steps 2 and 14: {WAITED_CYCLES}"):
        visits = [Visit(0, r, 0, Window(2000.0, 16, 12, 30.0, drain_rule=rule, gap_share=g), None)
                  for r, g in enumerate(shares)]
        rounds = Rounds(1, 0, [[0]] * len(shares), visits, "decided", 1.0, None, 0.10)
        summary = make_summary(arm="baseline", run="baseline", gap_share=sum(gaps) / sum(steps),
                               steady_step_ms=2000.0)
        summary = replace(summary, verification=SimpleNamespace(rounds=rounds, plan=[]) if shares else None)
        frame = pd.DataFrame({"phase": "measured", "gap_ms": gaps, "step_ms": steps})
        return SimpleNamespace(name="baseline", diagnosis=None, steps=frame, summary=summary)

    spec = ClaimsFile.of({"claims": [{"id": "c", "claim": "x", "metric": "gap_share", "arm": "baseline",
                                      "at_least": 0.5}]})
    alone = scorecard.score(spec, [baseline([])]).claims[0]
    assert alone.result == "inconclusive" and alone.interval_kind.startswith("batch means")
    pooled = scorecard.score(spec, [baseline([0.55, 0.57, 0.56, 0.58])]).claims[0]
    assert pooled.result == "holds" and pooled.interval[0] > 0.5
    assert "pooled (random effects)" in pooled.interval_kind and "batches and rounds" in pooled.measured_text
    assert "baseline's 4 (55 %, 57 %, 56 %, 58 %)" in pooled.detail
    kept_up = scorecard.score(spec, [baseline([0.55, 0.57, 0.56, 0.58], rule="the mean of the steps")]).claims[0]
    assert kept_up.measured_text == alone.measured_text
    # whole buffer cycles of a pipeline that keeps up are whole cycles too: pooled
    cycles = scorecard.score(spec, [baseline([0.55, 0.57, 0.56, 0.58],
                                             rule=f"12 steps between steps 3 and 15: {BUFFER_CYCLES}")]).claims[0]
    assert cycles.measured_text == pooled.measured_text


def test_a_gap_share_pools_every_window_counted_over_whole_cycles_not_only_those_that_waited():
    """The tuned arm on 2 cores sits on the edge: of its setting's windows some waited (counted
    between two waits: 12 %, 6 %), some kept up and cycled (counted between two full buffers:
    3 %, and the baseline's 2 %, 0.3 %). Keeping only the first kind read the share high."""
    from types import SimpleNamespace

    from perfstudy.decide.claims import _cycle_shares
    from perfstudy.measure.rounds import Rounds, Visit, Window

    waited, full, mean = (f"x: {WAITED_CYCLES}", f"x: {BUFFER_CYCLES}",
                          "1 of 12 steps waited: the pipeline keeps up; the mean of the steps, no whole "
                          "buffer cycle within the window")
    windows = [(0.119, waited), (0.055, waited), (0.034, full), (0.0, full), (0.2, mean)]
    visits = [Visit(0, r, 0, Window(1700.0, 20, 12, 30.0, drain_rule=rule, gap_share=g), None)
              for r, (g, rule) in enumerate(windows)]
    rounds = Rounds(1, 0, [[0]] * len(visits), visits, "decided", 1.0, None, 0.10)
    arm = SimpleNamespace(name="tuned", summary=SimpleNamespace(
        verification=SimpleNamespace(rounds=rounds, plan=[]), operator_settings={}))
    ((name, shares),) = _cycle_shares(arm, {"tuned": arm})
    assert name == "tuned" and shares == [0.119, 0.055, 0.034, 0.0]  # a share of 0 counts too


def test_gap_shares_are_pooled_on_their_own_scale_never_their_logarithm():
    """A window's share near 0 beside rounds' windows at 6-12 % (the tuned arm, 2026-12-07):
    pooled in logs that read 1.1 % (0.0-185.5 %); a share is a fraction of time, pooled as one."""
    from perfstudy.decide.paired import Paired, pool_shares, share_over_rounds

    window = Paired(0.001, 0.0, 0.004, 5, 0.95, basis="batches")
    rounds = share_over_rounds([0.12, 0.06])
    assert rounds.value == pytest.approx(0.09)
    both = pool_shares([window, rounds])
    assert 0.0 <= both.low <= both.value <= both.high <= 1.0
    assert 0.001 < both.value < 0.09 and both.runs == 2 and both.rounds == 7
    alike = pool_shares([Paired(0.62, 0.60, 0.64, 5, 0.95), share_over_rounds([0.61, 0.59, 0.65])])
    assert alike.value == pytest.approx(0.62, abs=0.01) and alike.high - alike.low < 0.06


def test_a_claim_on_the_remedys_prediction_keeps_its_rounds_going_until_decided(tmp_path):
    """prepared_predicted (the baseline's prediction of the prepared step within 15 %): the
    prepared arm is told the bound and its source run (the earlier run training the same
    pipeline on the source JPEGs: the baseline, whose analysis it trains after); at the run the
    bound becomes the two gains at which the claim turns, read from the source's diagnosis and
    summary, beside the claims' "5x". An arm without such a claim, or whose rounds against the
    source are off, gets neither."""
    import json

    from records import make_diagnosis, make_summary

    from perfstudy.common.records import to_dict
    from perfstudy.decide.remedy_proof import prediction_bounds
    from perfstudy.orchestrate.study import compose_arm
    from perfstudy.orchestrate.workflow_config import Workflow

    flow = Workflow.of(yaml.safe_load((REPO / "workflow" / "config.yaml").read_text()))
    prepared = compose_arm(flow, "seed_case", "prepared", SEED_CLAIMS, device_here=False)
    assert prepared.verify.against_source_prediction_bound == 0.15
    assert prepared.paths.source_run == f"{flow.results}/runs/seed_case/baseline"
    for arm in ("baseline", "tuned", "prepared_tuned"):  # prepared_tuned: against_source=false
        assert compose_arm(flow, "seed_case", arm, SEED_CLAIMS, device_here=False).paths.source_run == ""

    source = tmp_path / "baseline"
    source.mkdir()
    summary = make_summary(steady_step_ms=2900.0,
                           operator_settings={"pipeline.num_parallel_workers": 1,
                                              "pipeline.reader_workers": 1})
    (source / "summary.json").write_text(json.dumps(to_dict(summary)))
    assert prediction_bounds(source, 0.15) == []  # no diagnosis yet: nothing to decide
    row = {"settings": {"pipeline.num_parallel_workers": 1, "pipeline.reader_workers": 1},
           "step_ms": 500.0, "binding": "cpu", "levelled": False}
    other = {**row, "settings": {"pipeline.num_parallel_workers": 2, "pipeline.reader_workers": 1},
             "step_ms": 400.0}
    predicted = {"megapixels_now": 16.0, "megapixels_prepared": 0.02, "rule": "r",
                 "decoding_stage": "map", "binding_now": "pipeline", "now": 500.0,
                 "predictions": [other, row]}
    diagnosis = make_diagnosis(recommendation={"prepared_prediction": predicted})
    (source / "diagnosis.json").write_text(json.dumps(to_dict(diagnosis)))
    # at the source's own setting (1 worker): predicted 500 ms against its 2900 ms, 5.8x
    assert prediction_bounds(source, 0.15) == pytest.approx([5.8 * 0.85, 5.8 * 1.15])
