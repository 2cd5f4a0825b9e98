"""The arms of a study as the later stages read them (`Arm`: its run summary, steps, diagnosis
and profile tables, loaded from its run folder in one place), which arm's model speaks for the
study, and its recommendation checked against the arms that ran (`PickCheck`: the recommended
setting's measured step against the fastest arm on the same data; the claims score it, the
report's what-if part shows it)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from perfstudy.common.io import read_table
from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.decide.diagnosis import Diagnosis, read_diagnosis
from perfstudy.run.settings import PRIMARY_KEY, Settings
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



def source_arm(arms: list[Arm]) -> Arm | None:
    """The arm whose advisor speaks for the study: the baseline, else the first advised one.
    None in a diagnosis benchmark: its arms run different pipelines, each scored against its
    own sweep (perfstudy.decide.scenarios), so no one arm predicts them all."""
    if any(a.summary.scenario for a in arms):
        return None
    advised = [a for a in arms if (a.diagnosis.advisor if a.diagnosis else None)]
    return next((a for a in advised if a.name == "baseline"), advised[0] if advised else None)


def fixed_arms(arms: list, source=None) -> list:
    """Arms that ran one worker count throughout (not AutoTune, which changes it as it goes)
    on the source arm's data (a prepared arm reads other data: its own prediction is in
    perfstudy.decide.remedy_proof)."""
    data = source.summary.dataset_sha256 if source is not None else None
    return [a for a in arms if not a.summary.autotune
            and (data is None or a.summary.dataset_sha256 == data)]


def arm_workers(arm) -> int:
    return int(arm.summary.num_parallel_workers.effective)


def settings(arm) -> Settings:
    """The arm's sized operators as the advisor names them (older runs: the article's map)."""
    return arm.summary.operator_settings or {PRIMARY_KEY: arm_workers(arm)}



@dataclass(frozen=True)
class PickCheck:
    """The source arm's recommendation against the best measured arm on the same data."""

    source: str  # the arm whose model speaks for the study
    best_arm: str  # the fastest arm that ran one setting throughout
    best_workers: int
    best_step_ms: float
    no_verdict: str | None = None  # why nothing was recommended (a window not steady)
    recommended_workers: int | None = None
    recommended: Settings | None = None
    picked_step_ms: float | None = None  # the fastest arm that ran the recommended setting
    picked_vs_best: float | None = None
    within_target: bool | None = None


def pick_check(arms: list[Arm]) -> PickCheck | None:
    """The source arm's recommended setting against the best measured arm (None without an
    advisor). Without a verdict (its window was not steady) nothing was recommended: the check
    says so (`no_verdict`) and compares nothing."""
    source = source_arm(arms)
    if source is None:
        return None
    answer = source.diagnosis.recommendation
    fixed = fixed_arms(arms, source)
    best = min(fixed, key=lambda a: a.summary.steady_step_ms)
    result = PickCheck(source=source.name, best_arm=best.name, best_workers=arm_workers(best),
                       best_step_ms=best.summary.steady_step_ms)
    if answer.action == "not_steady":
        return replace(result, no_verdict=answer.sentence)
    chosen = answer.settings or source.diagnosis.advisor.pick
    count = int(chosen.get(PRIMARY_KEY, arm_workers(source)))
    result = replace(result, recommended_workers=count, recommended=chosen)
    picked = [a for a in fixed if arm_workers(a) == count]
    if picked:
        step = min(a.summary.steady_step_ms for a in picked)
        result = replace(result, picked_step_ms=step, picked_vs_best=step / best.summary.steady_step_ms - 1,
                         within_target=step <= best.summary.steady_step_ms * (1 + GAIN_THAT_MATTERS))
    return result
