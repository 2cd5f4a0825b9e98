#!/usr/bin/env python
"""Log the study's report and aggregates onto its MLflow parent run.

    python scripts/track_study.py --report-dir results/report/seed_case \
        --study-ids results/runs/seed_case/mlflow_study.json --runs-dir results/runs/seed_case \
        --out results/report/seed_case/mlflow_study.json
"""

import argparse
import sys
from pathlib import Path

import pandas as pd

from perfstudy.common.io import read_json, write_json
from perfstudy.decide.diagnosis import read_diagnosis, verdict_label
from perfstudy.decide.remedy_proof import read_remedies
from perfstudy.decide.scorecard import read_scorecard
from perfstudy.orchestrate.cli import main_guard, setup_logging
from perfstudy.present import history, mlflow_fields, mlflow_store, tracking
from perfstudy.run.summary import read_summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--report-dir", required=True)
    parser.add_argument("--study-ids", required=True)
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--run-files", nargs="*", default=[],
                        help="every run's mlflow_run.json (repeats included)")
    args = parser.parse_args()
    setup_logging()
    report_dir = Path(args.report_dir)
    ids = read_json(args.study_ids)
    table = pd.read_csv(report_dir / "comparison.csv")
    measured = table[table["source"] == "measured"]
    metrics, tags, arm_runs, last_end = {}, {}, {}, 0
    for row in measured.itertuples(index=False):
        metrics[f"{row.arm}/steady_step_ms"] = row.steady_step_ms
        metrics[f"{row.arm}/gap_share"] = row.gap_share
        metrics[f"{row.arm}/images_per_s"] = row.images_per_s
        metrics[f"{row.arm}/speedup"] = row.speedup
        tags[f"perfstudy.verdict.{row.arm}"] = f"{row.input_bound} input-bound"
        diagnosis_path = Path(args.runs_dir) / row.arm / "diagnosis.json"
        if diagnosis_path.is_file():
            diagnosis = read_diagnosis(diagnosis_path.parent)
            tags[f"perfstudy.verdict.{row.arm}"] = (f"{verdict_label(diagnosis.bound)}, "
                                                    f"{row.input_bound} input-bound")
            tags[f"perfstudy.culprit.{row.arm}"] = diagnosis.culprit.label if diagnosis.culprit else "none"
            tags[f"perfstudy.recommendation.{row.arm}"] = diagnosis.recommendation.sentence
        arm_runs[row.arm] = read_json(Path(args.runs_dir) / row.arm / "mlflow_run.json")["run_id"]
    for run_file in args.run_files:  # every run of the study, repeats included
        arm_runs.setdefault(Path(run_file).parent.name, read_json(run_file)["run_id"])
        steps = pd.read_csv(Path(run_file).parent / "steps.csv")
        last_end = max(last_end, mlflow_fields.run_end_ms(steps))
    spread = pd.read_csv(report_dir / "repeats.csv")
    for row in spread.itertuples(index=False):  # the aggregates over each arm's repeats
        metrics[f"{row.arm}/repeats"] = row.repeats
        for key in ("steady_step_ms_median", "steady_step_ms_olympic_mean", "steady_step_ms_min",
                    "steady_step_ms_max", "spread", "speedup_median", "speedup_ci_low",
                    "speedup_ci_high"):
            value = getattr(row, key)
            if value == value:  # NaN (an interval from one repeat) is not logged
                metrics[f"{row.arm}/{key}"] = value
    answers_csv = report_dir / "answers.csv"
    if answers_csv.is_file():  # each arm's answer over its repeats, against run-to-run noise
        for row in pd.read_csv(answers_csv).to_dict("records"):
            tags[f"perfstudy.answer_across_repeats.{row['arm']}"] = row["sentence"]
            metrics[f"{row['arm']}/answer_settled"] = float(bool(row["settled"]))
    for r in read_remedies(report_dir).arms:  # the decode remedy, measured: gain, prediction, cost
        metrics.update(mlflow_fields.remedy_metrics(r))
        if r.source is not None:
            paired = (f"; paired by round in its run: {r.paired.speedup:.2f}x, "
                      f"{r.paired.low:.2f}-{r.paired.high:.2f}" if r.paired else "")
            tags[f"perfstudy.prepared.{r.arm}"] = (
                f"{r.source.speedup:.2f}x the images/s of {r.source.arm} ({r.steady_step_ms:.0f} "
                f"vs {r.source.step_ms:.0f} ms per step, each arm's window{paired})")
    card = read_scorecard(report_dir)  # the claims, scored: the run's description
    tags.update(mlflow_fields.scorecard_tags(card))
    if args.run_files:  # the machine kind the runs ran on: the history's points are compared within it
        env = read_summary(Path(args.run_files[0]).parent).environment
        tags[f"{history.TAG}machine"] = history.machine_kind(env)
    if card.claims:
        metrics.update({"claims/held": card.held, "claims/scored": card.scored,
                        "claims/inconclusive": card.inconclusive, "claims/fragile": len(card.fragile)})
        metrics.update(history.result_metrics(card))  # this run's point of the study's history
        for claim in card.claims:  # each numeric claim's median and interval over the repeats
            if isinstance(claim.measured, (int, float)) and not isinstance(claim.measured, bool):
                metrics[f"claim/{claim.id}/median"] = float(claim.measured)
                low, high = claim.interval or (claim.measured, claim.measured)
                metrics[f"claim/{claim.id}/low"] = float(low)
                metrics[f"claim/{claim.id}/high"] = float(high)
    files = [(report_dir / name, None) for name in ("report.html", "report.md", "comparison.csv",
                                                    "repeats.csv", "prepared.csv", "prepared.json",
                                                    "answers.csv", "scorecard.json")
             if (report_dir / name).is_file()]
    files += [(png, "figures") for png in sorted((report_dir / "figures").glob("*.png"))]
    with mlflow_store.store_lock(ids["tracking_uri"]):
        tracking.log_study(mlflow_store.client_for(ids["tracking_uri"]), ids["study_run_id"],
                           metrics=metrics, tags=tags, artifacts=files, stamp_ms=last_end)
    write_json(args.out, {**ids, "arm_runs": arm_runs})


if __name__ == "__main__":
    sys.exit(main_guard(main, extra_errors=(mlflow_store.TrackingError,)))
