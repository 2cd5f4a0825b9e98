"""The real DAG at smoke size: real MindSpore training, a real MLflow store, a real report."""

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import REPO, SNAKEMAKE, env_without_mlflow

from perfstudy.decide.diagnosis import verdict_label
from perfstudy.decide.remedy_proof import read_remedies

# `study`: the seed case at smoke size, trained once per session (conftest.py)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("smoke_study")]  # one worker builds the shared study
ARMS = ("baseline", "tuned", "prepared", "prepared_tuned")

SUMMARY_KEYS = {"study", "arm", "steps_measured", "steps_excluded", "step_ms", "gap_ms",
                "fwd_bwd_ms", "tail_ms", "gap_share", "steady_step_ms", "images_per_s",
                "num_parallel_workers", "config_hash", "dataset_sha256", "git_sha"}


def test_every_arm_has_its_config_steps_and_summary(study):
    for arm in ARMS:
        run = study / "runs" / "seed_case" / arm
        summary = json.loads((run / "summary.json").read_text())
        assert SUMMARY_KEYS <= set(summary)
        assert summary["arm"] == arm
        for part in ("step_ms", "gap_ms", "fwd_bwd_ms", "tail_ms"):
            assert set(summary[part]) == {"median", "p10", "p90", "mean"}
        assert 0 <= summary["gap_share"] <= 1
        assert summary["steps_measured"] + summary["steps_excluded"] == 8
        assert summary["steps_profiled"] == 4  # after the measured ones: profiling never touches them
        assert summary["profiled_window"]["steps"] == 4
        steps = pd.read_csv(run / "steps.csv")
        assert list(steps.columns[:8]) == ["step", "phase", "gap_ms", "fwd_bwd_ms", "tail_ms",
                                           "step_ms", "loss", "images_per_s"]
        # then a fresh pipeline with the profilers: its start-up step and 4 profiled steps
        assert len(steps) == 13
        assert list(steps["phase"].iloc[8:]) == ["profile_startup"] + ["profiled"] * 4
        assert steps["loss"].notna().all()
        measured = steps[steps["phase"] == "measured"]
        assert summary["steady_step_ms"] == pytest.approx(measured["step_ms"].mean())
    tuned = json.loads((study / "runs/seed_case/tuned/summary.json").read_text())
    assert tuned["num_parallel_workers"]["requested"] == 12
    assert tuned["num_parallel_workers"]["effective"] <= tuned["environment"]["usable_cpus"]
    base = json.loads((study / "runs/seed_case/baseline/summary.json").read_text())
    assert base["num_parallel_workers"]["requested"] is None
    assert base["num_parallel_workers"]["effective"] == 1


def test_every_run_records_its_environment_and_the_report_lists_it(study):
    from perfstudy.common.provenance import git_state

    for arm in ARMS:
        run = study / "runs" / "seed_case" / arm
        env = json.loads((run / "environment.json").read_text())
        assert any(line.startswith("mindspore==") for line in env["pip_freeze"])
        assert env["mindspore_build"]["version"] == "2.10.0" and env["mindspore_build"]["commit"]
        assert env["cpu_count"] >= 1 and env["cpu_model"] and env["python"] and env["os"]
        # device=cpu: the accelerator's fields are there, named, and empty
        assert env["device"] == {"target": "CPU", "model": None, "count": None, "driver": None,
                                 "runtime": None, "runtime_version": None, "source": None}
        summary = json.loads((run / "summary.json").read_text())
        assert summary["git_sha"] == git_state()["git_sha"]
        assert isinstance(summary["git_dirty"], bool)
        assert len(summary["config_hash"]) >= 12 and len(summary["dataset_sha256"]) == 64
    md = (study / "report" / "seed_case" / "report.md").read_text()
    footer = md.split("Provenance: ", 1)[1]
    assert summary["git_sha"] in footer and summary["dataset_sha256"][:16] in footer
    assert f"tuned {summary['config_hash']}" in footer
    assert "MindSpore 2.10.0 (commit " in footer and "CPUs" in footer


def test_report_has_published_and_measured_numbers_and_figures(study):
    report = study / "report" / "seed_case"
    table = pd.read_csv(report / "comparison.csv")
    assert set(table["source"]) == {"published", "measured"}
    assert set(table[table["source"] == "measured"]["arm"]) == set(ARMS)
    published = table[(table["source"] == "published") & (table["arm"] == "tuned")].iloc[0]
    assert published["steady_step_ms"] == pytest.approx(18.07)
    for name in ("step_breakdown.png", "step_time.png", "published_vs_measured.png",
                 "step_distribution.png", "verified.png", "claim_history.png"):
        assert (report / "figures" / name).read_bytes()[:4] == b"\x89PNG"
    md = (report / "report.md").read_text()
    assert "72.8" in md or "73" in md
    assert "baseline (" in md and "tuned (" in md
    for arm in ARMS:
        for figure in ("queues", "verified", "steps"):  # each arm's own, for its MLflow run
            assert (report / "figures" / f"{figure}_{arm}.png").read_bytes()[:4] == b"\x89PNG"
    assert "## Diagnosis, side by side" in md
    assert "## Step trace: op timeline vs host timers" in md
    assert "Map #2 [RandomCropDecodeResize" in md  # operators named as a user knows them
    html = (report / "report.html").read_text()
    # 3 + 4 queue plots + the scaling figure + the step distribution + the claims' history (+
    # the forest plot of the verified candidates when a candidate was measured)
    verified = "## The verified candidates" in md
    assert html.count("data:image/png;base64,") == 10 + verified
    assert not verified or any(json.loads((study / "runs" / "seed_case" / arm / "summary.json")
                                          .read_text())["verification"]["plan"] for arm in ARMS)
    assert (report / "figures" / "scaling.png").read_bytes()[:4] == b"\x89PNG"
    assert "## What-if advisor: predicted from one profiled run" in md
    assert "| baseline | 1 |" in md  # predicted against measured, per arm


def test_the_report_scores_every_claim_of_the_study(study):
    card = json.loads((study / "report/seed_case/scorecard.json").read_text())
    spec = yaml.safe_load((REPO / "workflow/claims/seed_case.yaml").read_text())
    assert [c["id"] for c in card["claims"]] == [c["id"] for c in spec["claims"]]
    # every arm ran, so every claim is measured, none skipped: it holds or does not, or (a
    # ratio read paired by round, or a share of one window read on its batch means, judged on
    # its interval) is inconclusive
    assert card["not_scored"] == 0 and card["scored"] + card["inconclusive"] == len(spec["claims"])
    for claim in card["claims"]:
        assert claim["passed"] is {"holds": True, "does not hold": False}.get(claim["result"])
        if claim["result"] == "inconclusive":
            # judged on an interval, which says what it is over (a pair's rounds, a window's
            # batches, the rounds' windows at one setting; pooled runs say so)
            assert claim["interval"] and any(w in claim["interval_kind"] for w in ("rounds", "batches"))
            assert claim["metric"] in (
                "speedup", "advisor_pick_vs_best", "prediction_error", "prepared_speedup",
                "prepared_prediction_error", "gap_share", "speedup_of_allowed")
        assert claim["measured_text"] != "-" and claim["detail"]
    md = (study / "report/seed_case/report.md").read_text()
    assert md.splitlines()[2] == f"**{card['headline']}**"
    assert md.index("## Did the case study reproduce here?") < md.index("## Verdicts")


def test_every_arm_is_profiled_and_diagnosed(study):
    for arm in ARMS:
        run = study / "runs" / "seed_case" / arm
        raw = {p.name for p in (run / "profile").rglob("*") if p.is_file()}
        assert {"pipeline_profiling_0.json", "minddata_cpu_utilization_0.json",
                "dataset_iterator_profiling_0.txt", "trace_view.json", "profile.json"} <= raw
        diagnosis = json.loads((run / "diagnosis.json").read_text())
        assert diagnosis["bound"] in {"input", "cpu", "compute"}
        assert diagnosis["input_bound"]["band"] in {"highly", "moderately", "not"}
        assert diagnosis["recommendation"]["sentence"].endswith(".")
        assert diagnosis["cross_check"]["steps"] == 3  # the profiled steps but the first (no gap)
        assert diagnosis["profiler_effect"]["steps"] == 4
        ops = pd.read_csv(run / "pipeline_ops.csv")
        source = "MindRecord" if arm.startswith("prepared") else "ImageFolder"
        assert {"Batch", "Map", source} <= set(ops["op_type"])
        assert ops.loc[ops["op_type"] == "Map", "label"].iloc[0].startswith("Map #")
        assert "RandomCropDecodeResize" in ops.loc[ops["op_type"] == "Map", "label"].iloc[0]
        assert ops["queue_usage"].dropna().between(0, 1).all()
        queues = pd.read_csv(run / "queues.csv")
        assert len(queues) > 0 and (queues["size"] <= queues["capacity"]).all()
        timeline = pd.read_csv(run / "timeline_steps.csv")
        assert len(timeline) == 4 and (timeline["tl_fwd_bwd_ms"] > 0).all()
        assert set(timeline["phase"]) == {"profiled"}
        trace = json.loads((run / "trace.json").read_text())
        complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        assert {e["cat"] for e in complete} >= {"host", "forward", "backward", "update"}
        assert all(isinstance(e["ts"], float | int) and e["dur"] >= 0 for e in complete)


def test_every_answer_is_measured_before_it_is_given(study):
    """The model proposes, the training measures: each arm's own setting and its best other
    candidates ran in interleaved rounds after its measured window (every round each setting
    once, in a recorded random order), and the answer quotes the paired ratio's interval."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{study}/mlflow/mlflow.db")
    for arm in ARMS:
        run = study / "runs" / "seed_case" / arm
        summary = json.loads((run / "summary.json").read_text())
        rec = json.loads((run / "diagnosis.json").read_text())["recommendation"]
        verification = summary["verification"]
        if not verification["plan"]:  # the measured window was not steady: nothing verified
            assert rec["action"] == "not_steady" and "not steady" in verification["skipped"]
            continue
        plan, rounds = verification["plan"], verification["rounds"]
        settings = len(json.loads((run / "diagnosis.json").read_text())["advisor"]["predictions"])
        reused = verification["reused"]  # settled by an earlier arm's rounds (verify.reuse_from)
        # the model's band leaves out candidates whose gain cannot reach 10 %, never all of them
        assert plan[0]["role"] == "current" and 2 <= len(plan) + len(reused) <= 1 + min(2, settings - 1)
        band = json.loads((run / "diagnosis.json").read_text())["advisor"]["band"]
        assert band["level"] == 0.9 and band["step"]["low"] < 1 < band["step"]["high"]
        # not measured again: settled there, or open there and out of reach (smoke: 4 rounds at most)
        assert all(r["source_run"] == {"tuned": "baseline", "prepared_tuned": "prepared"}[arm]
                   and (r["settled"] or r["comparison"]["rounds_needed"] is None
                        or r["comparison"]["rounds_needed"] - r["comparison"]["rounds"] > 4)
                   for r in reused)
        assert len({json.dumps(p["settings"], sort_keys=True) for p in [*plan, *reused]}) == len(plan) + len(reused)
        if len(plan) == 1:  # every candidate accounted for by the earlier arm's rounds: none run here
            assert rounds is None and reused and rec["verified"]
            assert rec["verification"]["rounds"] == 0 and rec["verification"]["stopped"] == "earlier"
            assert "no rounds run here" in rec["sentence"]
            continue
        assert 3 <= len(rounds["orders"]) <= 4  # smoke: min_rounds 3, max_rounds 4
        every = list(range(len(plan)))
        assert all(sorted(order) == every for order in rounds["orders"][:3])  # before min_rounds
        # after it a settled candidate leaves the race; the own setting stays in every round
        assert all(0 in order and len(set(order)) == len(order) and set(order) <= set(every)
                   for order in rounds["orders"])
        kept = [v for v in rounds["visits"] if v["dropped"] is None]
        assert len(kept) == sum(len(order) for order in rounds["orders"])
        assert sum(1 for v in kept if v["setting"] == 0) == len(rounds["orders"])
        assert len(rounds["visits"]) - len(kept) <= len(kept)  # each measured again at most once
        for v in kept:
            assert v["window"]["phases"][0] == "startup" and v["window"]["steps"] <= 1 + 8
            assert v["interference"]["wall_s"] > 0
        assert verification["budget_share"] == 1.0 and verification["stretch_share"] == 3.0
        assert 0 <= rounds["stretched"] <= len(rounds["orders"]) - 3  # never before min_rounds
        if rec["verified"]:  # the promise is a measured ratio with its interval
            checked = rec["verification"]
            assert checked["rounds"] == len(rounds["orders"])
            word = {"set_workers": "measured", "inconclusive": "Inconclusive (measured)"}.get(
                rec["action"], "No setting helps (measured)")
            assert word in rec["sentence"] and "interleaved rounds" in rec["sentence"]
            assert "95 %" in rec["sentence"] or "no interval" in rec["sentence"]
            for row in checked["settings"][1:]:
                assert row["comparison"]["outcome"] in ("faster", "slower", "equivalent", "inconclusive")
        else:
            assert "Not verified" in rec["sentence"]
        ids = json.loads((run / "mlflow_run.json").read_text())
        history = client.get_metric_history(ids["run_id"], "verify/measured_step_ms")
        steady = [r for r in rec["verification"]["settings"] if r["measured_ms"]] if rec["verified"] else []
        assert len(history) == len(steady)
    md = (study / "report" / "seed_case" / "report.md").read_text()
    assert "Verification: the model's candidates measured" in md and "Verification: what it cost" in md


def test_mlflow_holds_one_parent_and_one_child_per_arm(study):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{study}/mlflow/mlflow.db")
    experiment = client.get_experiment_by_name("perfstudy/seed_case")
    # marked as model training: MLflow 3's UI opens it on the runs, not the GenAI overview
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get("perfstudy.role") == "study"]
    children = [r for r in runs if r.data.tags.get("perfstudy.role") == "arm"]
    assert len(parents) == 1
    assert sorted(r.data.tags["perfstudy.arm"] for r in children) == sorted(ARMS)
    for child in children:
        assert child.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert child.info.status == "FINISHED"
        assert "steady_step_ms" in child.data.metrics
        assert len(client.get_metric_history(child.info.run_id, "step/gap_ms")) == 13
        artifacts = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"config.yaml", "steps.csv", "summary.json", "environment.json", "diagnosis.json",
                "trace.json", "pipeline_ops.csv", "queues.csv", "profile"} <= artifacts
        assert any(a.endswith(".log") for a in artifacts)
        arm_dir = study / "runs/seed_case" / child.data.tags["perfstudy.arm"]
        bound = json.loads((arm_dir / "diagnosis.json").read_text())["bound"]
        assert child.data.tags["perfstudy.verdict"] == verdict_label(bound)  # 'not steady' on a noisy host
        assert child.data.tags["perfstudy.input_bound"] in {"highly", "moderately", "not"}
        assert "perfstudy.culprit" in child.data.tags
        ops = pd.read_csv(arm_dir / "pipeline_ops.csv")
        map_id = int(ops.loc[ops["op_type"] == "Map", "op_id"].iloc[0])  # after Repeat, if any
        assert f"pipeline/op{map_id}_Map/queue_usage" in child.data.metrics
        assert f"pipeline/op{map_id}_Map/cpu_pct" in child.data.metrics
        diagnosis = json.loads((arm_dir / "diagnosis.json").read_text())
        if not diagnosis["advisor"]["pick_is_recommendation"]:  # one answer: no second setting
            assert "perfstudy.advisor_pick_workers" not in child.data.tags
            assert "advisor/pick_workers" not in child.data.metrics
        else:
            assert int(child.data.tags["perfstudy.advisor_pick_workers"]) >= 1
        curve = client.get_metric_history(child.info.run_id, "advisor/predicted_step_ms")
        assert sorted(m.step for m in curve) == list(range(1, len(curve) + 1))  # step = workers
        assert len(client.get_metric_history(child.info.run_id, f"queue/op{map_id}_Map_size")) >= 3
        recorded = json.loads((study / "runs/seed_case" / child.data.tags["perfstudy.arm"]
                               / "mlflow_run.json").read_text())
        assert recorded["run_id"] == child.info.run_id
        # the run was opened when the training started (perfstudy.present.live) and completed
        # from the files by track_arm: it spans the training, not the logging after it
        steps = pd.read_csv(arm_dir / "steps.csv")
        summary = json.loads((arm_dir / "summary.json").read_text())
        first = steps["start_time_s"].min() - (summary["precompile_s"] or 0)
        live = json.loads((arm_dir / "mlflow_live.json").read_text())
        assert live["run_id"] == child.info.run_id and live["status"] == "FINISHED"
        assert recorded["adopted_live"] and child.data.tags["perfstudy.live"] == "1"
        assert child.info.start_time <= int(first * 1000)
        assert child.info.start_time >= int((first - summary["run_wall_s"]) * 1000)
        assert "system/cpu_utilization_percentage" in child.data.metrics  # MLflow's system metrics
        assert child.data.tags["mlflow.source.name"] == "scripts/train.py"
        assert child.data.tags["mlflow.source.git.commit"] == summary["git_sha"]
        assert child.data.metrics["resources_max_rss_mb"] == pytest.approx(summary["resources"]["max_rss_mb"])
        assert child.data.metrics["job_max_rss_mb"] > 100  # Snakemake's benchmark of the job
        # top level, the same name in every arm: Compare shows them side by side
        assert {"queues.png", "verified.png", "step_distribution.png"} <= set(artifacts)
        last = steps.iloc[-1]  # it ended with the training process (the verification after the steps)
        assert child.info.end_time >= int((last["start_time_s"] + last["step_ms"] / 1e3) * 1000)
        assert child.info.end_time - child.info.start_time >= 1000 * summary["run_wall_s"] * 0.9
        description = child.data.tags["mlflow.note.content"]
        assert description.startswith(f"**{child.data.tags['perfstudy.verdict']}.**")
        assert child.data.tags["perfstudy.recommendation"] in description
    parent_artifacts = {a.path for a in client.list_artifacts(parents[0].info.run_id)}
    assert {"report.html", "report.md", "comparison.csv", "scorecard.json"} <= parent_artifacts
    figures = {a.path for a in client.list_artifacts(parents[0].info.run_id, "figures")}
    assert "figures/claim_history.png" in figures  # each claim across the recorded runs
    card = json.loads((study / "report/seed_case/scorecard.json").read_text())
    tags = parents[0].data.tags
    assert tags["perfstudy.claims"] == card["headline"]
    assert tags["mlflow.note.content"].startswith(f"**{card['headline']}**")
    for claim in card["claims"]:
        assert tags[f"perfstudy.claim.{claim['id']}"].startswith(claim["result"])
    assert parents[0].data.metrics["claims/held"] == card["held"]
    assert "tuned/speedup" in parents[0].data.metrics
    bound = json.loads((study / "runs/seed_case/baseline/diagnosis.json").read_text())["bound"]
    assert parents[0].data.tags["perfstudy.verdict.baseline"].split(",")[0] == verdict_label(bound)
    assert "perfstudy.recommendation.tuned" in parents[0].data.tags


def test_the_prepared_arms_prove_the_remedy(study):
    from mlflow.tracking import MlflowClient

    runs = study / "runs" / "seed_case"
    base = json.loads((runs / "baseline/summary.json").read_text())
    manifest = json.loads((study / "data/prepared-photos_smoke-crop32-q90/manifest.json").read_text())
    assert (study / "data/prepared-photos_smoke-crop32-q90/train.mindrecord").is_file()
    for arm, source_arm in (("prepared", "baseline"), ("prepared_tuned", "tuned")):
        summary = json.loads((runs / arm / "summary.json").read_text())
        source = json.loads((runs / source_arm / "summary.json").read_text())
        assert summary["dataset"]["source"] == "prepared"
        assert summary["dataset"]["prepared"]["source_manifest"]["dataset_sha256"] == base["dataset_sha256"]
        assert summary["dataset_sha256"] == manifest["dataset_sha256"] != base["dataset_sha256"]
        assert summary["operator_settings"] == source["operator_settings"]
        assert summary["dataset"]["mean_megapixels"] < source["dataset"]["mean_megapixels"]
        assert summary["steps_measured"] + summary["steps_excluded"] == 8
        # its pipeline and the source's, at its settings, in interleaved rounds in its process;
        # prepared_tuned's are off in the seed case (no claim reads them; they cost minutes)
        against = summary["against_source"]
        if arm == "prepared_tuned":
            assert against is None
            continue
        assert Path(against["source_root"]).resolve() == Path(source["dataset"]["root"]).resolve()
        assert against["rounds"]["settings"] == 2 and len(against["rounds"]["orders"]) >= 3
        assert {v["setting"] for v in against["rounds"]["visits"]} == {0, 1}
    # the prediction was made from the source arm's profile, before the prepared arm ran
    diagnosis = json.loads((runs / "baseline/diagnosis.json").read_text())
    predicted = diagnosis["recommendation"]["prepared_prediction"]
    assert predicted["megapixels_prepared"] == pytest.approx(manifest["after"]["mean_megapixels"])
    assert predicted["predictions"] and all(r["step_ms"] > 0 for r in predicted["predictions"])
    # and its claim (prepared_predicted, within 15 %) kept the prepared arm's rounds against the
    # source going until decided: the arm trained after that analysis, told its source run
    config = yaml.safe_load((runs / "prepared/config.yaml").read_text())
    assert config["paths"]["source_run"].endswith("runs/seed_case/baseline")
    assert config["verify"]["against_source_prediction_bound"] == 0.15
    log = (study / "logs/train/seed_case/prepared.log").read_text()
    assert "the rounds against the source also decide the gains " in log
    assert Path(diagnosis_path := runs / "baseline/diagnosis.json").stat().st_mtime < \
        Path(runs / "prepared/summary.json").stat().st_mtime, diagnosis_path
    remedies = read_remedies(study / "report/seed_case")  # the record the later stages read
    assert [(r.arm, r.source.arm) for r in remedies.arms] == [("prepared", "baseline"),
                                                              ("prepared_tuned", "tuned")]
    assert all(r.source.predicted_step_ms > 0 and r.cost.wall_s > 0 for r in remedies.arms)
    assert all(r.cost.bytes_after < r.cost.bytes_before for r in remedies.arms)
    # the gain paired by round, with its interval; the claims read it, not the two windows
    paired, across = remedies.arms
    assert paired.paired.rounds >= 2 and paired.paired.low <= paired.paired.speedup
    assert across.paired is None and across.source.speedup > 0  # two runs, read as such
    table = pd.read_csv(study / "report/seed_case/prepared.csv").set_index("arm")  # the same, flat
    assert table.loc["prepared", "paired_speedup"] == pytest.approx(remedies.arms[0].paired.speedup)
    card = {c["id"]: c for c in json.loads((study / "report/seed_case/scorecard.json").read_text())["claims"]}
    assert "paired by round in prepared's run" in card["prepared_5x"]["detail"]
    assert card["prepared_5x"]["interval_kind"].startswith("paired")
    md = (study / "report/seed_case/report.md").read_text()
    assert "prepared_tuned vs tuned" in md and "not paired by round (verify.against_source)" in md
    assert "The remedy, measured" in md and "predicted from baseline's profile before it ran" in md
    assert "What does not: the images, their labels and their order" in md
    client = MlflowClient(f"sqlite:///{study}/mlflow/mlflow.db")
    experiment = client.get_experiment_by_name("perfstudy/seed_case")
    runs_found = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs_found if r.data.tags.get("perfstudy.role") == "study")
    assert "prepared/prepared/speedup" in parent.data.metrics
    assert "prepared/prepared/paired_speedup" in parent.data.metrics
    assert "paired by round in its run" in parent.data.tags["perfstudy.prepared.prepared"]
    assert "prepared/prepared_tuned/preparation_wall_s" in parent.data.metrics
    # at smoke size decoding costs little: a payback is logged only where there is a saving
    for r in remedies.arms:
        logged = r.source.payback_steps is not None
        assert (f"prepared/{r.arm}/payback_steps" in parent.data.metrics) == logged
    assert "x the images/s of baseline" in parent.data.tags["perfstudy.prepared.prepared"]
    prepared_run = next(r for r in runs_found if r.data.tags.get("perfstudy.arm") == "prepared")
    assert prepared_run.data.tags["perfstudy.data"] == "prepared"
    assert {"prepared.csv", "prepared.json"} <= {a.path for a in client.list_artifacts(parent.info.run_id)}


def test_no_log_of_the_study_carries_a_deprecation_warning(study):
    logs = list((study / "logs").rglob("*.log"))
    assert len(logs) >= 4 * len(ARMS)
    found = [f"{log.name}: {line}" for log in logs for line in log.read_text(errors="replace").splitlines()
             if "deprecat" in line.lower()]
    assert not found, found[:5]
    train_log = (study / "logs/train/seed_case/tuned.log").read_text()
    assert "live MLflow run" in train_log and "peak memory" in train_log


def test_snakemake_report_renders_the_registered_outputs(study):
    target = study / "snakemake_report.html"
    result = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(study), "--cores", "1",
         "--config", f"results={study}", "overrides=[size=smoke]", "--report", str(target)],
        cwd=study, capture_output=True, text=True, timeout=600, env=env_without_mlflow())
    assert result.returncode == 0, result.stderr[-3000:]
    assert target.stat().st_size > 10_000
    out = result.stdout + result.stderr
    every = ("queues", "verified", "steps")  # every figure registered
    for figure in ["scaling.png", "verified.png", "step_distribution.png", "claim_history.png",
                   *(f"{kind}_{arm}.png" for arm in ARMS for kind in every)]:
        assert f"Adding {figure}" in out, figure


def test_rerunning_the_tracking_rules_makes_no_twins(study):
    from mlflow.tracking import MlflowClient

    result = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(study), "--cores", "2", "--config",
         f"results={study}", "overrides=[size=smoke]", "--forcerun", "track_arm", "track_study"],
        cwd=study,
        capture_output=True, text=True, timeout=600, env=env_without_mlflow())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rule train" not in result.stdout + result.stderr  # training is not redone
    client = MlflowClient(f"sqlite:///{study}/mlflow/mlflow.db")
    experiment = client.get_experiment_by_name("perfstudy/seed_case")
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 + len(ARMS)
    for run in runs:
        if run.data.tags.get("perfstudy.role") == "arm":
            assert len(client.get_metric_history(run.info.run_id, "step/step_ms")) == 13


def test_make_compare_sets_a_run_beside_another_and_names_what_differs(study, tmp_path):
    """`make compare A B` on the smoke study and a copy of it whose config, machine and one
    claim differ: both verdicts side by side, each arm's step ratio with its interval, and
    exactly the differences made."""
    import shutil

    other = tmp_path / "other"
    shutil.copytree(study / "runs" / "seed_case", other / "runs" / "seed_case",
                    ignore=shutil.ignore_patterns("profile", "*.log"))
    shutil.copytree(study / "report" / "seed_case", other / "report" / "seed_case",
                    ignore=shutil.ignore_patterns("figures", "*.html"))
    config = other / "runs/seed_case/tuned/config.yaml"
    cfg = yaml.safe_load(config.read_text())
    cfg["pipeline"]["prefetch_size"] = 7
    config.write_text(yaml.safe_dump(cfg))
    summary = other / "runs/seed_case/baseline/summary.json"
    data = json.loads(summary.read_text())
    data["environment"]["cpu_model"] = "Another CPU"
    summary.write_text(json.dumps(data))
    card_path = other / "report/seed_case/scorecard.json"
    card = json.loads(card_path.read_text())
    first = card["claims"][0]
    first["result"] = "does not hold" if first["result"] != "does not hold" else "holds"
    card_path.write_text(json.dumps(card))

    done = subprocess.run(["make", "-s", "compare", f"A={study}", f"B={other}"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert f"# seed_case: {study} against {other}" in out
    assert "## Claims (1 of 10 with another verdict)" in out
    assert f"| {first['id']} | " in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " ms | " in line]
    started = {arm: json.loads((study / "runs/seed_case" / arm / "summary.json").read_text())["started_at"]
               for arm in ARMS}
    assert [r.split(" | ")[0][2:] for r in rows] == sorted(ARMS, key=started.get)  # as trained
    # the same windows: 1.00x; at smoke (5 measured steps) too short for batch means, said so
    assert all("| 1.00x (" in r and ("two windows, not paired" in r or "no interval: a window too "
                                     "short for batch means" in r) for r in rows), rows
    assert "## Machine and software (1 fact differs)" in out and "| cpu_model | " in out
    assert "Another CPU" in out
    assert "## Configs (1 setting differs)" in out
    assert "| tuned | pipeline.prefetch_size | " in out
    bad = subprocess.run(["make", "-s", "compare", f"A={study}", f"B={tmp_path / 'none'}"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "runs/seed_case does not exist" in bad.stderr
