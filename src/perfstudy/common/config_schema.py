"""The schema of one training run's config: a dataclass per config group, each field with the
comment that says what it sets. Every YAML file in ``conf/`` is merged into them
(perfstudy.common.config), so a misspelt key or a value of the wrong type fails when the config
is composed, before any work starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Optional


# The choice keys, as enums OmegaConf checks when a config is composed or loaded (a value not
# among them fails with the key and the choices). StrEnum: each member is its value, so code,
# config.yaml and JSON read "graph", not Mode.graph.
class DeviceTarget(StrEnum):
    CPU = "CPU"
    GPU = "GPU"
    Ascend = "Ascend"


class DeviceName(StrEnum):
    cpu = "cpu"
    gpu = "gpu"
    ascend = "ascend"


class Mode(StrEnum):
    graph = "graph"
    pynative = "pynative"


class AmpLevel(StrEnum):
    O0 = "O0"
    O1 = "O1"
    O2 = "O2"
    O3 = "O3"


class Schedule(StrEnum):
    constant = "constant"
    cosine = "cosine"
    step = "step"


class ProfilerName(StrEnum):
    off = "off"
    light = "light"
    full = "full"


class PreparedFormat(StrEnum):
    mindrecord = "mindrecord"
    imagefolder = "imagefolder"


class Placement(StrEnum):
    after = "after"
    inline = "inline"


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
    # How the prepared images are stored: mindrecord (one file, read by the case study's
    # pipeline) or imagefolder (the source's relative paths, handed to any pipeline factory as
    # its root). None: mindrecord for the case study's pipeline, imagefolder for any other.
    prepared_format: Optional[PreparedFormat] = None


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
    # A Python operation of your own appended INSIDE the article's map, after its C++ ops
    # ("module:Class" built with decode_map_extra_args, per image): a mixed map, as ModelZoo's
    # colour jitters are, sharing the map's workers. The decision benchmark injects a known
    # fixed work here, into the input-bound baseline's bottleneck.
    decode_map_extra: str = ""
    decode_map_extra_args: dict[str, Any] = field(default_factory=dict)
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
class LossConfig:
    """The loss, built by a factory (Hydra's `_target_` convention, docs/bring-your-own.md):
    `_target_(**args)` returns a mindspore.nn.Cell of (logits, labels) -> a scalar loss; labels as
    the pipeline gives them (class indices, or one-hot/mixed rows after a mixup map). The default
    is the study's softmax cross-entropy on class indices."""

    _target_: str = "perfstudy.run.model.create_loss"
    name: str = "softmax_ce"  # how the report and MLflow name it
    # the factory's own keyword arguments, e.g. {name: CE, label_smoothing: 0.1} for mindcv's
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class OptimizerConfig:
    """The optimizer, built by a factory (docs/bring-your-own.md): `_target_(params, lr=<one rate
    per step>, **args)` returns a mindspore.nn.Optimizer over the network's trainable parameters.
    The learning-rate schedule is the study's (every step it trains has its rate). The default
    is the study's Momentum SGD (weight decay on conv/dense weights only)."""

    _target_: str = "perfstudy.run.model.momentum_sgd"
    name: str = "momentum"  # how the report and MLflow name it
    # the factory's own keyword arguments, e.g. {opt: adamw, weight_decay: 0.05} for mindcv's
    # (the default's: momentum 0.9, weight_decay 1e-4, nesterov false)
    args: dict[str, Any] = field(default_factory=dict)
    lr: float = 0.001
    schedule: Schedule = Schedule.cosine
    warmup_steps: int = 0  # linear lr warm-up (optimizer warm-up, not timing warm-up)
    step_gamma: float = 0.1
    step_every: int = 10


@dataclass
class DeviceConfig:
    """Where the network trains, and everything that follows from it, set together by one
    choice of the `device` group (conf/device/<name>.yaml): a run never pairs a GPU's
    device_target with a CPU profiler, or a GPU job with a SLURM request for none."""

    name: DeviceName = DeviceName.cpu
    target: DeviceTarget = DeviceTarget.CPU  # MindSpore's device_target (mindspore.set_device)
    # The op profiler's activities (members of mindspore.profiler.ProfilerActivity): CPU is the
    # host's ops; GPU the CUDA kernels; NPU the Ascend tasks (the device's own timeline)
    profiler_activities: list[str] = field(default_factory=lambda: ["CPU"])
    # System metrics besides the host's CPU, memory, disk and network, which MLflow's monitor
    # samples always: "gpu" (NVIDIA, through nvidia-ml-py; a run says where it is missing)
    system_metrics: list[str] = field(default_factory=list)
    # What a training job asks SLURM for (workflow/profiles/slurm): GPUs and their model (the
    # executor's `gpu` and `gpu_model` resources: --gpus=[model:]N; 0: none), or a generic
    # resource (`gres`, e.g. npu:1 where a cluster schedules Ascend devices so; "": none)
    slurm_gpus: int = 0
    slurm_gpu_model: str = ""
    slurm_gres: str = ""


@dataclass
class TrainerConfig:
    """How long to train and which steps the timing summary leaves out."""

    steps: int = 30
    mode: Mode = Mode.graph
    seed: int = 1
    # Compile the graphs on a synthetic batch before the pipeline starts, so its queues do
    # not fill during the compile. false reproduces the article's behaviour (the drain
    # rule then drops the steps served from the compile-time buffer).
    compile_first: bool = True
    # MindSpore's mixed precision (mindspore.amp.auto_mixed_precision on the network): O0 float32,
    # O1 float16 for a white list of ops, O2 float16 but BatchNorm, O3 float16 throughout. It
    # changes the network's compute, so the balance with the pipeline the study measures.
    amp_level: AmpLevel = AmpLevel.O0
    # static loss scale: the loss is multiplied by it before backward, the gradients divided by
    # it after (1.0: none); guards float16 gradients against underflow at O2/O3
    loss_scale: float = 1.0
    # Steps dropped after step 0 before the drain rule looks at the data queue.
    warmup_steps: int = 1
    min_measured_steps: int = 3
    log_every: int = 5
    calibration_steps: int = 3  # network-alone steps after training
    calibration_batches: int = 6  # pipeline-alone batches (random crops vary: average more)


@dataclass
class ProfilerConfig:
    """What is profiled besides the host step timers (see conf/profiler/*.yaml)."""

    name: ProfilerName = ProfilerName.off
    # MindData (dataset) profiling: per-operator queue sizes, CPU, the iterator's waits.
    dataset: bool = False
    # MindSpore's op profiler: the kernel timeline, exported as a Chrome trace.
    timeline: bool = False
    # Which steps are profiled. "after": num_steps extra steps after the measured ones, on a
    # second pipeline launched with the profilers, so they never touch the reported numbers
    # (the profilers take CPU from the pipeline: docs/lab-notes.md#profile-after); the
    # report compares the two windows. "inline": profile the measured steps themselves,
    # from start_step (None: the first step after warm-up) for num_steps (0: to the end).
    placement: Placement = Placement.after
    start_step: Optional[int] = None
    num_steps: int = 8
    # MindData's sampling interval (ms). 1000 costs nothing measurable; 100 costs ~10 %.
    sampling_interval_ms: int = 1000


@dataclass
class VerifyConfig:
    """The model proposes, a measurement decides: after the measured window (and the profile),
    the training measures the run's own setting and the model's best `candidates` settings in
    interleaved rounds (each round visits every setting once, in a random order; each visit a
    window on a freshly built pipeline); each candidate's step over the own setting's, paired
    by round, gets a 95 % interval, and only a gain estimated at 10 % or more whose interval
    is wholly beyond 5 % changes the recommendation (perfstudy.measure.decision_rules,
    perfstudy.measure.rounds, perfstudy.decide.verify)."""

    candidates: int = 2  # settings verified beside the run's own (0: no verification)
    warmup_steps: int = 0  # steps dropped after a window's step 0 (the graphs are warm)
    # steps a window counts, after its start-up and the batches buffered during it (drained)
    min_steps: int = 4
    # the most steps one window runs; one whose buffered batches are not drained by then is
    # not steady and pairs nothing in its round
    max_steps: int = 12
    # steps a window whose pipeline keeps up (rarely waits) averages (0: 2 x min_steps). Its
    # error is the change in what the pipeline holds ahead over the window, so it falls as
    # 1/steps: such windows want to be long (docs/measurement.md)
    steady_steps: int = 0
    min_rounds: int = 3  # rounds run whatever the budget says (fewer make no interval)
    max_rounds: int = 12  # rounds at most; fewer once every candidate is decided
    # what the rounds may cost, as a share of the training's wall time before them: a round
    # that would end past it is not started (after min_rounds)
    budget_share: float = 1.0
    # past the budget, rounds go on up to this share while the rounds that would settle the
    # most promising open candidate (at its spread so far) fit in it: at cpu_demo the 1x budget stopped the
    # rounds 1-6 short of an answer (docs/measurement.md)
    stretch_share: float = 3.0
    # the shares above are of the training's wall time, or of this many seconds where the
    # training was shorter: a demo training of 1.5-3.5 minutes left room for 3 rounds and an
    # "inconclusive" where about 8 would decide (docs/measurement.md). 0: the training's alone
    budget_base_min_s: float = 0.0
    # a window in which other processes and the hypervisor took more than this share of the
    # CPU time is measured again, once (perfstudy.measure.interference)
    max_interference: float = 0.10
    # a prepared arm (data.prepared) also measures the same pipeline on the source it was
    # prepared from, at its own settings, in interleaved rounds: its gain and the prediction
    # of it are then read paired by round (perfstudy.run.remedy_rounds)
    against_source: bool = True
    # those rounds go on (within the budget and its stretch) until the source's step over the
    # prepared one lies on one side of each of these ratios: the bounds the study's claims judge
    # it by (the workflow sets them from the claims file; 3 rounds read 4.84x, 4.60-5.09, and a
    # "5x" claim stayed undecided)
    against_source_bounds: list[float] = field(default_factory=list)
    # the bound of a claim on the source arm's prediction of this prepared run's step (metric
    # prepared_prediction_error: within this share; set from the claims file): the rounds
    # against the source also go on until the paired gain is decided against the gains that
    # bound allows around the prediction (0: none)
    against_source_prediction_bound: float = 0.0
    # those rounds' budget (and its stretch) are shares of at least this many seconds (0: as the
    # verification's, verify.budget_base_min_s). The seed case's prepared arm trains in ~40 s and
    # its rounds measure the source's slow step: 120 s. Apart from the verification's floor: with
    # one floor for both, the prepared arm's verification (1 against 2 workers, predicted equal)
    # ran 12 rounds, 7 past its budget
    against_source_budget_min_s: float = 0.0
    # ... and until it is known to +-this share (its 95 % interval, log; 0: no such target): a
    # precision target looks at the interval's width, never where it lies
    against_source_precision: float = 0.0
    # a claim on the model's prediction of its pick (advisor_predicts_tuned: |error| <= 20 %)
    # judges these rounds: they go on (within the budget and its stretch) until the pick's step
    # over the own setting lies on one side of each ratio that error bound makes of the
    # prediction (the workflow sets it from the claims file; 0: none). With the band alone the
    # baseline stopped at 3 rounds, 7.9 % (0.0-25.1 %) against a 20 % bound: undecided
    prediction_bound: float = 0.0
    # arms of the study that train before this one and whose rounds may answer for it: a
    # candidate of this run's plan that such a run measured against this run's own setting, and
    # settled (faster, slower or its gain ruled out, read from this side), is not measured again
    # (the tuned arm's return to the baseline's setting, which the baseline's rounds decided);
    # the claims pool both runs' rounds where both measured the pair (perfstudy.decide.reuse)
    reuse_from: list[str] = field(default_factory=list)


@dataclass
class SweepConfig:
    """Ground truth by the verification's protocol (a diagnosis benchmark's truth runs): after
    the run's own measured window, every setting of one operator is measured in interleaved
    rounds (windows and interference as `verify`), until each setting is placed within 10 % of
    the best or not (perfstudy.measure.nearbest), `max_rounds` or the budget."""

    key: str = ""  # the settings key swept, e.g. pipeline.extra_transform_workers ("": no sweep)
    workers: list[int] = field(default_factory=list)  # its worker counts (empty: 1..the CPUs)
    processes: bool = False  # every value also with the operator's Python in worker processes
    max_rounds: int = 12  # rounds at most; fewer once every setting is placed
    # what the rounds may cost, as a share of the training's wall time before them (after
    # verify.min_rounds): a ground truth is worth more than a verification (at cpu_demo a
    # round of 4 settings costs ~1.5x the 30-step training: 10x allows ~6 rounds)
    budget_share: float = 10.0


@dataclass
class TrackingConfig:
    """Where results are logged (MLflow)."""

    # None: $MLFLOW_TRACKING_URI if set, else sqlite:///<paths.results>/mlflow/mlflow.db
    uri: Optional[str] = None
    experiment_prefix: str = "perfstudy"
    # read the study's earlier recorded runs back for the scorecard (each claim's history)
    history: bool = True
    # open the arm's run when its training starts (under the study's parent run) and log its
    # step trace every live_interval_s and MLflow's system metrics every
    # system_metrics_interval_s, so the UI shows a run while it trains (perfstudy.present.live)
    live: bool = True
    live_interval_s: float = 5.0
    system_metrics_interval_s: float = 10.0


@dataclass
class PathsConfig:
    """Output locations (see DESIGN.md's output contract)."""

    results: str = "results"
    data_root: str = "${paths.results}/data"
    run_dir: str = "${paths.results}/runs/${study}/${run}"
    # the dataset's manifest.json (the DAG's make_dataset made it); None: made or found from data
    manifest: Optional[str] = None
    # the summary.json of each earlier run verify.reuse_from names (the workflow sets them: the
    # run trains after those; perfstudy.orchestrate.study.reused_summaries)
    reused: list[str] = field(default_factory=list)
    # the run folder of the source run a prepared run's prediction was made from (its diagnosis
    # and summary): set by the workflow where verify.against_source_prediction_bound is
    # (perfstudy.orchestrate.study.source_overrides); the run trains after its analysis
    source_run: str = ""


@dataclass
class ScenarioConfig:
    """Where a run sits in a diagnosis benchmark (study `scenarios`); empty elsewhere."""

    name: str = ""  # the scenario whose sweep this run belongs to, or which it diagnoses
    role: str = ""  # "diagnosed": the profiled run; "truth": the run that measures its sweep;
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
    loss: LossConfig = field(default_factory=LossConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    device: DeviceConfig = field(default_factory=DeviceConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    profiler: ProfilerConfig = field(default_factory=ProfilerConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    scenario: ScenarioConfig = field(default_factory=ScenarioConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
