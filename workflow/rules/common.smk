# Helpers shared by the rule files. Every arm's Hydra config is composed here, at parse
# time, so a bad key or value fails before anything runs, with one sentence.
import json
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod

from perfstudy.common.config import ConfigError, to_container
from perfstudy.data.prepare import Settings, prepared_dir
from perfstudy.orchestrate.study import (arm_overrides, compose_arm, manifest_path, previous_run,
                             reused_overrides, run_names, source_manifest_path)
from perfstudy.orchestrate.workflow_config import Workflow

FLOW = Workflow.of(config)  # checked against its schema (Snakefile); read by field from here on
RESULTS = FLOW.results
STUDY = FLOW.study
CONF_FILES = sorted(str(p) for p in Path(workflow.basedir, "conf").rglob("*.yaml"))
SCRIPTS = Path(workflow.basedir) / "scripts"
# The interpreter snakemake runs in (the project's .venv), or the rule's conda env's (which holds
# the hashed lock; this checkout's package is found on PYTHONPATH: pip's hash-checking mode
# cannot install a local folder beside a hashed lock).
PYTHON = (f"env PYTHONPATH={Path(workflow.basedir) / 'src'} python"
          if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
          else sys.executable)

def train_python() -> str:
    """PYTHON with the study's own code folders (`code:`) first on PYTHONPATH: where the
    factories its arms name live."""
    spec = FLOW.studies.get(STUDY)
    folders = [str((Path(workflow.basedir) / f).resolve()) for f in (spec.code if spec else [])]
    if not folders:
        return PYTHON
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        return f"env PYTHONPATH={shlex.quote(':'.join([*folders, str(Path(workflow.basedir) / 'src')]))} python"
    return (f"env PYTHONPATH={shlex.quote(':'.join(folders))}" + "${PYTHONPATH:+:$PYTHONPATH} "
            + shlex.quote(sys.executable))


def study_claims(study):
    """The study's claims file as configured (None: none); claims_input checks it is there."""
    from perfstudy.decide.claims import claims_path

    path = claims_path(study, FLOW.studies[study].claims or None, workflow.basedir)
    return path if path is not None and path.is_file() else None


try:
    ARMS = run_names(FLOW, STUDY)  # every run: each arm, and its repeats <arm>.r<k>
    # the claims tell an arm's rounds which bounds to decide (a remedy's "5x")
    # the device is checked when the run starts (onstart, Snakefile): a cluster's jobs train on
    # its nodes, whose device is theirs to have, not the login node's
    ARM_CONFIGS = {arm: compose_arm(FLOW, STUDY, arm, study_claims(STUDY), device_here=False)
                   for arm in ARMS}
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None


def train_after(wildcards):
    """With repeats > 1 the runs train in seeded random rounds (perfstudy.orchestrate.study.
    run_order): each waits for the run before it. ancient(): an order, not data, so retraining
    one run does not retrain the runs after it."""
    before = previous_run(FLOW, wildcards.study, wildcards.arm)
    return [ancient(f"{RESULTS}/runs/{wildcards.study}/{before}/summary.json")] if before else []


def reused_summaries(wildcards):
    """The summaries of the earlier runs whose rounds this run may reuse (verify.reuse_from):
    data, so the run trains after them, and again when one of them is trained again."""
    return list(ARM_CONFIGS[wildcards.arm].paths.reused)


def source_run_override(cfg):
    """paths.source_run as compose_arm found it (source_overrides composes the earlier arms:
    once, at parse time, not again for each job)."""
    return [f"paths.source_run={cfg.paths.source_run}"] if cfg.paths.source_run else []


def source_diagnosis(wildcards):
    """The diagnosis whose prediction of this prepared run's step its rounds decide
    (paths.source_run): data, so the run trains after that analysis."""
    run = ARM_CONFIGS[wildcards.arm].paths.source_run
    return [f"{run}/diagnosis.json"] if run else []


def dataset_manifest(wildcards):
    """Manifest of the dataset the arm trains on (shared by arms that use the same data)."""
    return str(manifest_path(ARM_CONFIGS[wildcards.arm]))


def dataset_params(wildcards):
    """The data section (JSON) of the first arm whose source is this dataset folder.

    A param, not the arm's config.yaml as an input: only a change of the data settings
    regenerates the photos (minutes), not every edit of conf/.
    """
    for cfg in ARM_CONFIGS.values():
        if source_manifest_path(cfg).parent.name == wildcards.dataset:
            source = {k: v for k, v in to_container(cfg.data).items()
                      if not k.startswith("prepared")}  # how it is prepared is not the source's
            return json.dumps({"data": source, "data_root": cfg.paths.data_root}, sort_keys=True)
    raise WorkflowError(f"No arm of study {STUDY} uses dataset {wildcards.dataset}.")


def _prepared_arm(wildcards):
    for cfg in ARM_CONFIGS.values():
        if cfg.data.prepared and manifest_path(cfg).parent.name == wildcards.prepared:
            return cfg
    raise WorkflowError(f"No arm of study {STUDY} trains on prepared dataset {wildcards.prepared}.")


def prepared_source(wildcards):
    """The manifest of the source a prepared dataset is made from."""
    return str(source_manifest_path(_prepared_arm(wildcards)))


def prepared_params(wildcards):
    """The preparation settings (JSON) of a prepared dataset."""
    cfg = _prepared_arm(wildcards)
    settings = Settings.from_config(cfg)
    return json.dumps({"settings": {"image_size": settings.image_size,
                                    "short_side": settings.short_side,
                                    "quality": settings.quality,
                                    "format": settings.format},
                       "out": str(prepared_dir(cfg.data, settings, cfg.paths.data_root))},
                      sort_keys=True)


def claims_input(wildcards):
    """The study's claims file (its `claims:` key, else workflow/claims/<study>.yaml when it
    exists): an input, so editing a claim rebuilds the report; [] without one."""
    from perfstudy.decide.claims import claims_path

    path = claims_path(wildcards.study, FLOW.studies[wildcards.study].claims or None,
                       workflow.basedir)
    if path is not None and not path.is_file():
        raise WorkflowError(f"Study {wildcards.study}'s claims file {path} does not exist; fix "
                            "its `claims:` path (relative to the workflow folder) or remove it.")
    return [str(path)] if path is not None else []


def study_outputs():
    out = f"{RESULTS}/report/{STUDY}"
    return [f"{out}/report.html", f"{out}/report.md", f"{out}/comparison.csv",
            f"{out}/mlflow_study.json"]


def tracking_uri_hint():
    """The store the tracking rules write to, for the closing message."""
    from perfstudy.present.mlflow_store import resolve_uri

    return resolve_uri(ARM_CONFIGS[ARMS[0]].tracking.uri, RESULTS)


def closing_message():
    """What a finished run prints: the scorecard's answer, the report, and where MLflow's UI
    shows the runs (the Model training view: MLflow 3 otherwise opens its GenAI overview)."""
    from perfstudy.common.io import read_json
    from perfstudy.present.mlflow_store import ui_hint

    folder = Path(RESULTS, "report", STUDY)  # (`report` is a Snakemake keyword)
    lines = [""]
    if (folder / "scorecard.json").is_file():
        lines.append(f"Scorecard: {read_json(folder / 'scorecard.json')['headline']}")
    lines.append(f"Report: {folder / 'report.html'}")
    ids = Path(RESULTS, "runs", STUDY, "mlflow_study.json")
    lines.append(ui_hint(tracking_uri_hint(),
                         read_json(ids)["experiment_id"] if ids.is_file() else None))
    return "\n".join(lines) + "\n"
