#!/usr/bin/env python
"""Create (once) the study's MLflow experiment and parent run; write their ids.

Runs upstream of every per-arm tracking job, so parallel jobs never race on creating the
experiment or migrating the SQLite schema.
    python scripts/track_init.py --run-config results/runs/seed_case/baseline/config.yaml \
        --out results/runs/seed_case/mlflow_study.json
"""

import argparse
import sys
from pathlib import Path

from perfstudy.common import config
from perfstudy.common.io import write_json
from perfstudy.common.provenance import git_state
from perfstudy.orchestrate.cli import main_guard, setup_logging
from perfstudy.present import tracking


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-config", required=True, help="any arm's resolved config.yaml")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    setup_logging()
    cfg = config.load_run_config(args.run_config)
    uri = tracking.resolve_uri(cfg.tracking.uri, cfg.paths.results)
    instance = tracking.study_instance(Path(args.out).parent)
    name = f"{cfg.tracking.experiment_prefix}/{cfg.study}"
    with tracking.store_lock(uri):
        client = tracking.client_for(uri)
        experiment_id = tracking.ensure_experiment(client, name, uri)
        parent = tracking.ensure_study_run(client, experiment_id, cfg.study, instance,
                                           {"git_sha": str(git_state()["git_sha"])})
    write_json(args.out, {"tracking_uri": uri, "experiment_name": name, "instance": instance,
                          "experiment_id": experiment_id, "study_run_id": parent})


if __name__ == "__main__":
    sys.exit(main_guard(main, extra_errors=(tracking.TrackingError,)))
