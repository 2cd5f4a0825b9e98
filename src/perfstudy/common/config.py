"""Composing one training run's config with Hydra, checking it, hashing and flattening it.

The schema is perfstudy.common.config_schema: every YAML file in ``conf/`` is merged into it,
so a misspelt key or a value of the wrong type fails when the config is composed, before any
work starts; validate() then checks what a type cannot say (choices, positive counts).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from perfstudy.common.config_schema import DataConfig, RunConfig

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"
__all__ = ["CONF_DIR", "ConfigError", "DataConfig", "checked", "compose_run_config", "config_hash", "flatten",
           "load_run_config", "to_container", "validate"]


class ConfigError(ValueError):
    """A user-caused configuration problem, phrased as one sentence with the fix."""


_POSITIVE = (
    "repeat",
    "data.num_images", "data.num_classes", "data.image_width", "data.image_height",
    "model.num_classes", "pipeline.image_size", "pipeline.batch_size", "trainer.steps",
    "trainer.min_measured_steps", "trainer.log_every", "trainer.calibration_steps",
    "trainer.calibration_batches", "profiler.sampling_interval_ms",
)


def register_schema() -> None:
    """Register the schema with Hydra's ConfigStore (idempotent)."""
    ConfigStore.instance().store(name="run_schema", node=RunConfig)


def _one_sentence(exc: BaseException) -> str:
    """Hydra/OmegaConf's errors -> one sentence that names the key and the fix, read from the
    exceptions' types and attributes (Hydra's MissingConfigException.options, OmegaConf's
    full_key), never from their wording; only the reason shown is OmegaConf's first line."""
    cause = exc.__cause__ or exc
    if isinstance(exc, MissingConfigException) and exc.options is not None and exc.missing_cfg_file:
        group, _, option = str(exc.missing_cfg_file).rpartition("/")
        return (f"Unknown option '{option}' for config group '{group}'; use one of "
                f"{', '.join(sorted(exc.options))}.")
    full_key = str(getattr(cause, "full_key", "") or "")
    if isinstance(cause, (ConfigKeyError, ConfigAttributeError)):
        return (f"Unknown config key '{full_key or cause}': check its spelling against "
                "src/perfstudy/common/config_schema.py, or print the valid keys with "
                "`python scripts/train.py --cfg job`.")
    reason = (str(getattr(cause, "msg", "") or cause).strip().splitlines() or [type(cause).__name__])[0]
    if full_key:
        return f"Bad value for config key '{full_key}': {reason.rstrip('.')}; fix it in conf/ or in the override."
    return f"The configuration could not be composed: {reason.rstrip('.')}."


# device.name -> the device_target it trains on; the op profiler's activities a device has
DEVICE_TARGETS = {"cpu": "CPU", "gpu": "GPU", "ascend": "Ascend"}
DEVICE_ACTIVITIES = {"cpu": {"CPU"}, "gpu": {"CPU", "GPU"}, "ascend": {"CPU", "NPU"}}
SYSTEM_METRICS = {"gpu"}
# the key the device group replaced (a config.yaml written before it is read with it moved)
OLD_DEVICE_KEY = "trainer.device_target"


def _validate_device(device) -> None:
    """The device group's fields hold together: its target is its name's, its profiler asks
    only for activities that device has, its metric sources are known."""
    name = str(device.name)
    if str(device.target) != DEVICE_TARGETS[name]:
        raise ConfigError(f"device.target is {device.target} but device is {name} "
                          f"({DEVICE_TARGETS[name]}); choose the device with device=cpu|gpu|ascend, "
                          "not its target alone.")
    wrong = [a for a in device.profiler_activities if a not in DEVICE_ACTIVITIES[name]]
    if wrong or "CPU" not in device.profiler_activities:
        raise ConfigError(f"device.profiler_activities is {list(device.profiler_activities)}; on "
                          f"{name} use CPU and any of {sorted(DEVICE_ACTIVITIES[name] - {'CPU'})}.")
    unknown = [m for m in device.system_metrics if m not in SYSTEM_METRICS]
    if unknown:
        raise ConfigError(f"device.system_metrics has {unknown}; use [] or [gpu].")
    if device.slurm_gpus < 0:
        raise ConfigError(f"device.slurm_gpus is {device.slurm_gpus}; use 0 or more.")


def validate(cfg: DictConfig) -> None:
    """Check value ranges that types alone cannot express; raise ConfigError."""
    _validate_device(cfg.device)
    for key in _POSITIVE:
        value = OmegaConf.select(cfg, key)
        if value is None or value <= 0:
            raise ConfigError(f"Config key '{key}' is {value!r}; it must be a positive integer.")
    workers = cfg.pipeline.num_parallel_workers
    if workers is not None and workers <= 0:
        raise ConfigError(
            f"pipeline.num_parallel_workers is {workers}; use a positive integer, "
            "or null for MindSpore's default.")
    prefetch = cfg.pipeline.prefetch_size
    if prefetch is not None and prefetch <= 0:
        raise ConfigError(f"pipeline.prefetch_size is {prefetch}; use a positive integer or null.")
    default_workers = cfg.pipeline.global_default_workers
    if default_workers is not None and default_workers <= 0:
        raise ConfigError(
            f"pipeline.global_default_workers is {default_workers}; use a positive integer or null.")
    if not 1 <= cfg.data.jpeg_quality <= 100:
        raise ConfigError(f"data.jpeg_quality is {cfg.data.jpeg_quality}; use 1..100.")
    if not 1 <= cfg.data.prepared_quality <= 100:
        raise ConfigError(f"data.prepared_quality is {cfg.data.prepared_quality}; use 1..100.")
    side = cfg.data.prepared_short_side
    if side is not None and side < cfg.pipeline.image_size:
        raise ConfigError(f"data.prepared_short_side is {side}, below the network input "
                          f"({cfg.pipeline.image_size} px): every crop would be upsampled; use at "
                          "least pipeline.image_size, or null for the crop bound.")
    if cfg.data.prepared and cfg.pipeline.reader_delay_ms > 0:
        raise ConfigError("data.prepared=true reads a MindRecord with MindDataset, so "
                          "pipeline.reader_delay_ms (the slow ImageFolder reader) cannot apply; "
                          "set one of them back (reader_delay_ms=0 or data.prepared=false).")
    if not cfg.trainer.loss_scale > 0:
        raise ConfigError(f"trainer.loss_scale is {cfg.trainer.loss_scale}; use a positive "
                          "scale (1.0: none; 128 to 65536 for float16 at O2/O3).")
    if cfg.trainer.warmup_steps < 0:
        raise ConfigError(f"trainer.warmup_steps is {cfg.trainer.warmup_steps}; use 0 or more.")
    if cfg.trainer.steps < 1 + cfg.trainer.warmup_steps + cfg.trainer.min_measured_steps:
        raise ConfigError(
            f"trainer.steps is {cfg.trainer.steps}, too few: the compile step, "
            f"{cfg.trainer.warmup_steps} warm-up step(s) and at least "
            f"{cfg.trainer.min_measured_steps} measured steps are needed; raise trainer.steps.")
    for key in ("tracking.live_interval_s", "tracking.system_metrics_interval_s"):
        if OmegaConf.select(cfg, key) <= 0:
            raise ConfigError(f"Config key '{key}' is {OmegaConf.select(cfg, key)}; use a "
                              "positive number of seconds (tracking.live=false turns live runs off).")
    _validate_profiler(cfg)
    _validate_verify(cfg)
    _validate_sweep(cfg)
    _validate_pipeline_extras(cfg)
    if cfg.model.num_classes < cfg.data.num_classes and cfg.data.path is None:
        raise ConfigError(
            f"model.num_classes ({cfg.model.num_classes}) is below data.num_classes "
            f"({cfg.data.num_classes}); set model.num_classes to at least the class count.")


def _validate_pipeline_extras(cfg: DictConfig) -> None:
    """The study's own extra transforms and readers: their callables, workers and delay."""
    for key in ("extra_transform", "batch_transform", "decode_map_extra"):
        spec = cfg.pipeline[key]
        if spec and (":" not in spec or spec.startswith(":") or spec.endswith(":")):
            raise ConfigError(f"pipeline.{key} is {spec!r}; use 'module:Callable', "
                              "e.g. perfstudy.run.transforms:Sleep.")
    for key in ("extra_transform_workers", "batch_transform_workers", "reader_workers"):
        value = cfg.pipeline[key]
        if value is not None and value <= 0:
            raise ConfigError(f"pipeline.{key} is {value}; use a positive integer, or null for "
                              "MindSpore's default.")
    if cfg.pipeline.reader_delay_ms < 0:
        raise ConfigError(f"pipeline.reader_delay_ms is {cfg.pipeline.reader_delay_ms}; use 0 "
                          "(MindSpore's reader) or a delay in ms per file.")


def _validate_verify(cfg: DictConfig) -> None:
    ver = cfg.verify
    if ver.candidates < 0:
        raise ConfigError(f"verify.candidates is {ver.candidates}; use 0 (no verification) or more.")
    if ver.warmup_steps < 0:
        raise ConfigError(f"verify.warmup_steps is {ver.warmup_steps}; use 0 or more.")
    if not 2 <= ver.min_steps <= ver.max_steps:
        raise ConfigError(f"verify.min_steps is {ver.min_steps} and verify.max_steps "
                          f"{ver.max_steps}; use 2 <= min_steps <= max_steps (a window's noise "
                          "needs two steps).")
    if ver.steady_steps and not ver.min_steps <= ver.steady_steps <= ver.max_steps:
        raise ConfigError(f"verify.steady_steps is {ver.steady_steps}; use 0 (2 x min_steps) or a "
                          f"count from verify.min_steps ({ver.min_steps}) to verify.max_steps "
                          f"({ver.max_steps}).")
    if not 0 <= ver.against_source_precision < 1:
        raise ConfigError(f"verify.against_source_precision is {ver.against_source_precision}; use a "
                          "share such as 0.03 (the remedy's gain known to +-3 %) or 0 (no target).")
    if not 0 <= ver.prediction_bound < 1:
        raise ConfigError(f"verify.prediction_bound is {ver.prediction_bound}; use a share such as "
                          "0.2 (the model's pick predicted within +-20 %) or 0 (no target).")
    if ver.budget_base_min_s < 0 or ver.against_source_budget_min_s < 0:
        raise ConfigError(f"verify.budget_base_min_s is {ver.budget_base_min_s} and "
                          f"verify.against_source_budget_min_s {ver.against_source_budget_min_s}; "
                          "use 0 (the training's wall time alone) or a number of seconds.")
    if any(not b > 0 for b in ver.against_source_bounds):
        raise ConfigError(f"verify.against_source_bounds is {list(ver.against_source_bounds)}; use "
                          "ratios above 0 (the source's step over the prepared one, e.g. [5.0]).")
    if not 2 <= ver.min_rounds <= ver.max_rounds:
        raise ConfigError(f"verify.min_rounds is {ver.min_rounds} and verify.max_rounds "
                          f"{ver.max_rounds}; use 2 <= min_rounds <= max_rounds (an interval "
                          "needs two rounds).")
    if ver.stretch_share < ver.budget_share:
        raise ConfigError(f"verify.stretch_share is {ver.stretch_share}, below verify.budget_share "
                          f"({ver.budget_share}); use a stretch at least the budget (equal: no "
                          "stretch).")
    if not 0 < ver.budget_share or not 0 < ver.max_interference < 1:
        raise ConfigError(f"verify.budget_share is {ver.budget_share} and "
                          f"verify.max_interference {ver.max_interference}; use a positive "
                          "share and a share in (0, 1).")


def _validate_sweep(cfg: DictConfig) -> None:
    sweep = cfg.sweep
    if not sweep.key:
        return
    if not sweep.key.startswith("pipeline.") or sweep.key.endswith("multiprocessing"):
        raise ConfigError(f"sweep.key is {sweep.key!r}; use a pipeline key that sizes an operator's "
                          "workers, e.g. pipeline.num_parallel_workers or pipeline.workers.map_2.")
    if any(v <= 0 for v in sweep.workers):
        raise ConfigError(f"sweep.workers is {list(sweep.workers)}; use positive worker counts (or "
                          "leave it empty for 1..the CPUs).")
    if sweep.max_rounds < cfg.verify.min_rounds or sweep.budget_share <= 0:
        raise ConfigError(f"sweep.max_rounds is {sweep.max_rounds} and sweep.budget_share "
                          f"{sweep.budget_share}; use max_rounds >= verify.min_rounds "
                          f"({cfg.verify.min_rounds}) and a positive share.")


def _validate_profiler(cfg: DictConfig) -> None:
    prof = cfg.profiler
    if prof.name == "off" and (prof.dataset or prof.timeline):
        raise ConfigError("profiler.name is 'off' but profiler.dataset or profiler.timeline is "
                          "true; choose profiler=light or profiler=full instead.")
    if cfg.pipeline.autotune and prof.dataset:
        raise ConfigError("pipeline.autotune=true cannot run with dataset profiling (MindSpore "
                          "refuses both at once); use profiler=off for the AutoTune arm.")
    if cfg.pipeline.autotune_interval < 0:
        raise ConfigError(f"pipeline.autotune_interval is {cfg.pipeline.autotune_interval}; use 0 "
                          "(adjust after each epoch) or a number of steps.")
    start = prof.start_step
    if start is not None and not 0 <= start < cfg.trainer.steps:
        raise ConfigError(f"profiler.start_step is {start}; use a step in 0..{cfg.trainer.steps - 1}"
                          " (trainer.steps), or null for the first step after warm-up.")
    if prof.num_steps < 0 or (prof.placement == "after" and prof.num_steps < 1 and prof.name != "off"):
        raise ConfigError(f"profiler.num_steps is {prof.num_steps}; use 1 or more extra profiled steps "
                          "(placement after), or 0 (to the last step) with profiler.placement=inline.")


# Free-form dicts of the schema (a factory's or a callable's own arguments, operator addresses):
# any key may go in them, so an override of one is given Hydra's ++ (add or override) for the
# user, who writes pipeline.workers.map_2=2 as any other key.
OPEN_DICTS = ("model.args", "pipeline.args", "pipeline.workers", "pipeline.processes",
              "pipeline.extra_transform_args", "pipeline.batch_transform_args")


def open_overrides(overrides: list[str] | tuple[str, ...]) -> list[str]:
    """The overrides with ++ before each that sets a key inside (or the whole of) a free-form dict
    (also for a `+key` whose key a config file already set: Hydra would refuse to append it)."""
    out = []
    for item in overrides:
        key = item.split("=", 1)[0]
        bare = key.lstrip("+")
        inside = "=" in item and not key.startswith(("~", "++")) and any(
            bare == name or bare.startswith(name + ".") for name in OPEN_DICTS)
        out.append("++" + item.lstrip("+") if inside else item)
    return out


def compose_run_config(overrides: list[str] | tuple[str, ...] = (), *,
                       config_dir: Path = CONF_DIR) -> DictConfig:
    """Compose, type-check, range-check and resolve one run's config.

    Raises ConfigError with one sentence for every user mistake Hydra or OmegaConf
    reports (unknown key, wrong type, unknown option of a group).
    """
    register_schema()
    for override in overrides:
        if override.lstrip("+~").startswith(OLD_DEVICE_KEY + "="):
            value = override.split("=", 1)[1]
            name = next((n for n, t in DEVICE_TARGETS.items() if t.lower() == value.lower()), "gpu")
            raise ConfigError(f"{override} is no longer a key: the device is chosen with the device "
                              f"group, which sets its target, profiler, precision and SLURM request "
                              f"together; use device={name} (cpu | gpu | ascend).")
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            cfg = compose(config_name="config", overrides=open_overrides(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_one_sentence(exc)) from None
    return checked(cfg)


def checked(cfg: DictConfig) -> DictConfig:
    """A composed config (compose API, or the one @hydra.main hands scripts/train.py) resolved,
    typed by the schema and range-checked; ConfigError with one sentence otherwise."""
    try:
        OmegaConf.resolve(cfg)
        # `+key=value` can add keys Hydra lets through; the schema must still hold them all.
        typed = OmegaConf.merge(OmegaConf.structured(RunConfig),
                                OmegaConf.create(OmegaConf.to_container(cfg)))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_one_sentence(exc)) from None
    validate(typed)
    return typed


def _moved_device(cfg: DictConfig) -> DictConfig:
    """A config.yaml written before the device group (trainer.device_target) read as one of
    the group's devices, so earlier runs' records still load."""
    target = OmegaConf.select(cfg, OLD_DEVICE_KEY)
    if target is None:
        return cfg
    del cfg.trainer["device_target"]
    name = next((n for n, t in DEVICE_TARGETS.items() if t == target), "cpu")
    if OmegaConf.select(cfg, "device") is None:
        cfg.device = {"name": name, "target": target,
                      "profiler_activities": sorted(DEVICE_ACTIVITIES[name])}
    return cfg


def load_run_config(path: str | Path) -> DictConfig:
    """Load a resolved config.yaml written by compose, re-checking it against the schema."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Run config {path} does not exist; run the compose_config rule first.")
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(RunConfig), _moved_device(OmegaConf.load(path)))
    except OmegaConfBaseException as exc:
        raise ConfigError(_one_sentence(exc)) from None
    validate(cfg)
    return cfg


def to_container(cfg: DictConfig) -> dict[str, Any]:
    """Plain, resolved dict of a config."""
    return OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)  # type: ignore[return-value]


# Keys that say where a run writes, not what it computes: left out of the hash so the
# same experiment in another results folder hashes the same.
# repeat is left out too: all repeats of an arm share its hash (each run records its seed)
_HASH_EXCLUDED = ("paths", "tracking", "study", "arm", "run", "repeat", "scenario")


def config_hash(cfg: DictConfig) -> str:
    """Short sha256 of what determines the computation (not where outputs go)."""
    data = {k: v for k, v in to_container(cfg).items() if k not in _HASH_EXCLUDED}
    blob = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts to dotted keys, e.g. {'trainer.steps': 30}."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat
