#!/usr/bin/env python
"""Create (once) the study's MLflow experiment and parent run; write their ids.

Runs upstream of every per-arm tracking job, so parallel jobs never race on creating the
experiment or migrating the SQLite schema. The parent run is this results folder's for these
claims and arm configs: a study run again with other configs or claims gets a new parent run,
and the old one stays as a point of the study's history (perfstudy.present.history).
    python scripts/track_init.py --run-configs results/runs/seed_case/*/config.yaml \
        --claims workflow/claims/seed_case.yaml --out results/runs/seed_case/mlflow_study.json
"""

import argparse
import sys
from pathlib import Path

from perfstudy.common import config
from perfstudy.common.io import write_json
from perfstudy.common.provenance import git_state
from perfstudy.orchestrate.cli import main_guard, setup_logging
from perfstudy.present import history, mlflow_fields, mlflow_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-configs", nargs="+", required=True,
                        help="every run's resolved config.yaml")
    parser.add_argument("--claims", default="", help="the study's claims file, if any")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    setup_logging()
    configs = [config.load_run_config(path) for path in args.run_configs]
    cfg = configs[0]
    ctx = history.context(cfg.study, args.claims, {c.arm: config.config_hash(c) for c in configs},
                          machine="")
    ctx.pop(f"{history.TAG}machine")  # set from the runs' own summaries by track_study
    uri = mlflow_store.resolve_uri(cfg.tracking.uri, cfg.paths.results)
    instance = mlflow_store.study_instance(Path(args.out).parent)
    name = f"{cfg.tracking.experiment_prefix}/{cfg.study}"
    with mlflow_store.store_lock(uri):
        client = mlflow_store.client_for(uri)
        experiment_id = mlflow_store.ensure_experiment(client, name, uri)
        parent = mlflow_store.ensure_study_run(client, experiment_id, cfg.study, instance,
                                           {"git_sha": str(git_state()["git_sha"]),
                                            **mlflow_fields.source_tags(name="Snakefile")}, identity=ctx)
    write_json(args.out, {"tracking_uri": uri, "experiment_name": name, "instance": instance,
                          "experiment_id": experiment_id, "study_run_id": parent})


if __name__ == "__main__":
    sys.exit(main_guard(main, extra_errors=(mlflow_store.TrackingError,)))
