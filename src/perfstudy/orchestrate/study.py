"""The workflow's view of a study: which arms it has and each arm's composed config.

Used by the Snakefile (at parse time, so a bad override fails before anything runs) and by
the compose_config rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from perfstudy.common.config import ConfigError, compose_run_config
from perfstudy.common.provenance import cpu_count
from perfstudy.data.dataset import MANIFEST, dataset_dir
from perfstudy.data.prepare import Settings, prepared_dir


def study_spec(wf_config: dict[str, Any], study: str | None = None) -> dict[str, Any]:
    """The study's entry in workflow/config.yaml; ConfigError names the valid ones."""
    study = study or wf_config["study"]
    studies = wf_config.get("studies", {})
    if study not in studies:
        raise ConfigError(f"Unknown study {study!r} in workflow/config.yaml; use one of "
                          f"{', '.join(sorted(studies))} (or add it under `studies:`).")
    spec = studies[study]
    if not spec.get("arms") and not spec.get("sweep") and not spec.get("scenarios"):
        raise ConfigError(f"Study {study!r} has no arms in workflow/config.yaml; add at least one "
                          "under `arms:` or a `sweep:`.")
    return spec


def sweep_values(values: Any) -> list[int]:
    """A sweep's values: a list as written, or "cpus" = 1..the CPUs this process may use."""
    if values == "cpus":
        return list(range(1, cpu_count() + 1))
    return [int(value) for value in values]


def arm_table(wf_config: dict[str, Any], study: str | None = None) -> dict[str, list[str]]:
    """Arm name -> its Hydra overrides: the written arms, then one per sweep value
    (`<name>_<value>`: the sweep's overrides plus key=value)."""
    spec = study_spec(wf_config, study)
    arms = dict(spec.get("arms") or {})
    if spec.get("scenarios"):
        arms.update(scenario_arms(spec, study or wf_config["study"]))
    sweep = spec.get("sweep")
    if sweep:
        for value in sweep_values(sweep.get("values", "cpus")):
            name = f"{sweep.get('name', 'workers')}_{value}"
            if name in arms:
                raise ConfigError(f"Study {study or wf_config['study']!r}: the sweep's arm {name!r} "
                                  "is also written under `arms:`; rename one of them.")
            arms[name] = [*sweep.get("overrides", []), f"{sweep['key']}={value}"]
    only = wf_config.get("arms") or []
    unknown = [name for name in only if name not in arms]
    if unknown:
        raise ConfigError(f"Arm {unknown[0]!r} is not an arm of study "
                          f"{study or wf_config['study']!r}; use some of {', '.join(arms)} in "
                          "`arms` (or leave it empty for all).")
    return {name: overrides for name, overrides in arms.items() if not only or name in only}


def scenario_arms(spec: dict[str, Any], study: str) -> dict[str, list[str]]:
    """A diagnosis benchmark's arms: per scenario the profiled run `<scenario>`, then
    `<scenario>_sweep`, profiler off, which measures every value of its key (in threads, and in
    processes where the scenario has `processes`) in interleaved rounds (perfstudy.run.sweep);
    with the study's `autotune: true`, `<scenario>_autotune` (MindSpore's AutoTune on). A scenario
    with `truth: other` reuses other's sweep."""
    arms: dict[str, list[str]] = {}
    chosen = spec.get("select") or list(spec["scenarios"])
    for name in chosen:
        if name not in spec["scenarios"]:
            raise ConfigError(f"Study {study!r} selects scenario {name!r}, which it does not have; use "
                              f"one of {', '.join(spec['scenarios'])}.")
        scen = spec["scenarios"][name]
        truth = scen.get("truth") or name
        owner = spec["scenarios"].get(truth)
        if owner is None or not owner.get("key"):
            raise ConfigError(f"Study {study!r}, scenario {name!r}: its truth {truth!r} is not a "
                              "scenario with a `key` to sweep.")
        tag = [f"scenario.name={name}", f"scenario.truth={truth}", f"scenario.key={owner['key']}",
               f"scenario.held_out={str(bool(scen.get('held_out'))).lower()}"]
        arms[name] = [*scen["arm"], *tag, "scenario.role=diagnosed"]
        if truth != name:
            if truth not in chosen:
                raise ConfigError(f"Study {study!r}: scenario {name!r} needs scenario {truth!r} "
                                  "(its truth); select both.")
            continue
        if spec.get("autotune"):  # MindSpore's AutoTune from the scenario's own setting
            arms[f"{name}_autotune"] = [*scen["arm"], "pipeline.autotune=true", "profiler=off",
                                        "verify.candidates=0", *tag, "scenario.role=peer"]
        values = ",".join(str(v) for v in sweep_values(scen.get("values", "cpus")))
        arms[f"{name}_sweep"] = [*(scen.get("sweep_overrides") or scen["arm"]), "profiler=off",
                                 "verify.candidates=0", f"sweep.key={scen['key']}",
                                 f"sweep.workers=[{values}]",
                                 f"sweep.processes={str(bool(scen.get('processes'))).lower()}",
                                 *tag, "scenario.role=truth"]
    return arms


def arm_names(wf_config: dict[str, Any], study: str | None = None) -> list[str]:
    """Arms of the study: those written, in order, then the sweep's."""
    return list(arm_table(wf_config, study))


def repeats(wf_config: dict[str, Any]) -> int:
    """How many times every arm runs (workflow/config.yaml `repeats`, default 1)."""
    return int(wf_config.get("repeats", 1) or 1)


def run_name(arm: str, repeat: int) -> str:
    """The folder of repeat k of an arm: the arm's name for the first, <arm>.r<k> after."""
    return arm if repeat == 1 else f"{arm}.r{repeat}"


def run_names(wf_config: dict[str, Any], study: str | None = None) -> list[str]:
    """Every run of the study: the arms, then the arms again for each further repeat (so a
    slow drift of the machine touches every arm alike)."""
    count = repeats(wf_config)
    return [run_name(arm, k) for k in range(1, count + 1) for arm in arm_names(wf_config, study)]


def run_order(wf_config: dict[str, Any], study: str | None = None) -> list[str]:
    """The order the runs train in when every arm repeats (repeats > 1): rounds, round k the
    k-th repeat of every arm, each round in an order drawn from a generator seeded by the
    workflow config's `order_seed` and the round (Abedi & Brecht's randomized multiple
    interleaved trials: the host's drift falls on every arm alike, and repeat k of two arms
    is a pair measured close in time). With one repeat, the arms in the study's order."""
    arms = arm_names(wf_config, study)
    count = repeats(wf_config)
    if count == 1:
        return arms
    seed = int(wf_config.get("order_seed", 0) or 0)
    out = []
    for k in range(1, count + 1):
        order = np.random.default_rng([seed, k]).permutation(len(arms))
        out += [run_name(arms[i], k) for i in order]
    return out


def previous_run(wf_config: dict[str, Any], study: str, run: str) -> str | None:
    """The run that trains just before `run` in run_order (None: the first, or one repeat)."""
    if repeats(wf_config) == 1:
        return None
    order = run_order(wf_config, study)
    at = order.index(run)
    return order[at - 1] if at else None


def split_run(wf_config: dict[str, Any], study: str, run: str) -> tuple[str, int]:
    """(arm, repeat) of a run name; ConfigError names the valid ones."""
    arms = arm_table(wf_config, study)
    if run in arms:
        return run, 1
    arm, _, suffix = run.rpartition(".r")
    if arm in arms and suffix.isdigit() and 2 <= int(suffix) <= repeats(wf_config):
        return arm, int(suffix)
    raise ConfigError(f"Unknown arm {run!r} of study {study!r}; use one of {', '.join(arms)}"
                      + (f" (repeats: <arm>.r2 .. <arm>.r{repeats(wf_config)})"
                         if repeats(wf_config) > 1 else "") + ".")


def arm_overrides(wf_config: dict[str, Any], study: str, run: str) -> list[str]:
    """Hydra overrides of one run: its arm's, the global ones, then study/arm/repeat/results."""
    arm, repeat = split_run(wf_config, study, run)
    return [*arm_table(wf_config, study)[arm], *wf_config.get("overrides", []), f"study={study}",
            f"arm={arm}", f"repeat={repeat}", f"run={run}",
            f"paths.results={wf_config.get('results', 'results')}"]


def compose_arm(wf_config: dict[str, Any], study: str, run: str) -> DictConfig:
    """A run's (an arm's, or one repeat of it) fully resolved, validated config."""
    try:
        return compose_run_config(arm_overrides(wf_config, study, run))
    except ConfigError as exc:
        raise ConfigError(f"Study {study!r}, arm {run!r}: {exc}") from None


def manifest_path(cfg: DictConfig) -> Path:
    """Where the manifest of the dataset the arm trains on lives (a prepared one's when
    data.prepared)."""
    if cfg.data.prepared:
        return prepared_dir(cfg.data, Settings.from_config(cfg), cfg.paths.data_root) / MANIFEST
    return source_manifest_path(cfg)


def source_manifest_path(cfg: DictConfig) -> Path:
    """Where the manifest of the arm's source dataset (generated or data.path) lives."""
    return dataset_dir(cfg.data, cfg.paths.data_root) / MANIFEST


def check_workflow_config(wf_config: dict[str, Any], schema_path: str | Path) -> None:
    """Validate workflow/config.yaml (+ --config) against its JSON-Schema; one sentence on error."""
    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for found in list(validator.iter_errors(wf_config)):  # `--config` leaves a nested true a string
        wanted = found.validator_value if found.validator == "type" else None
        if "boolean" in ([wanted] if isinstance(wanted, str) else wanted or []) and \
                isinstance(found.instance, str) and found.instance.lower() in ("true", "false"):
            *parents, last = found.absolute_path
            holder = wf_config
            for part in parents:
                holder = holder[part]
            holder[last] = found.instance.lower() == "true"
    error = jsonschema.exceptions.best_match(validator.iter_errors(wf_config))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path) or "top level"
        raise ConfigError(f"workflow/config.yaml ({where}): {error.message}; fix the file or the "
                          "--config value (keys and their meaning: workflow/schemas/config.schema.yaml).")
