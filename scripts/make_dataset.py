#!/usr/bin/env python
"""Generate the study's photo ImageFolder (or validate a user's) and write its manifest.json.

    python scripts/make_dataset.py --out results/data/photos16mp/manifest.json --workers 2 \
        --data '{"data": {...the data section of a run config...}, "data_root": "results/data"}'
"""

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from perfstudy.common.config import DataConfig
from perfstudy.data import dataset
from perfstudy.orchestrate.cli import UserError, main_guard, setup_logging

log = logging.getLogger("make_dataset")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="JSON: {'data': {...}, 'data_root': ...}")
    parser.add_argument("--out", required=True, help="where the manifest.json must end up")
    parser.add_argument("--workers", type=int, default=1, help="processes for generation")
    args = parser.parse_args()
    setup_logging()
    spec = json.loads(args.data)
    data_cfg = OmegaConf.merge(OmegaConf.structured(DataConfig), spec["data"])
    expected = dataset.dataset_dir(data_cfg, spec["data_root"]) / dataset.MANIFEST
    if Path(args.out).resolve() != expected.resolve():
        raise UserError(f"--out {args.out} does not match the dataset folder {expected}; "
                        f"pass --out {expected}.")
    started = time.time()
    manifest = dataset.load_manifest(dataset.prepare_dataset(data_cfg, spec["data_root"],
                                                       workers=max(1, args.workers)))
    log.info("%s dataset: %d images, %d classes, %.1f MB, sha256 %s (%.0f s)",
             manifest["source"], manifest["num_images"], manifest["num_classes"],
             manifest["total_bytes"] / 1e6, manifest["dataset_sha256"][:12],
             time.time() - started)


if __name__ == "__main__":
    sys.exit(main_guard(main))
