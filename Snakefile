# The study's only entry point:  snakemake --cores all
# Settings: workflow/config.yaml (validated by workflow/schemas/config.schema.yaml); change
# them with --config, e.g.  snakemake --cores all --config study=seed_case overrides='[size=smoke]'
import os
import sys
import time

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from perfstudy.orchestrate.cli import errors_in_logs
from perfstudy.orchestrate.cluster import ended_jobs
from perfstudy.common.config import ConfigError
from perfstudy.common.io import OutputError, check_writable
from perfstudy.orchestrate.study import check_workflow_config

min_version("9.0")
STARTED = time.time()


# Found next to this Snakefile, so `snakemake -s /path/to/Snakefile -d /elsewhere` works.
configfile: os.path.join(workflow.basedir, "workflow", "config.yaml")


try:  # one sentence for a bad setting, then Snakemake's own check (it fills the defaults)
    check_workflow_config(config, os.path.join(workflow.basedir, "workflow/schemas/config.schema.yaml"))
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
validate(config, "workflow/schemas/config.schema.yaml")
try:  # an unwritable results folder fails here, not half way through the study
    check_writable(config["results"], "results")
except OutputError as exc:
    raise WorkflowError(str(exc)) from None


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/analyze.smk"
include: "workflow/rules/track.smk"
include: "workflow/rules/report.smk"


# Where snakemake runs, also under a cluster executor: seconds of work each, and the tracking
# rules talk to the tracking server from the machine the user started the study on.
localrules: all, compose_config, track_init, track_arm, make_report, track_study


rule all:
    input:
        study_outputs(),
    default_target: True


onstart:
    # Trainings on this machine: each arm's device must be usable here, refused in one sentence
    # before any data is built (a cluster's jobs check their own node's device).
    if not workflow.non_local_exec:
        from perfstudy.orchestrate.study import device_problem

        problem = device_problem(STUDY, ARM_CONFIGS)
        if problem:
            raise WorkflowError(problem)
    # Jobs on cluster nodes log to the tracking store from there: refuse a SQLite file up front.
    if workflow.non_local_exec:
        from perfstudy.present.mlflow_store import cluster_store_problem

        problem = cluster_store_problem(tracking_uri_hint(), workflow.executor_plugin.name)
        if problem:
            raise WorkflowError(problem)


onsuccess:
    print(closing_message(), flush=True)


onerror:
    for line in errors_in_logs(f"{RESULTS}/logs", STARTED):
        print(line, file=sys.stderr)
    for line in ended_jobs(STARTED):  # SLURM jobs cancelled or cut at their time limit
        print(f"error: {line}", file=sys.stderr)
