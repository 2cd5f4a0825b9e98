#!/usr/bin/env python
"""Generate the study's photo ImageFolder (or validate a user's) and write its manifest.json.

    python scripts/make_dataset.py --run-config results/runs/seed_case/baseline/config.yaml \
        --out results/data/photos16mp/manifest.json --workers 2
"""

import argparse
import logging
import sys
import time
from pathlib import Path

from perfstudy import config, data
from perfstudy.cli import UserError, main_guard, setup_logging

log = logging.getLogger("make_dataset")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-config", required=True, help="a resolved run config.yaml")
    parser.add_argument("--out", required=True, help="where the manifest.json must end up")
    parser.add_argument("--workers", type=int, default=1, help="processes for generation")
    args = parser.parse_args()
    setup_logging()
    cfg = config.load_run_config(args.run_config)
    expected = data.dataset_dir(cfg.data, cfg.paths.data_root) / data.MANIFEST
    if Path(args.out).resolve() != expected.resolve():
        raise UserError(f"--out {args.out} does not match the config's dataset folder "
                        f"{expected}; pass --out {expected}.")
    started = time.time()
    manifest = data.load_manifest(data.prepare_dataset(cfg.data, cfg.paths.data_root,
                                                       workers=max(1, args.workers)))
    log.info("%s dataset: %d images, %d classes, %.1f MB, sha256 %s (%.0f s)",
             manifest["source"], manifest["num_images"], manifest["num_classes"],
             manifest["total_bytes"] / 1e6, manifest["dataset_sha256"][:12],
             time.time() - started)


if __name__ == "__main__":
    sys.exit(main_guard(main))
