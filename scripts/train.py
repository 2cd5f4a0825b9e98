#!/usr/bin/env python
"""Train one arm and write its steps.csv and summary.json.

By hand, with Hydra overrides (composed against conf/ and its schema):
    python scripts/train.py experiment=tuned trainer.steps=30
    python scripts/train.py size=smoke experiment=baseline --print-config
From the DAG, on a config already composed by the compose_config rule:
    python scripts/train.py --run-config results/runs/seed_case/tuned/config.yaml \
        --manifest results/data/photos16mp/manifest.json
"""

import argparse
import sys

from omegaconf import OmegaConf

from perfstudy.common import config
from perfstudy.decide.analysis import propose
from perfstudy.measure.profiling import ProfilerError
from perfstudy.orchestrate.cli import main_guard, setup_logging
from perfstudy.present import live
from perfstudy.run import train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. experiment=tuned")
    parser.add_argument("--run-config", help="a resolved config.yaml (skips composing)")
    parser.add_argument("--manifest", help="the dataset's manifest.json (default: make it)")
    parser.add_argument("--print-config", action="store_true", help="print the config, exit")
    parser.add_argument("--log-file", help="also write the log here")
    args = parser.parse_args()
    setup_logging(args.log_file)
    if args.run_config:
        cfg = config.load_run_config(args.run_config)
    else:
        cfg = config.compose_run_config(args.overrides)
    if args.print_config:
        print(OmegaConf.to_yaml(cfg))
        return
    # the arm's MLflow run, opened now and fed as the steps happen (None: no tracker to attach to)
    opened = live.open_live(cfg, cfg.paths.run_dir)
    if opened is None:  # the model (decide/) proposes the settings the training then measures
        train.run(cfg, manifest_path=args.manifest, propose=propose)
        return
    live.end_on_signal(opened)
    try:
        train.run(cfg, manifest_path=args.manifest, propose=propose, on_step=opened.on_step)
    except BaseException as exc:
        opened.end(live.status_of(exc))
        raise
    opened.end(live.status_of(None))


if __name__ == "__main__":
    sys.exit(main_guard(main, extra_errors=(train.DeviceError, ProfilerError)))
