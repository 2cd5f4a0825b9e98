"""Structured-config schema of one training run, and composing it with Hydra.

The dataclasses below are the schema: every YAML file in ``conf/`` is merged into
them, so a misspelt key or a value of the wrong type fails when the config is
composed, before any work starts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

CONF_DIR = Path(__file__).resolve().parents[3] / "conf"


class ConfigError(ValueError):
    """A user-caused configuration problem, phrased as one sentence with the fix."""


@dataclass
class DataConfig:
    """Where images come from: a generated photo ImageFolder, or a user's own."""

    name: str = "photos16mp"  # folder name under paths.data_root for generated data
    path: Optional[str] = None  # a user's ImageFolder; None means: generate one
    num_images: int = 160
    num_classes: int = 4
    image_width: int = 4608
    image_height: int = 3456
    jpeg_quality: int = 90
    seed: int = 0
    # Train on a derived dataset instead: the source re-encoded as JPEG at a bounded resolution
    # in one MindRecord file (rule prepare_dataset), read with MindDataset; same images, labels
    # and order. Decoding a smaller image costs less: the remedy for a decode-bound pipeline.
    prepared: bool = False
    # Short side of the prepared images in px. None: per image, the smallest side at which
    # RandomCropDecodeResize's smallest crop is not upsampled (114 px for 4:3 photos at 32 px).
    prepared_short_side: Optional[int] = None
    prepared_quality: int = 90  # JPEG quality of the re-encoded images


@dataclass
class ModelConfig:
    """The network, built by a factory (Hydra's `_target_` convention, docs/bring-your-own.md):
    `_target_(num_classes=..., **args)` returns a mindspore.nn.Cell of NCHW images -> logits.
    The default is the study's ResNet50 (bottleneck v1.5, as in the MindSpore ModelZoo)."""

    _target_: str = "perfstudy.run.model.ResNet50"
    name: str = "resnet50"  # how the report and MLflow name it
    num_classes: int = 4  # set from data.num_classes by the size/experiment files
    # the factory's own keyword arguments, e.g. {model_name: mobilenet_v3_small_100} for mindcv
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineConfig:
    """The training input pipeline, built by a factory (Hydra's `_target_` convention,
    docs/bring-your-own.md): `_target_(root, batch_size, image_size, seed, **args)` returns a
    mindspore.dataset.Dataset of (image, label) batches. The default is the case study's own
    (perfstudy.run.pipeline.case_study), which the keys from image_size to reader_workers size;
    `workers`/`processes` re-size any pipeline's operators by address on the built tree."""

    _target_: str = "perfstudy.run.pipeline.case_study"
    # the factory's own keyword arguments (a user factory's; the case study's takes none)
    args: dict[str, Any] = field(default_factory=dict)
    # operator address (e.g. map_2: the pipeline's second map() counted from the source, as
    # profile/pipeline.json lists them) -> num_parallel_workers, set on the built tree
    workers: dict[str, int] = field(default_factory=dict)
    # operator address -> python_multiprocessing of that map (its Python in worker processes)
    processes: dict[str, bool] = field(default_factory=dict)
    image_size: int = 32
    batch_size: int = 32
    # None: call map() without num_parallel_workers, i.e. MindSpore's default (the
    # article's baseline). An int is passed as the article's fix did.
    num_parallel_workers: Optional[int] = None
    # The process-wide default MindSpore uses when map() gets no num_parallel_workers
    # (mindspore.dataset.config.set_num_parallel_workers). None leaves MindSpore's own.
    global_default_workers: Optional[int] = 1
    # Capacity of each operator's output queue (mindspore.dataset.config.set_prefetch_size);
    # None keeps MindSpore's default (16). It bounds how far the pipeline can run ahead.
    prefetch_size: Optional[int] = None
    shuffle: bool = True
    drop_remainder: bool = True
    # An extra map after the article's, for a transform of your own ("module:Class",
    # built with extra_transform_args, applied to each image). The diagnosis then says
    # whether it is the slow operator. perfstudy.run.transforms:Sleep is a stand-in for one.
    extra_transform: str = ""
    extra_transform_args: dict[str, Any] = field(default_factory=dict)
    # None: map() without num_parallel_workers (MindSpore's process default).
    extra_transform_workers: Optional[int] = None
    # map(python_multiprocessing=...): run a Python transform in worker processes instead of
    # threads (threads share the GIL: a transform that computes in Python does not scale).
    extra_transform_multiprocessing: bool = False
    # A map after batch() over whole batches ("module:Callable" applied to the image column
    # of a batch, NCHW), e.g. a batch-level augmentation; with its own workers.
    batch_transform: str = ""
    batch_transform_args: dict[str, Any] = field(default_factory=dict)
    batch_transform_workers: Optional[int] = None
    batch_transform_multiprocessing: bool = False
    # The source: 0 reads the ImageFolder with MindSpore's C++ reader; > 0 reads each file
    # through a Python reader that waits this long first (a remote or slow file system).
    reader_delay_ms: float = 0.0
    # Workers of the source (the ImageFolder reader, or the Python reader); None: the default.
    reader_workers: Optional[int] = None
    # MindSpore's Dataset AutoTune: it changes workers and queue sizes while the measured
    # steps run, starting from the settings above, and saves what it chose (autotune/ in the
    # run folder). It cannot run with dataset profiling (profiler=off or full without dataset).
    autotune: bool = False
    # Steps between AutoTune's adjustments; 0 = after each epoch of the dataset.
    autotune_interval: int = 0


@dataclass
class OptimizerConfig:
    """Momentum SGD with a learning-rate schedule."""

    name: str = "momentum"
    lr: float = 0.001
    momentum: float = 0.9
    weight_decay: float = 1e-4
    schedule: str = "cosine"  # constant | cosine | step
    warmup_steps: int = 0  # linear lr warm-up (optimizer warm-up, not timing warm-up)
    step_gamma: float = 0.1
    step_every: int = 10
    loss_scale: float = 1.0


@dataclass
class TrainerConfig:
    """How long to train and which steps the timing summary leaves out."""

    steps: int = 30
    device_target: str = "CPU"  # CPU | GPU | Ascend
    mode: str = "graph"  # graph | pynative
    seed: int = 1
    # Compile the graphs on a synthetic batch before the pipeline starts, so its queues do
    # not fill during the compile. false reproduces the article's behaviour (the drain
    # rule then drops the steps served from the compile-time buffer).
    compile_first: bool = True
    # Steps dropped after step 0 before the drain rule looks at the data queue.
    warmup_steps: int = 1
    min_measured_steps: int = 3
    log_every: int = 5
    calibration_steps: int = 3  # network-alone steps after training
    calibration_batches: int = 6  # pipeline-alone batches (random crops vary: average more)


@dataclass
class ProfilerConfig:
    """What is profiled besides the host step timers (see conf/profiler/*.yaml)."""

    name: str = "off"  # off | light | full
    # MindData (dataset) profiling: per-operator queue sizes, CPU, the iterator's waits.
    dataset: bool = False
    # MindSpore's op profiler: the kernel timeline, exported as a Chrome trace.
    timeline: bool = False
    # Which steps are profiled. "after": num_steps extra steps after the measured ones, on a
    # second pipeline launched with the profilers, so they never touch the reported numbers
    # (measured here: the tuned arm's profiled steps waited for data 2-3x as much); the
    # report compares the two windows. "inline": profile the measured steps themselves,
    # from start_step (None: the first step after warm-up) for num_steps (0: to the end).
    placement: str = "after"
    start_step: Optional[int] = None
    num_steps: int = 8
    # MindData's sampling interval (ms). 1000 costs nothing measurable; 100 costs ~10 %.
    sampling_interval_ms: int = 1000


@dataclass
class VerifyConfig:
    """The model proposes, a measurement decides: after the measured window (and the profile),
    the training runs a short window on a freshly built pipeline at each of the model's best
    `candidates` settings; the run's own setting is its measured window; the recommendation is
    the best measured one."""

    candidates: int = 2  # settings verified beside the run's own (0: no verification)
    # also a short window at the run's own setting (a check that short windows read like the
    # run's long one; one window more)
    own_window: bool = False
    warmup_steps: int = 0  # steps dropped after a window's step 0 (the graphs are warm)
    min_steps: int = 3  # measured steps per window, at least (after start-up and warm-up)
    max_steps: int = 10  # at most, when the steps keep varying
    # a window ends once the standard error of its mean step is this share of the mean
    target_rse: float = 0.03
    # what the windows may cost, as a share of the training run before them (stated in the
    # report; a window that would start past it is skipped, except the first two candidates)
    budget_share: float = 0.25


@dataclass
class TrackingConfig:
    """Where results are logged (MLflow)."""

    # None: $MLFLOW_TRACKING_URI if set, else sqlite:///<paths.results>/mlflow/mlflow.db
    uri: Optional[str] = None
    experiment_prefix: str = "perfstudy"
    # read the study's earlier recorded runs back for the scorecard (each claim's history)
    history: bool = True


@dataclass
class PathsConfig:
    """Output locations (see DESIGN.md's output contract)."""

    results: str = "results"
    data_root: str = "${paths.results}/data"
    run_dir: str = "${paths.results}/runs/${study}/${run}"


@dataclass
class ScenarioConfig:
    """Where a run sits in a diagnosis benchmark (study `scenarios`); empty elsewhere."""

    name: str = ""  # the scenario whose sweep this run belongs to, or which it diagnoses
    role: str = ""  # "diagnosed": the profiled run; "truth": one setting of the measured sweep;
    # "peer": the scenario run by a peer tool (MindSpore's AutoTune)
    truth: str = ""  # the diagnosed run's ground truth: the sweep of this scenario
    key: str = ""  # the config key the sweep varies
    held_out: bool = False  # kept out of any fitting of the advisor's model (a held-out check)


@dataclass
class RunConfig:
    """One training run of one arm of one study."""

    study: str = "adhoc"
    arm: str = "adhoc"
    repeat: int = 1  # k of the study's repeats: trains with seed trainer.seed + k - 1
    run: str = "${arm}"  # the run's folder name: the arm, or <arm>.r<k> for repeats k >= 2
    size: str = "cpu_demo"
    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    profiler: ProfilerConfig = field(default_factory=ProfilerConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    scenario: ScenarioConfig = field(default_factory=ScenarioConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)


_CHOICES = {
    "trainer.device_target": ("CPU", "GPU", "Ascend"),
    "trainer.mode": ("graph", "pynative"),
    "optimizer.name": ("momentum",),
    "optimizer.schedule": ("constant", "cosine", "step"),
    "profiler.name": ("off", "light", "full"),
    "profiler.placement": ("after", "inline"),
}
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
    """Hydra/OmegaConf's multi-line errors -> one sentence that names the key and the fix."""
    cause = exc.__cause__ or exc
    lines = str(cause).strip().splitlines()
    first = lines[0].rstrip(".") if lines else type(cause).__name__
    full_key = next((ln.split(":", 1)[1].strip() for ln in lines
                     if ln.strip().startswith("full_key:")), "")
    if "Could not find '" in first and "Available options in '" in str(cause):
        group = str(cause).split("Available options in '", 1)[1].split("'", 1)[0]
        option = first.split("Could not find '", 1)[1].split("'", 1)[0].split("/")[-1]
        options = []  # the indented lines right after the header (Hydra lists its search path after)
        for line in str(cause).split("Available options in", 1)[1].splitlines()[1:]:
            if not line.startswith("\t"):
                break
            options.append(line.strip())
        return (f"Unknown option '{option}' for config group '{group}'; use one of "
                f"{', '.join(options)}.")
    if isinstance(cause, ConfigKeyError) or "not in struct" in first or (
            first.startswith("Key '") and " not in " in first):
        return (f"Unknown config key '{full_key or first}': check its spelling against "
                "src/perfstudy/common/config.py, or print the valid keys with "
                "`python scripts/train.py --print-config`.")
    if full_key:
        return f"Bad value for config key '{full_key}': {first}; fix it in conf/ or in the override."
    return f"The configuration could not be composed: {first}."


def validate(cfg: DictConfig) -> None:
    """Check value ranges that types alone cannot express; raise ConfigError."""
    for key, allowed in _CHOICES.items():
        value = OmegaConf.select(cfg, key)
        if value not in allowed:
            raise ConfigError(f"Config key '{key}' is {value!r}; use one of {', '.join(allowed)}.")
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
    if cfg.trainer.warmup_steps < 0:
        raise ConfigError(f"trainer.warmup_steps is {cfg.trainer.warmup_steps}; use 0 or more.")
    if cfg.trainer.steps < 1 + cfg.trainer.warmup_steps + cfg.trainer.min_measured_steps:
        raise ConfigError(
            f"trainer.steps is {cfg.trainer.steps}, too few: the compile step, "
            f"{cfg.trainer.warmup_steps} warm-up step(s) and at least "
            f"{cfg.trainer.min_measured_steps} measured steps are needed; raise trainer.steps.")
    _validate_profiler(cfg)
    _validate_verify(cfg)
    for key in ("extra_transform", "batch_transform"):
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
    if cfg.model.num_classes < cfg.data.num_classes and cfg.data.path is None:
        raise ConfigError(
            f"model.num_classes ({cfg.model.num_classes}) is below data.num_classes "
            f"({cfg.data.num_classes}); set model.num_classes to at least the class count.")


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
    if not 0 < ver.target_rse < 1 or not 0 < ver.budget_share:
        raise ConfigError(f"verify.target_rse is {ver.target_rse} and verify.budget_share "
                          f"{ver.budget_share}; use a share in (0, 1) and a positive share.")


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
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            cfg = compose(config_name="config", overrides=open_overrides(overrides))
        OmegaConf.resolve(cfg)
        # `+key=value` can add keys Hydra lets through; the schema must still hold them all.
        OmegaConf.merge(OmegaConf.structured(RunConfig),
                        OmegaConf.create(OmegaConf.to_container(cfg)))
    except (HydraException, OmegaConfBaseException) as exc:
        raise ConfigError(_one_sentence(exc)) from None
    validate(cfg)
    return cfg


def load_run_config(path: str | Path) -> DictConfig:
    """Load a resolved config.yaml written by compose, re-checking it against the schema."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Run config {path} does not exist; run the compose_config rule first.")
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(RunConfig), OmegaConf.load(path))
    except OmegaConfBaseException as exc:
        raise ConfigError(_one_sentence(exc)) from None
    validate(cfg)
    return cfg


def to_container(cfg: DictConfig) -> dict[str, Any]:
    """Plain, resolved dict of a config."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


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
