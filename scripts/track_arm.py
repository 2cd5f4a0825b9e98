#!/usr/bin/env python
"""Log one arm (config, per-step metrics, summary, diagnosis, profile) as a child run of its study.

Re-running it updates the same run; see perfstudy.tracking for the rules.
    python scripts/track_arm.py --run-dir results/runs/seed_case/tuned \
        --study-ids results/runs/seed_case/mlflow_study.json --log results/logs/train/seed_case/tuned.log
"""

import argparse
import logging
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from perfstudy.common import config
from perfstudy.common.io import read_json, read_table, write_json
from perfstudy.decide.diagnosis import read_diagnosis
from perfstudy.orchestrate.cli import main_guard, setup_logging
from perfstudy.present import live, mlflow_fields, mlflow_store, tracking
from perfstudy.run.summary import read_summary

log = logging.getLogger("track_arm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--study-ids", required=True, help="mlflow_study.json of track_init")
    parser.add_argument("--log", action="append", default=[], help="a log file to attach")
    parser.add_argument("--benchmark", help="Snakemake's benchmark file of the arm's training job "
                        "(its whole process tree's peak memory and CPU time)")
    parser.add_argument("--figure", action="append", default=[], metavar="NAME=PATH",
                        help="an arm figure, logged as NAME at the run's top level (the same NAME "
                        "in every arm's run: MLflow's Compare sets its common top-level files side "
                        "by side)")
    parser.add_argument("--study-receipt", help="the study's tracking receipt "
                        "(report/<study>/mlflow_study.json), void while this arm's run changes")
    args = parser.parse_args()
    setup_logging()
    run_dir = Path(args.run_dir)
    cfg = config.load_run_config(run_dir / "config.yaml")
    ids = read_json(args.study_ids)
    summary = read_summary(run_dir)
    steps = pd.read_csv(run_dir / "steps.csv")
    files = [run_dir / name for name in ("config.yaml", "steps.csv", "summary.json", "environment.json",
                                         "diagnosis.json",
                                         "pipeline_ops.csv", "queues.csv", "timeline_steps.csv",
                                         "trace.json")]
    diagnosis = read_diagnosis(run_dir)
    opened = live.read_receipt(run_dir)  # the run the training opened, if it could
    ops, queues = (read_table(run_dir / name) for name in ("pipeline_ops.csv", "queues.csv"))
    # Until this job ends, the store no longer holds what the receipts say: remove them
    # first, so a job killed from here on is redone by the next `snakemake` (which would
    # otherwise see the study's receipt up to date and leave this arm's run RUNNING).
    for receipt in (run_dir / "mlflow_run.json", args.study_receipt):
        if receipt:
            Path(receipt).unlink(missing_ok=True)
    with mlflow_store.store_lock(ids["tracking_uri"]):
        result = tracking.log_arm(
            mlflow_store.client_for(ids["tracking_uri"]), ids["experiment_id"], ids["study_run_id"],
            study=cfg.study, arm=cfg.arm, instance=ids["instance"],
            params=config.flatten(config.to_container(cfg)), summary=summary, steps=steps,
            artifacts=[f for f in files if f.is_file()] + [Path(p) for p in args.log if Path(p).is_file()],
            results_fingerprint=tracking.fingerprint(run_dir / "steps.csv", run_dir / "summary.json"),
            extra_metrics=mlflow_fields.diagnosis_metrics(diagnosis, ops, queues, mlflow_fields.run_end_ms(steps))
            + mlflow_fields.job_metrics(args.benchmark, mlflow_fields.run_end_ms(steps)),
            extra_tags={**mlflow_fields.diagnosis_tags(diagnosis),
                        "mlflow.note.content": mlflow_fields.run_description(summary, diagnosis)},
            artifact_dirs={name: run_dir / name for name in ("profile", "autotune")
                           if (run_dir / name).is_dir()},
            named_artifacts=_figures(args.figure),
            live_run_id=opened.run_id if opened else None,
            live_through_step=opened.logged_through_step if opened else -1)
    log.info("arm %s -> run %s (%s)", cfg.arm, result.run_id, "the training's live run completed"
             if result.adopted_live else "created" if result.created else "updated")
    write_json(run_dir / "mlflow_run.json", {**asdict(result), "tracking_uri": ids["tracking_uri"],
                                             "experiment_id": ids["experiment_id"],
                                             "study_run_id": ids["study_run_id"]})


def _figures(given: list[str]) -> dict[str, Path]:
    """--figure NAME=PATH arguments -> {NAME: PATH} for the files that exist."""
    found = {}
    for item in given:
        name, _, path = item.partition("=")
        if not path:
            raise ValueError(f"--figure {item!r}: use NAME=PATH")
        if Path(path).is_file():
            found[name] = Path(path)
    return found


if __name__ == "__main__":
    sys.exit(main_guard(main, extra_errors=(mlflow_store.TrackingError,)))
