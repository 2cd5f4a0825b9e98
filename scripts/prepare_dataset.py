#!/usr/bin/env python
"""Prepare a derived dataset: the source's images re-encoded as JPEG at a bounded resolution in
one MindRecord file, with its manifest.json.

    python scripts/prepare_dataset.py --source results/data/photos16mp/manifest.json \
        --out results/data/prepared-photos16mp-crop32-q90/manifest.json --workers 2 \
        --spec '{"settings": {"image_size": 32, "short_side": null, "quality": 90},
                 "out": "results/data/prepared-photos16mp-crop32-q90"}'
"""

import argparse
import json
import logging
import sys
from pathlib import Path

from perfstudy.data import dataset, prepare
from perfstudy.data.prepared_record import PreparedFacts
from perfstudy.orchestrate.cli import UserError, main_guard, setup_logging

log = logging.getLogger("prepare_dataset")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True, help="the source dataset's manifest.json")
    parser.add_argument("--spec", required=True, help="JSON: {'settings': {...}, 'out': folder}")
    parser.add_argument("--out", required=True, help="where the manifest.json must end up")
    parser.add_argument("--workers", type=int, default=1, help="processes for re-encoding")
    args = parser.parse_args()
    setup_logging()
    spec = json.loads(args.spec)
    folder = Path(spec["out"])
    if Path(args.out).resolve() != (folder / dataset.MANIFEST).resolve():
        raise UserError(f"--out {args.out} does not match the prepared folder {folder}; "
                        f"pass --out {folder / dataset.MANIFEST}.")
    settings = prepare.Settings(**spec["settings"])
    manifest = dataset.load_manifest(prepare.prepare(args.source, settings, folder,
                                                  workers=max(1, args.workers)))
    facts = PreparedFacts.from_manifest(manifest, where=args.out)
    before, after, cost = facts.before, facts.after, facts.preparation
    log.info("prepared %d images (%s): %.1f MB, %.2f MP/image -> %.2f MB, %.4f MP/image "
             "(short side %d..%d px), PSNR >= %.1f dB; %.1f s wall, %.1f s CPU",
             manifest["num_images"], facts.rule, before.bytes / 1e6, before.mean_megapixels,
             after.bytes / 1e6, after.mean_megapixels, after.short_side_min,
             after.short_side_max, facts.psnr_db.min, cost.wall_s, cost.cpu_s)


if __name__ == "__main__":
    sys.exit(main_guard(main))
