"""MindSpore's own MindData pipeline analyzer, run on a run's saved dataset profile.

The installed MindSpore's public profiler analysis classes (MindDataParser, then
MindDataPiplineSummaryViewer, whose BottleneckAnalyzer writes `bottleneck_warning` and
`bottleneck_suggestion` into minddata_pipeline_summary_<rank>.json: the successor of
MindInsight's data-pipeline Helper) read the same profile/dataset/ files our diagnosis reads.
Nothing of its rules is copied here: it is called, and its answer parsed into an operator
(MindData's op id) and a knob. If its classes move in another MindSpore, `read` says so in one
sentence and the study carries on without it.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

TOOL = "MindSpore's MindData analyzer"
_OP = re.compile(r"^(?P<type>[A-Za-z]+)\(id=(?P<id>\d+)\)")
_WORKERS = re.compile(r"num_parallel_workers>(?P<n>\d+)")


def _analyze(dataset_dir: Path, work: Path) -> dict[str, Any]:
    from mindspore.profiler.analysis.parser.ms_minddata_parser import MindDataParser
    from mindspore.profiler.analysis.viewer.ms_minddata_viewer import MindDataPiplineSummaryViewer
    from mindspore.profiler.common.log import ProfilerLogger

    ProfilerLogger.init(str(work))
    out = work / "out"
    out.mkdir()
    kwargs = {"rank_id": 0, "device_id": 0, "activities": ["CPU"], "framework_path": str(dataset_dir),
              "ascend_ms_dir": str(work), "ascend_profiler_output_path": str(out)}
    data = MindDataParser(**kwargs)._parse({})
    MindDataPiplineSummaryViewer(**kwargs).save(data)
    found = sorted(out.rglob("minddata_pipeline_summary_*.json"))
    if not found:
        raise FileNotFoundError("it wrote no minddata_pipeline_summary_<rank>.json")
    return json.loads(found[0].read_text())


def parse(warning: str, suggestion: str) -> dict[str, Any]:
    """The analyzer's sentence as an operator and a knob: op type and id from the warning
    ("Batch(id=1)"), the knob from the suggestion (num_parallel_workers>N: N + 1 workers;
    prefetch_size; or none it names)."""
    op = _OP.match(warning or "")
    workers = _WORKERS.search(suggestion or "")
    knob = ("num_parallel_workers" if workers else "prefetch_size" if "prefetch_size" in (suggestion or "")
            else None)
    return {"op_type": op["type"] if op else None, "op_id": int(op["id"]) if op else None,
            "knob": knob, "workers": int(workers["n"]) + 1 if workers else None}


def read(profile_dir: str | Path) -> dict[str, Any]:
    """What MindSpore's analyzer concludes on a run's profile/: its warning and suggestion,
    parsed; {"error": sentence} when it cannot run (no dataset profile, or its API moved)."""
    dataset_dir = Path(profile_dir) / "dataset"
    if not any(dataset_dir.glob("pipeline_profiling_*.json")):
        return {"tool": TOOL, "error": f"no dataset profile in {dataset_dir} (profiler off)"}
    try:
        with tempfile.TemporaryDirectory(prefix="msanalyzer-") as work:
            summary = _analyze(dataset_dir, Path(work))
    except Exception as exc:  # noqa: BLE001 - a peer tool's failure must never stop the study
        log.warning("%s did not run: %s", TOOL, exc)
        return {"tool": TOOL, "error": f"{TOOL} did not run on this MindSpore ({type(exc).__name__}: "
                f"{exc}); its classes may have moved"}
    warnings = [w for w in summary.get("bottleneck_warning", []) if w]
    suggestions = [s for s in summary.get("bottleneck_suggestion", []) if s]
    warning = warnings[0] if warnings else ""
    suggestion = suggestions[0] if suggestions else ""
    cpu = dict(zip(summary.get("op_ids", []), summary.get("avg_cpu_pct_per_worker", []), strict=False))
    return {"tool": TOOL, "warning": warning, "suggestion": suggestion, **parse(warning, suggestion),
            "cpu_pct_per_worker": {str(k): v for k, v in cpu.items()}}
