"""MindSpore's Dataset AutoTune as an arm: switched on for the measured steps, its choice kept.

AutoTune starts from the pipeline as configured (the baseline's, in the autotune arm),
changes operators' workers and queue sizes while the steps run, and writes the setting it
ended with to <prefix>_<rank>.json ({"remark", "summary": ["MapOp(ID:2) (num_parallel_workers:
2, prefetch_size:16)", ...], "tree"}); that file can be loaded with mindspore.dataset.deserialize.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

from perfstudy.common.records import doc

log = logging.getLogger(__name__)

PREFIX = "autotune"
_SUMMARY_LINE = re.compile(r"(?P<op>\w+)\(ID:(?P<id>\d+)\)\s*\(num_parallel_workers:\s*(?P<workers>\d+),"
                           r"\s*prefetch_size:\s*(?P<prefetch>\d+)\)")


def start(folder: Path, interval: int) -> None:
    """Switch AutoTune on for the pipelines launched from now on."""
    import mindspore.dataset as ds

    folder.mkdir(parents=True, exist_ok=True)  # MindSpore needs the prefix's folder to exist
    ds.config.set_autotune_interval(int(interval))
    ds.config.set_enable_autotune(True, str(folder / PREFIX))
    log.info("Dataset AutoTune on (adjusting %s), its result goes to %s",
             "after each epoch" if interval == 0 else f"every {interval} steps", folder)


def stop() -> None:
    """Switch AutoTune off (the calibration and any later pipeline run untuned)."""
    import mindspore.dataset as ds

    ds.config.set_enable_autotune(False)


@dataclass(frozen=True)
class TunedOp:
    """One operator as AutoTune left it (a line of its saved summary)."""

    op: str = doc("AutoTune's name of its type: MapOp, BatchOp, ImageFolderOp, ...")
    op_id: int = doc("its id in the tree the iterator ran (an epoch-control op may be on top)")
    num_parallel_workers: int = doc("the workers it settled on")
    prefetch_size: int = doc("the queue size it settled on")


@dataclass(frozen=True)
class Tuned:
    """What AutoTune saved (summary.json's `autotune`, its arms only)."""

    config_file: str | None = doc("its saved configuration (None: it saved none)")
    remark: str = doc("its remark, or why there is no configuration")
    operators: list[TunedOp] = doc("every operator's setting", default_factory=list)
    map_workers: int | None = doc("the most workers it gave a map", default=None)


def parse_summary(lines: list[str]) -> list[TunedOp]:
    """AutoTune's summary lines -> one TunedOp each."""
    found = []
    for line in lines:
        match = _SUMMARY_LINE.search(line)
        if match:
            found.append(TunedOp(match["op"], int(match["id"]), int(match["workers"]),
                                 int(match["prefetch"])))
    return found


def result(folder: Path) -> Tuned:
    """What AutoTune saved: the file, its remark and the per-operator setting it chose."""
    files = sorted(folder.glob(f"{PREFIX}*.json"))
    if not files:
        return Tuned(None, "AutoTune saved no configuration (it writes one when the pipeline "
                     "ends; see the train log)")
    saved = json.loads(files[0].read_text())
    operators = parse_summary(saved.get("summary", []))
    maps = [op.num_parallel_workers for op in operators if op.op == "MapOp"]
    return Tuned(str(files[0]), saved.get("remark", ""), operators, max(maps, default=None))
