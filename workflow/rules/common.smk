# Helpers shared by the rule files. Every arm's Hydra config is composed here, at parse
# time, so a bad key or value fails before anything runs, with one sentence.
import json
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from perfstudy.config import ConfigError
from perfstudy.study import arm_names, arm_overrides, compose_arm, manifest_path

RESULTS = config["results"]
STUDY = config["study"]
CONF_FILES = sorted(str(p) for p in Path(workflow.basedir, "conf").rglob("*.yaml"))
SCRIPTS = Path(workflow.basedir) / "scripts"
PYTHON = sys.executable  # the interpreter snakemake runs in (the project .venv)

try:
    ARMS = arm_names(config, STUDY)
    ARM_CONFIGS = {arm: compose_arm(config, STUDY, arm) for arm in ARMS}
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None


def run_dir(arm):
    return f"{RESULTS}/runs/{STUDY}/{arm}"


def dataset_manifest(wildcards):
    """Manifest of the dataset the arm trains on (shared by arms that use the same data)."""
    return str(manifest_path(ARM_CONFIGS[wildcards.arm]))


def arm_for_dataset(wildcards):
    """The first arm whose config names this dataset folder (its config drives generation)."""
    for arm, cfg in ARM_CONFIGS.items():
        if Path(manifest_path(cfg)).parent.name == wildcards.dataset:
            return f"{RESULTS}/runs/{STUDY}/{arm}/config.yaml"
    raise WorkflowError(f"No arm of study {STUDY} uses dataset {wildcards.dataset}.")


def study_outputs():
    out = f"{RESULTS}/report/{STUDY}"
    return [f"{out}/report.html", f"{out}/report.md", f"{out}/comparison.csv",
            f"{out}/mlflow_study.json"]
