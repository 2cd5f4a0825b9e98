"""How a run's operator settings are named, for the run that applies them and the model that
predicts them: each sized operator by its config key (its workers), and key + MP when its
Python runs in worker processes. Light on purpose (no MindSpore): decide/ imports it."""

from __future__ import annotations

from typing import Any

MP = ":multiprocessing"  # suffix of a settings key: the map runs in processes
PRIMARY_KEY = "pipeline.num_parallel_workers"  # the article's map
ADDRESSED = "pipeline.workers."  # a settings key of any pipeline's operator, by address
# the case study's own pipeline factory: its config keys are aliases of operator addresses
BUILTIN_PIPELINE = "perfstudy.run.pipeline.case_study"


def pipeline_factory(summary: dict[str, Any]) -> str:
    """The pipeline factory a run's summary.json records (the case study's for older runs)."""
    return (summary.get("factories") or {}).get("pipeline", BUILTIN_PIPELINE)


def operator_settings(nodes: list[dict]) -> dict[str, Any]:
    """Workers (and processes) per sized operator of a described pipeline (run.pipeline.describe)."""
    settings: dict[str, Any] = {}
    for node in nodes:
        if node.get("config_key"):
            settings[node["config_key"]] = node.get("num_parallel_workers") or 1
            if node.get("multiprocessing"):
                settings[node["config_key"] + MP] = True
    return settings
