"""The study's history read back from a real SQLite store, and each claim judged across it."""

import dataclasses

from perfstudy.common.records import from_dict
from perfstudy.decide import scorecard
from perfstudy.decide.claims import ClaimsFile
from perfstudy.decide.scorecard import ClaimResult, History, PastClaim, PastRun, Scorecard
from perfstudy.present import history, mlflow_store, tracking

SPEC = ClaimsFile.of({"claims": [
    {"id": "gap", "claim": "The tuned arm is not input-bound.", "metric": "gap_share", "arm": "tuned",
     "at_most": 0.05},
    {"id": "fast", "claim": "The tuned arm is faster.", "metric": "speedup", "arm": "tuned",
     "against": "baseline", "at_least": 1.05},
    {"id": "culprit", "claim": "The map is the culprit.", "metric": "culprit_key", "arm": "baseline",
     "equals": "pipeline.num_parallel_workers"},
]})
MACHINE = "AMD EPYC, 2 CPUs"


def _card(gap, fast, culprit="pipeline.num_parallel_workers"):
    def entry(cid, value, kind):
        claim = next(c for c in SPEC.claims if c.id == cid)
        return from_dict(ClaimResult, {
            "id": cid, "claim": claim.claim, "source": "study", "metric": claim.metric,
            "arm": "a", "against": None, "check": "", "published": None, "published_text": "-",
            "note": "", "detail": None, **dataclasses.asdict(scorecard.judge(claim, [value], kind))})
    return Scorecard(title="", reference="", claims=[entry("gap", gap, "percent"),
                     entry("fast", fast, "times"), entry("culprit", culprit, "text")], scored=3,
                     held=2, inconclusive=0, not_scored=0, repeats=1, headline="2 of 3 claims hold.")


def _log_point(client, parent, card, stamp):
    metrics = history.result_metrics(card)
    for c in card.claims:
        if not isinstance(c.measured, str):
            metrics.update({f"claim/{c.id}/median": c.measured, f"claim/{c.id}/low": 0.9 * c.measured,
                            f"claim/{c.id}/high": 1.1 * c.measured})
    tracking.log_study(client, parent, metrics=metrics, tags={}, artifacts=[], stamp_ms=stamp)


def _store(tmp_path, ctx, machine=MACHINE, instance="i1"):
    uri = mlflow_store.default_uri(tmp_path)
    client = mlflow_store.client_for(uri)
    exp = mlflow_store.ensure_experiment(client, "perfstudy/s", uri)
    identity = {k: v for k, v in ctx.items() if k != "perfstudy.machine"}
    parent = mlflow_store.ensure_study_run(client, exp, "s", instance, {}, identity=identity)
    client.set_tag(parent, "perfstudy.machine", machine)
    return uri, client, parent


def _ctx(tmp_path, configs=None):
    claims_file = tmp_path / "claims.yaml"
    claims_file.write_text("claims: []\n")
    return history.context("s", claims_file, configs or {"baseline": "h1", "tuned": "h2"}, MACHINE)


def test_a_second_run_sees_the_first_and_a_straddling_claim_is_fragile(tmp_path):
    ctx = _ctx(tmp_path)
    uri, client, parent = _store(tmp_path, ctx)
    _log_point(client, parent, _card(gap=0.027, fast=1.50), stamp=1_000)
    _log_point(client, parent, _card(gap=0.027, fast=1.50), stamp=1_000)  # logged again: no point
    found = history.read(uri, "perfstudy/s", ctx, ["gap", "fast", "culprit"])
    assert found.error is None and [r.stamp for r in found.records] == [1_000]
    assert found.records[0].claims["gap"] == PastClaim(result="holds", value=0.027, low=0.9 * 0.027,
                                                       high=1.1 * 0.027)

    card = scorecard.with_history(_card(gap=0.136, fast=1.48), SPEC, found, MACHINE)
    by_id = {c.id: c.history for c in card.claims}
    assert card.history.runs == 2
    assert by_id["gap"].text.startswith("held in 1 of 2 runs on this machine kind; fragile")
    assert by_id["gap"].fragile and "verdict changed" in by_id["gap"].why
    assert (by_id["fast"].held, by_id["fast"].runs, by_id["fast"].fragile) == (2, 2, False)
    assert by_id["culprit"].text == "held in 2 of 2 runs on this machine kind"
    assert card.fragile == ["gap"] and "Fragile across the 2 recorded runs" in card.headline
    # each run's point, oldest first, this one last: what the claim-history figure draws
    gap = by_id["gap"].points
    assert [(p.result, p.value) for p in gap] == [("holds", 0.027), ("does not hold", 0.136)]
    assert (gap[0].low, gap[0].high) == (0.9 * 0.027, 1.1 * 0.027) and gap[1].low == 0.136
    assert [p.value for p in by_id["culprit"].points] == [None, None]


def test_the_claim_history_figure_draws_each_numeric_claim_beside_its_bound(tmp_path):
    import matplotlib.image

    from perfstudy.present import figures

    found = History(records=[PastRun(stamp=1, machine=MACHINE, claims={
        "gap": PastClaim(result="holds", value=0.01, low=0.0, high=0.02),
        "fast": PastClaim(result="inconclusive", value=1.2, low=1.0, high=1.4)})], machine=MACHINE)
    card = scorecard.with_history(_card(gap=0.02, fast=1.3), SPEC, found, MACHINE)
    drawn = figures.figure_claim_history(card, tmp_path / "history.png")
    assert drawn is not None and matplotlib.image.imread(drawn).shape[0] > 150
    text_only = Scorecard(title="", reference="", claims=[c for c in card.claims if c.id == "culprit"],
                          scored=1, held=1, inconclusive=0, not_scored=0, repeats=1, headline="")
    assert figures.figure_claim_history(text_only, tmp_path / "none.png") is None
    assert matplotlib.image.imread(tmp_path / "none.png").shape[0] < 200  # says why, for the DAG


def test_a_margin_inside_the_spread_across_runs_is_fragile_even_when_both_runs_hold(tmp_path):
    found = History(records=[PastRun(stamp=1, machine=MACHINE,
                                     claims={"gap": PastClaim(result="holds", value=0.001),
                                             "fast": PastClaim(result="holds", value=1.9)})],
                    machine=MACHINE)
    card = scorecard.with_history(_card(gap=0.045, fast=1.06), SPEC, found, MACHINE)
    by_id = {c.id: c.history for c in card.claims}
    assert by_id["gap"].fragile and "4.4 points" in by_id["gap"].why  # spread 4.4, margin 0.5
    assert by_id["fast"].fragile and "0.01x" in by_id["fast"].why
    assert not by_id["culprit"].fragile


def test_other_machine_kinds_and_other_configs_are_not_mixed_in(tmp_path):
    ctx = _ctx(tmp_path)
    uri, client, parent = _store(tmp_path, ctx, machine="Intel Xeon, 16 CPUs")
    _log_point(client, parent, _card(gap=0.30, fast=1.01), stamp=5)
    other = _ctx(tmp_path, {"baseline": "h1", "tuned": "CHANGED"})
    _, _, parent2 = _store(tmp_path, other, instance="i1")
    assert parent2 != parent  # other configs, same folder: a new parent run, the old one kept
    _log_point(client, parent2, _card(gap=0.30, fast=1.01), stamp=6)

    found = history.read(uri, "perfstudy/s", ctx, ["gap", "fast", "culprit"])
    assert [r.machine for r in found.records] == ["Intel Xeon, 16 CPUs"]
    card = scorecard.with_history(_card(gap=0.01, fast=1.5), SPEC, found, MACHINE)
    gap = card.claims[0].history
    assert gap.runs == 1 and not gap.fragile
    assert gap.text == ("the first recorded run on this machine kind "
                           "(1 run(s) on other machine kinds not counted)")


def test_no_store_yet_is_no_history_and_is_not_created(tmp_path):
    ctx = _ctx(tmp_path)
    uri = mlflow_store.default_uri(tmp_path / "none")
    empty = history.read(uri, "perfstudy/s", ctx, ["gap"])
    assert empty.records == [] and empty.error is None
    assert not mlflow_store.sqlite_file(uri).exists()


def test_an_unreachable_server_is_one_sentence_not_a_failure(tmp_path):
    found = history.read("http://127.0.0.1:9", "perfstudy/s", _ctx(tmp_path), ["gap"])
    assert found.records == [] and "cannot be reached" in found.error


def test_the_runs_own_point_is_not_counted_twice(tmp_path):
    ctx = _ctx(tmp_path)
    uri, client, parent = _store(tmp_path, ctx)
    _log_point(client, parent, _card(gap=0.02, fast=1.5), stamp=77)
    assert history.read(uri, "perfstudy/s", ctx, ["gap"], exclude_stamp=77).records == []
