#!/usr/bin/env python
"""Compose one arm's Hydra config from conf/ and the given overrides; write it resolved.

    python scripts/compose_config.py --out results/runs/seed_case/tuned/config.yaml \
        experiment=tuned study=seed_case arm=tuned paths.results=results
"""

import argparse
import sys

from omegaconf import OmegaConf

from perfstudy.common.config import compose_run_config, config_hash
from perfstudy.common.io import write_text_atomic
from perfstudy.orchestrate.cli import main_guard


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="where to write the resolved config.yaml")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides")
    args = parser.parse_args()
    cfg = compose_run_config(args.overrides)
    header = (f"# Resolved by scripts/compose_config.py (config hash {config_hash(cfg)}); "
              f"overrides: {' '.join(args.overrides)}\n")
    write_text_atomic(args.out, header + OmegaConf.to_yaml(cfg))


if __name__ == "__main__":
    sys.exit(main_guard(main))
