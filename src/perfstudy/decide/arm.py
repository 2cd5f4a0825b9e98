"""An arm of a study as the later stages read it: its run summary, steps, diagnosis and
profile tables, loaded from its run folder in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perfstudy.common.io import read_table
from perfstudy.decide.recommendation import Diagnosis, read_diagnosis
from perfstudy.run.summary import RunSummary, read_summary


@dataclass
class Arm:
    """One arm's results as the report needs them."""

    name: str
    summary: RunSummary
    steps: pd.DataFrame
    diagnosis: Diagnosis | None = None
    ops: pd.DataFrame | None = None
    queues: pd.DataFrame | None = None


def load_arm(run_dir: str | Path, name: str) -> Arm:
    """An arm's results from its run folder (analysis outputs when present)."""
    run = Path(run_dir)
    diagnosis = read_diagnosis(run) if (run / "diagnosis.json").is_file() else None
    return Arm(name, read_summary(run), pd.read_csv(run / "steps.csv"), diagnosis,
               read_table(run / "pipeline_ops.csv"), read_table(run / "queues.csv"))
