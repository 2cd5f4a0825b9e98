"""The workflow's view of a study: which arms it has and each arm's composed config.

Used by the Snakefile (at parse time, so a bad override fails before anything runs) and by
the compose_config rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from perfstudy.config import ConfigError, compose_run_config
from perfstudy.data import MANIFEST, dataset_dir
from perfstudy.provenance import cpu_count


def study_spec(wf_config: dict[str, Any], study: str | None = None) -> dict[str, Any]:
    """The study's entry in workflow/config.yaml; ConfigError names the valid ones."""
    study = study or wf_config["study"]
    studies = wf_config.get("studies", {})
    if study not in studies:
        raise ConfigError(f"Unknown study {study!r} in workflow/config.yaml; use one of "
                          f"{', '.join(sorted(studies))} (or add it under `studies:`).")
    spec = studies[study]
    if not spec.get("arms") and not spec.get("sweep"):
        raise ConfigError(f"Study {study!r} has no arms in workflow/config.yaml; add at least one "
                          "under `arms:` or a `sweep:`.")
    return spec


def sweep_values(values: Any) -> list[int]:
    """A sweep's values: a list as written, or "cpus" = 1..the CPUs this process may use."""
    if values == "cpus":
        return list(range(1, cpu_count() + 1))
    return list(values)


def arm_table(wf_config: dict[str, Any], study: str | None = None) -> dict[str, list[str]]:
    """Arm name -> its Hydra overrides: the written arms, then one per sweep value
    (`<name>_<value>`: the sweep's overrides plus key=value)."""
    spec = study_spec(wf_config, study)
    arms = dict(spec.get("arms") or {})
    sweep = spec.get("sweep")
    if sweep:
        for value in sweep_values(sweep.get("values", "cpus")):
            name = f"{sweep.get('name', 'workers')}_{value}"
            if name in arms:
                raise ConfigError(f"Study {study or wf_config['study']!r}: the sweep's arm {name!r} "
                                  "is also written under `arms:`; rename one of them.")
            arms[name] = [*sweep.get("overrides", []), f"{sweep['key']}={value}"]
    return arms


def arm_names(wf_config: dict[str, Any], study: str | None = None) -> list[str]:
    """Arms of the study: those written, in order, then the sweep's."""
    return list(arm_table(wf_config, study))


def arm_overrides(wf_config: dict[str, Any], study: str, arm: str) -> list[str]:
    """Hydra overrides of one arm: its own, the global ones, then study/arm/results."""
    arms = arm_table(wf_config, study)
    if arm not in arms:
        raise ConfigError(f"Unknown arm {arm!r} of study {study!r}; use one of {', '.join(arms)}.")
    return [*arms[arm], *wf_config.get("overrides", []), f"study={study}", f"arm={arm}",
            f"paths.results={wf_config.get('results', 'results')}"]


def compose_arm(wf_config: dict[str, Any], study: str, arm: str) -> DictConfig:
    """The arm's fully resolved, validated run config."""
    try:
        return compose_run_config(arm_overrides(wf_config, study, arm))
    except ConfigError as exc:
        raise ConfigError(f"Study {study!r}, arm {arm!r}: {exc}") from None


def manifest_path(cfg: DictConfig) -> Path:
    """Where the arm's dataset manifest lives."""
    return dataset_dir(cfg.data, cfg.paths.data_root) / MANIFEST


def check_workflow_config(wf_config: dict[str, Any], schema_path: str | Path) -> None:
    """Validate workflow/config.yaml (+ --config) against its JSON-Schema; one sentence on error."""
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(wf_config))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "top level"
        raise ConfigError(f"workflow/config.yaml ({where}): {error.message}; fix the file or the "
                          "--config value (keys and their meaning: workflow/schemas/config.schema.yaml).")
