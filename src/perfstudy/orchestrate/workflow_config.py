"""workflow/config.yaml (and `--config`) as records: what the DAG runs. Checked against its JSON
Schema first (perfstudy.orchestrate.study.check_workflow_config: one sentence per problem),
then read once into these (Workflow.of), so the rest of the workflow never reads it by key."""

from __future__ import annotations

from dataclasses import dataclass

from perfstudy.common.records import doc, from_dict


@dataclass(frozen=True)
class Scenario:
    """A diagnosis benchmark's pipeline: its diagnosed arm and the key its truth sweeps."""

    arm: list[str] = doc("its arm's Hydra overrides")
    key: str = doc("the operator key its sweep measures (empty: another scenario's truth)",
                   default="")
    values: str | list[int] = doc("the sweep's values, or 'cpus' (1..the CPUs)", default="cpus")
    processes: str = doc("the boolean config key that puts its Python in worker processes "
                         "(set: every value is measured in processes too)", default="")
    sweep_overrides: list[str] = doc("the sweep arm's overrides, when not the arm's",
                                     default_factory=list)
    truth: str = doc("another scenario whose sweep is this one's truth", default="")
    held_out: bool = doc("kept out of any fitting of the advisor's model", default=False)


@dataclass(frozen=True)
class ArmSweep:
    """A study's fixed-setting arms: one arm per value of a key."""

    key: str = doc("the config key swept")
    values: str | list[int] = doc("its values, or 'cpus' (1..the CPUs)", default="cpus")
    name: str = doc("the arms' name stem (<name>_<value>)", default="workers")
    overrides: list[str] = doc("overrides every sweep arm gets", default_factory=list)


@dataclass(frozen=True)
class StudySpec:
    """One study: written arms, a sweep of arms, or a diagnosis benchmark's scenarios."""

    arms: dict[str, list[str]] = doc("arm name -> its Hydra overrides", default_factory=dict)
    sweep: ArmSweep | None = doc("fixed-setting arms, one per value", default=None)
    scenarios: dict[str, Scenario] = doc("a diagnosis benchmark's scenarios", default_factory=dict)
    select: list[str] = doc("run only these scenarios (empty: all)", default_factory=list)
    autotune: bool = doc("also run each scenario with Dataset AutoTune", default=False)
    description: str = doc("what the study compares", default="")
    claims: str = doc("its claims file (empty: workflow/claims/<study>.yaml if any)", default="")
    overrides: list[str] = doc("Hydra overrides every arm of this study gets after its own "
                               "(before the workflow's `overrides`)", default_factory=list)
    code: list[str] = doc("folders of the study's own code, on PYTHONPATH for its trainings",
                          default_factory=list)


@dataclass(frozen=True)
class Workflow:
    """The workflow's settings (workflow/schemas/config.schema.yaml says what each means)."""

    study: str = doc("the study to run", default="seed_case")
    results: str = doc("the folder every output goes to", default="results")
    repeats: int = doc("runs of every arm", default=1)
    order_seed: int = doc("seed of the runs' interleaved order", default=0)
    arms: list[str] = doc("run only these arms (empty: all)", default_factory=list)
    overrides: list[str] = doc("Hydra overrides every arm gets after its own",
                               default_factory=list)
    studies: dict[str, StudySpec] = doc("the studies, by name", default_factory=dict)

    @classmethod
    def of(cls, config: dict) -> Workflow:
        """Snakemake's `config` (schema-checked: no unknown key) as a Workflow."""
        return from_dict(cls, dict(config), "workflow/config.yaml")
