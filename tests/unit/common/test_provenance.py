"""Where a run ran: host, CPU, cores and the scheduler's job; unlike machines are flagged."""

import pandas as pd
from records import make_summary

from perfstudy.common import provenance
from perfstudy.decide.arms import Arm
from perfstudy.present.sentences import machines_check


def test_environment_names_the_host_and_no_job_outside_a_scheduler(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    env = provenance.environment()
    assert env["host"] and env["cpu_model"] and env["usable_cpus"] >= 1
    assert env["scheduler"] is None


def test_a_slurm_job_is_recorded(monkeypatch):
    for key, value in {"SLURM_JOB_ID": "42", "SLURM_CLUSTER_NAME": "perf", "SLURM_JOB_PARTITION": "cpu",
                       "SLURMD_NODENAME": "node7", "SLURM_CPUS_ON_NODE": "16"}.items():
        monkeypatch.setenv(key, value)
    assert provenance.environment()["scheduler"] == {
        "name": "slurm", "job_id": "42", "cluster": "perf", "partition": "cpu", "node": "node7",
        "cpus_on_node": "16"}


def _arm(name, model, cores):
    summary = {"environment": {"cpu_model": model, "usable_cpus": cores, "host": f"{name}-host"}}
    return Arm(name, make_summary(summary), pd.DataFrame())


def test_unlike_cpus_are_flagged_in_one_sentence():
    assert machines_check([_arm("baseline", "Xeon 8480", 16), _arm("tuned", "Xeon 8480", 16)]) is None
    sentence = machines_check([_arm("baseline", "Xeon 8480", 16), _arm("tuned", "EPYC 9654", 16)])
    assert sentence.startswith("The arms ran on unlike CPUs (baseline on Xeon 8480 x16; tuned on EPYC 9654 x16)")
    assert sentence.count(". ") == 0 and sentence.endswith(".")
    assert "x8" in machines_check([_arm("baseline", "Xeon", 16), _arm("tuned", "Xeon", 8)])
