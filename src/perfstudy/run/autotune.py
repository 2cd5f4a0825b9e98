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
from pathlib import Path
from typing import Any

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


def parse_summary(lines: list[str]) -> list[dict[str, Any]]:
    """AutoTune's summary lines -> [{op, op_id, num_parallel_workers, prefetch_size}]."""
    found = []
    for line in lines:
        match = _SUMMARY_LINE.search(line)
        if match:
            found.append({"op": match["op"], "op_id": int(match["id"]),
                          "num_parallel_workers": int(match["workers"]),
                          "prefetch_size": int(match["prefetch"])})
    return found


def result(folder: Path) -> dict[str, Any]:
    """What AutoTune saved: the file, its remark and the per-operator setting it chose."""
    files = sorted(folder.glob(f"{PREFIX}*.json"))
    if not files:
        return {"config_file": None, "operators": [], "remark": (
            "AutoTune saved no configuration (it writes one when the pipeline ends; see the train log)")}
    saved = json.loads(files[0].read_text())
    operators = parse_summary(saved.get("summary", []))
    maps = [op for op in operators if op["op"] == "MapOp"]
    return {"config_file": str(files[0]), "remark": saved.get("remark", ""), "operators": operators,
            "map_workers": max((op["num_parallel_workers"] for op in maps), default=None)}
