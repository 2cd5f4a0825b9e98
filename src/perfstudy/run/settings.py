"""How a run's operator settings are named, for the run that applies them and the model that
predicts them: each sized operator by its config key (its workers), and key + MP when its
Python runs in worker processes. Light on purpose (no MindSpore): decide/ imports it."""

from __future__ import annotations

from dataclasses import dataclass

MP = ":multiprocessing"  # suffix of a settings key: the map runs in processes
PRIMARY_KEY = "pipeline.num_parallel_workers"  # the article's map
ADDRESSED = "pipeline.workers."  # a settings key of any pipeline's operator, by address
# the case study's own pipeline factory: its config keys are aliases of operator addresses
BUILTIN_PIPELINE = "perfstudy.run.pipeline.case_study"
# MindSpore's operations that decode an image (a stage running one is decode-bound by kind, and
# its cost scales with the source's pixels: the decode remedy)
DECODE_OPS = ("Decode", "RandomCropDecodeResize", "DecodeVideo")
# Operator settings: workers per sized operator by its config key, and <key>:multiprocessing
# True when its Python runs in worker processes ({"pipeline.workers.map_2": 2, ...}).
Settings = dict[str, int | bool]


def operator_settings(nodes: list[dict]) -> Settings:
    """Workers (and processes) per sized operator of a described pipeline (run.pipeline.describe)."""
    settings: Settings = {}
    for node in nodes:
        if node.get("config_key"):
            settings[node["config_key"]] = node.get("num_parallel_workers") or 1
            if node.get("multiprocessing"):
                settings[node["config_key"] + MP] = True
    return settings


@dataclass(frozen=True)
class Workers:
    """Map workers asked for vs used.

    requested None means map() is called without num_parallel_workers; then MindSpore's
    process-wide default applies (`global_default`, what this study sets it to) instead of
    what MindSpore itself would choose on this machine (`mindspore_default`).
    """

    requested: int | None
    effective: int
    global_default: int | None
    mindspore_default: int
    cpu_count: int
    clamped: bool

    def as_dict(self) -> dict:
        """JSON-ready form for summary.json and MLflow."""
        return {"requested": self.requested, "effective": self.effective,
                "global_default": self.global_default,
                "mindspore_default": self.mindspore_default,
                "cpu_count": self.cpu_count, "clamped": self.clamped}
