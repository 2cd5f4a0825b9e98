"""The workflow's view of a study: which arms it has and each arm's composed config.

Used by the Snakefile (at parse time, so a bad override fails before anything runs) and by
the compose_config rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from perfstudy.common import device
from perfstudy.common.config import ConfigError, compose_run_config, flatten, to_container
from perfstudy.common.provenance import cpu_count
from perfstudy.data.dataset import MANIFEST, dataset_dir
from perfstudy.data.prepare import Settings, prepared_dir
from perfstudy.decide.claims import rounds_overrides
from perfstudy.orchestrate.workflow_config import StudySpec, Workflow


def study_spec(flow: Workflow, study: str | None = None) -> StudySpec:
    """The study's entry in workflow/config.yaml; ConfigError names the valid ones."""
    study = study or flow.study
    if study not in flow.studies:
        raise ConfigError(f"Unknown study {study!r} in workflow/config.yaml; use one of "
                          f"{', '.join(sorted(flow.studies))} (or add it under `studies:`).")
    spec = flow.studies[study]
    if not spec.arms and not spec.sweep and not spec.scenarios:
        raise ConfigError(f"Study {study!r} has no arms in workflow/config.yaml; add at least one "
                          "under `arms:` or a `sweep:`.")
    return spec


def sweep_values(values: str | list[int]) -> list[int]:
    """A sweep's values: a list as written, or "cpus" = 1..the CPUs this process may use."""
    if values == "cpus":
        return list(range(1, cpu_count() + 1))
    return [int(value) for value in values]


def arm_table(flow: Workflow, study: str | None = None) -> dict[str, list[str]]:
    """Arm name -> its Hydra overrides: the written arms, then one per sweep value
    (`<name>_<value>`: the sweep's overrides plus key=value); only those in `arms` where the
    workflow config names some."""
    study = study or flow.study
    arms = every_arm(flow, study)
    unknown = [name for name in flow.arms if name not in arms]
    if unknown:
        raise ConfigError(f"Arm {unknown[0]!r} is not an arm of study {study!r}; use some of "
                          f"{', '.join(arms)} in `arms` (or leave it empty for all).")
    return {name: overrides for name, overrides in arms.items() if not flow.arms or name in flow.arms}


def every_arm(flow: Workflow, study: str) -> dict[str, list[str]]:
    """Every arm of the study in its order, whichever the workflow config runs."""
    spec = study_spec(flow, study)
    arms = dict(spec.arms)
    if spec.scenarios:
        arms.update(scenario_arms(spec, study))
    sweep = spec.sweep
    if sweep:
        for value in sweep_values(sweep.values):
            name = f"{sweep.name}_{value}"
            if name in arms:
                raise ConfigError(f"Study {study!r}: the sweep's arm {name!r} "
                                  "is also written under `arms:`; rename one of them.")
            arms[name] = [*sweep.overrides, f"{sweep.key}={value}"]
    return arms


def scenario_arms(spec: StudySpec, study: str) -> dict[str, list[str]]:
    """A diagnosis benchmark's arms: per scenario the profiled run `<scenario>`, then
    `<scenario>_sweep`, profiler off, which measures every value of its key (in threads, and in
    processes where the scenario has `processes`) in interleaved rounds (perfstudy.run.sweep);
    with the study's `autotune: true`, `<scenario>_autotune` (MindSpore's AutoTune on). A scenario
    with `truth: other` reuses other's sweep."""
    arms: dict[str, list[str]] = {}
    chosen = spec.select or list(spec.scenarios)
    for name in chosen:
        if name not in spec.scenarios:
            raise ConfigError(f"Study {study!r} selects scenario {name!r}, which it does not have; use "
                              f"one of {', '.join(spec.scenarios)}.")
        scen = spec.scenarios[name]
        truth = scen.truth or name
        owner = spec.scenarios.get(truth)
        if owner is None or not owner.key:
            raise ConfigError(f"Study {study!r}, scenario {name!r}: its truth {truth!r} is not a "
                              "scenario with a `key` to sweep.")
        tag = [f"scenario.name={name}", f"scenario.truth={truth}", f"scenario.key={owner.key}",
               f"scenario.held_out={str(scen.held_out).lower()}"]
        arms[name] = [*scen.arm, *tag, "scenario.role=diagnosed"]
        if truth != name:
            if truth not in chosen:
                raise ConfigError(f"Study {study!r}: scenario {name!r} needs scenario {truth!r} "
                                  "(its truth); select both.")
            continue
        if spec.autotune:  # MindSpore's AutoTune from the scenario's own setting
            arms[f"{name}_autotune"] = [*scen.arm, "pipeline.autotune=true", "profiler=off",
                                        "verify.candidates=0", *tag, "scenario.role=peer"]
        values = ",".join(str(v) for v in sweep_values(scen.values))
        arms[f"{name}_sweep"] = [*(scen.sweep_overrides or scen.arm), "profiler=off",
                                 "verify.candidates=0", f"sweep.key={scen.key}",
                                 f"sweep.workers=[{values}]",
                                 f"sweep.processes={str(bool(scen.processes)).lower()}",
                                 *tag, "scenario.role=truth"]
    return arms


def arm_names(flow: Workflow, study: str | None = None) -> list[str]:
    """Arms of the study: those written, in order, then the sweep's."""
    return list(arm_table(flow, study))


def run_name(arm: str, repeat: int) -> str:
    """The folder of repeat k of an arm: the arm's name for the first, <arm>.r<k> after."""
    return arm if repeat == 1 else f"{arm}.r{repeat}"


def run_names(flow: Workflow, study: str | None = None) -> list[str]:
    """Every run of the study: the arms, then the arms again for each further repeat (so a
    slow drift of the machine touches every arm alike)."""
    return [run_name(arm, k) for k in range(1, flow.repeats + 1) for arm in arm_names(flow, study)]


def run_order(flow: Workflow, study: str | None = None) -> list[str]:
    """The order the runs train in when every arm repeats (repeats > 1): rounds, round k the
    k-th repeat of every arm, each round in an order drawn from a generator seeded by the
    workflow config's `order_seed` and the round (Abedi & Brecht's randomized multiple
    interleaved trials: the host's drift falls on every arm alike, and repeat k of two arms
    is a pair measured close in time). With one repeat, the arms in the study's order."""
    arms = arm_names(flow, study)
    if flow.repeats == 1:
        return arms
    out = []
    for k in range(1, flow.repeats + 1):
        order = np.random.default_rng([flow.order_seed, k]).permutation(len(arms))
        out += [run_name(arms[i], k) for i in order]
    return out


def previous_run(flow: Workflow, study: str, run: str) -> str | None:
    """The run that trains just before `run` in run_order (None: the first, or one repeat)."""
    if flow.repeats == 1:
        return None
    order = run_order(flow, study)
    at = order.index(run)
    return order[at - 1] if at else None


def split_run(flow: Workflow, study: str, run: str) -> tuple[str, int]:
    """(arm, repeat) of a run name; ConfigError names the valid ones."""
    arms = arm_table(flow, study)
    if run in arms:
        return run, 1
    arm, _, suffix = run.rpartition(".r")
    if arm in arms and suffix.isdigit() and 2 <= int(suffix) <= flow.repeats:
        return arm, int(suffix)
    raise ConfigError(f"Unknown arm {run!r} of study {study!r}; use one of {', '.join(arms)}"
                      + (f" (repeats: <arm>.r2 .. <arm>.r{flow.repeats})"
                         if flow.repeats > 1 else "") + ".")


def arm_overrides(flow: Workflow, study: str, run: str, claims_file: Path | None = None) -> list[str]:
    """Hydra overrides of one run: what the study's claims tell its rounds (`claims_file`,
    perfstudy.decide.claims.rounds_overrides), its arm's, its study's, the global ones, then
    study/arm/repeat/results (a later one wins)."""
    arm, repeat = split_run(flow, study, run)
    return [*rounds_overrides(claims_file, arm), *arm_table(flow, study)[arm],
            *study_spec(flow, study).overrides, *flow.overrides,
            f"study={study}", f"arm={arm}", f"repeat={repeat}", f"run={run}", f"paths.results={flow.results}"]


def reused_runs(flow: Workflow, study: str, run: str, reuse_from: list[str]) -> list[str]:
    """The runs whose rounds may answer for this run's (verify.reuse_from): the same repeat of
    each named arm, where it trains before this run (repeats > 1: earlier in run_order; a repeat
    trained after it, or an arm this invocation does not run, is left out: its rounds measure
    the pair themselves). ConfigError in one sentence for an arm the study does not list before
    it (with one repeat the arms train in the study's order)."""
    arm, repeat = split_run(flow, study, run)
    arms = list(every_arm(flow, study))
    order = run_order(flow, study)
    out = []
    for source in reuse_from:
        if source not in arms or arms.index(source) >= arms.index(arm):
            earlier = arms[:arms.index(arm)]
            raise ConfigError(
                f"verify.reuse_from of arm {arm!r} names {source!r}, which is not an arm of study "
                f"{study!r} listed before it; name one of {', '.join(earlier) or '(none: it is the first)'}"
                " or leave verify.reuse_from empty.")
        name = run_name(source, repeat)
        if name in order and order.index(name) < order.index(run):
            out.append(name)
    return out


def reused_overrides(flow: Workflow, study: str, run: str, cfg: DictConfig) -> list[str]:
    """paths.reused for the run: the summary.json of each run it may reuse (none: no override;
    none either without a verification, verify.candidates=0)."""
    if cfg.verify.candidates <= 0:
        return []
    runs = reused_runs(flow, study, run, list(cfg.verify.reuse_from))
    paths = [f"{flow.results}/runs/{study}/{r}/summary.json" for r in runs]
    return [f"paths.reused={json.dumps(paths)}"] if paths else []


# what two runs may differ in and still train the same pipeline, one on the source and one on
# its prepared copy: where they write, how they verify, how they track, the preparation itself
SAME_TRAINING_EXCEPT = ("data.prepared", "verify.", "paths.", "tracking.")


def _training(cfg: DictConfig) -> dict[str, object]:
    return {k: v for k, v in flatten(to_container(cfg)).items()
            if not k.startswith(SAME_TRAINING_EXCEPT) and k not in ("arm", "run", "repeat", "study")}


def source_overrides(flow: Workflow, study: str, run: str, cfg: DictConfig) -> list[str]:
    """paths.source_run for a prepared run whose rounds against its source decide a claim on the
    source's prediction of its step (verify.against_source_prediction_bound): the run of the same
    repeat that trains the same pipeline on the source and trains before it (its diagnosis made
    the prediction; the prepared run then trains after that analysis). None where no such run
    trains before it in this invocation (the claim is judged from the rounds run anyway)."""
    ver = cfg.verify
    if not (cfg.data.prepared and ver.against_source and ver.against_source_prediction_bound > 0):
        return []
    _, repeat = split_run(flow, study, run)
    order = run_order(flow, study)
    if run not in order:
        return []
    mine = _training(cfg)
    for other in order[:order.index(run)]:
        if split_run(flow, study, other)[1] != repeat:
            continue
        found = compose_run_config(arm_overrides(flow, study, other))
        if not found.data.prepared and _training(found) == mine:
            return [f"paths.source_run={flow.results}/runs/{study}/{other}"]
    return []


def compose_arm(flow: Workflow, study: str, run: str, claims_file: Path | None = None,
                device_here: bool = True) -> DictConfig:
    """A run's (an arm's, or one repeat of it) fully resolved, validated config, with the runs it
    may reuse (paths.reused: reused_overrides). `device_here`: its training runs on this machine,
    so its device must be usable here (a cluster executor's jobs run on other nodes: a GPU
    study is started from a login node without one, and each job checks its own device)."""
    overrides = arm_overrides(flow, study, run, claims_file)
    try:
        cfg = compose_run_config(overrides)
        later = [*reused_overrides(flow, study, run, cfg), *source_overrides(flow, study, run, cfg)]
        if later:
            cfg = compose_run_config([*overrides, *later])
    except ConfigError as exc:
        raise ConfigError(f"Study {study!r}, arm {run!r}: {exc}") from None
    given = any(o.lstrip("+~").startswith("device=") for o in overrides)
    if device_here:
        device.check(str(cfg.device.name), str(cfg.device.target), f"Study {study!r}, arm {run!r}",
                     None if given else "the config files")
    return cfg


def device_problem(study: str, configs: dict[str, DictConfig]) -> str | None:
    """The first arm whose device this machine cannot run, in one sentence (None: all can)."""
    for run, cfg in configs.items():
        try:
            device.check(str(cfg.device.name), str(cfg.device.target),
                         f"Study {study!r}, arm {run!r}")
        except ConfigError as exc:
            return str(exc)
    return None


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
