"""The run's summary (summary.json): one typed record, made here, read by every later stage.

`RunSummary` is what a training hands the analysis, the tracking and the report. It is
written by `write_summary` and read back by `read_summary` only; a summary of another
schema version is refused with the way to remake it (retrain the arm). Fields that a run may
lack are typed `X | None`; nothing downstream guesses at a missing key.

Where a field comes from, in one hop: the step statistics from
perfstudy.measure.steptrace.summarize, the floors from steptrace.step_floor, the
calibration from perfstudy.run.train.calibrate, the provenance from
perfstudy.common.provenance, the rest from the run's config (perfstudy.run.train.summarise).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfstudy.common.records import doc, read_record, write_record
from perfstudy.data.prepared_record import PreparedFacts
from perfstudy.measure.profiling import ProfileMeta
from perfstudy.run.autotune import Tuned
from perfstudy.run.probe_record import ProbedOperator
from perfstudy.run.settings import Settings, Workers
from perfstudy.run.sweep_record import Sweep
from perfstudy.run.verify_record import AgainstSource, Verification

FILE = "summary.json"
SPREADS = ("step_ms", "gap_ms", "fwd_bwd_ms", "tail_ms")  # RunSummary's Spread fields


@dataclass(frozen=True)
class Spread:
    """A per-step quantity over the measured window: median, 10th/90th percentile, mean (ms)."""

    median: float
    p10: float
    p90: float
    mean: float


@dataclass(frozen=True)
class Calibration:
    """Each side alone: the network on a batch in hand, the pipeline with no network.

    CPU times are the whole process's (all MindSpore and MindData threads), per step/batch."""

    compute_wall_ms: float = doc("the network's step, wall time, on a batch already in hand")
    compute_cpu_ms: float = doc("the network's step, process CPU time")
    pipeline_wall_ms: float = doc("the pipeline alone at this arm's setting, wall ms per batch")
    pipeline_cpu_ms: float = doc("the pipeline alone, process CPU ms per batch")
    compute_steps: int = doc("network steps timed")
    pipeline_batches: int = doc("pipeline batches timed (after one start-up batch)")
    operators: list[ProbedOperator] = doc(
        "the operator probe (perfstudy.run.opprobe.probe): per sized operator its address, "
        "operations and the wall/CPU ms per batch measured alone at each setting",
        default_factory=list)


@dataclass(frozen=True)
class WindowStats:
    """Step and gap share of a run of steps outside the measured window (the profiled one)."""

    steps: int
    steady_step_ms: float
    gap_share: float
    images_per_s: float


@dataclass(frozen=True)
class Resources:
    """What the training process used, from the kernel's own accounting (getrusage), read when
    the run ends (training, profiling, calibration and every round after them)."""

    max_rss_mb: float = doc("peak resident memory of the training process (MiB)")
    cpu_s: float = doc("CPU time of the training process (user + system, s)")
    children_max_rss_mb: float = doc("largest peak resident memory of its ended child processes "
                                     "(MindData's Python workers, the profiler's analysis; MiB). "
                                     "A forked child counts the pages it shares with the trainer, "
                                     "so this reads near max_rss_mb; Snakemake's benchmark "
                                     "(MLflow job_max_pss_mb) splits shared pages")
    children_cpu_s: float = doc("CPU time of its ended child processes (s)")

    @classmethod
    def now(cls) -> Resources:
        """The process's use so far (Linux: ru_maxrss in KiB)."""
        import resource

        own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                          resource.RUSAGE_CHILDREN))
        return cls(own.ru_maxrss / 1024, own.ru_utime + own.ru_stime, kids.ru_maxrss / 1024,
                   kids.ru_utime + kids.ru_stime)


@dataclass(frozen=True)
class ScenarioPlace:
    """Where a run sits in a diagnosis benchmark (the study's scenario config, scenario.*)."""

    DIAGNOSED, TRUTH, PEER = "diagnosed", "truth", "peer"

    name: str = doc("the scenario whose sweep this run belongs to, or which it diagnoses")
    role: str = doc("diagnosed: the profiled run; truth: the run that measures the sweep; "
                    "peer: the scenario run by a peer tool (MindSpore's AutoTune)")
    truth: str = doc("the diagnosed run's ground truth: the scenario whose sweep scores it", "")
    key: str = doc("the config key the sweep varies", "")
    held_out: bool = doc("kept out of any fitting of the advisor's model (a held-out check)",
                         False)


@dataclass(frozen=True)
class Factories:
    """The `_target_` factories that built the training, and how its step computes (None: a
    summary written before the loss and optimizer were factories: the study's own)."""

    model: str
    model_name: str | None
    pipeline: str
    loss: str | None = doc("loss._target_", None)
    loss_name: str | None = doc("loss.name", None)
    optimizer: str | None = doc("optimizer._target_", None)
    optimizer_name: str | None = doc("optimizer.name", None)
    amp_level: str | None = doc("trainer.amp_level: MindSpore's mixed precision (O0: none)", None)
    loss_scale: float | None = doc("trainer.loss_scale: the static loss scale (1.0: none)", None)
    head_outputs: int | None = doc("outputs of the network's last Dense layer (None: it has none)",
                                   None)
    labels: str | None = doc("the labels' form per batch: class indices, or rows of a map that "
                             "changes them (a one-hot or mixup map)", None)


@dataclass(frozen=True)
class DatasetFacts:
    """What the run read: the dataset's size and images, and what preparing it would give."""

    source: str | None = doc("generated | folder | prepared")
    root: str | None = doc("the folder (or MindRecord) trained on")
    num_images: int | None = doc("images in the dataset")
    num_classes: int | None = doc("classes (sub-folders) in the dataset")
    total_bytes: int | None = doc("bytes of the image files")
    mean_megapixels: float | None = doc("mean megapixels per image (sampled sizes)", default=None)
    bounded_megapixels: float | None = doc(
        "mean megapixels at this config's bounded resolution (the decode remedy's size)",
        default=None)
    bound_rule: str | None = doc("the rule that sets the bounded resolution", default=None)
    prepared: PreparedFacts | None = doc(
        "for a prepared dataset: its format, record, source, settings, sizes and what the "
        "preparation took (perfstudy.data.prepare)", default=None)


@dataclass(frozen=True)
class RunSummary:
    """One arm's trained run: its measured step, floors, calibration and provenance."""

    SCHEMA_VERSION = 2  # 2: verification in interleaved rounds (a typed record)
    KIND = "run summary (summary.json)"
    RERUN = ("retrain that arm with this code (snakemake --cores all --forcerun train), or "
             "delete its results/runs/<study>/<arm>/ folder and run snakemake again")

    study: str = doc("the study (workflow config `study`)")
    arm: str = doc("the arm's name in the study")
    run: str = doc("the run's folder name: the arm, with _r<k> for repeat k > 1")
    repeat: int = doc("which repeat of the arm (1-based)")
    seed: int = doc("the run's seed (trainer.seed + 10 per further repeat)")
    size: str = doc("the size profile (smoke, cpu_demo, paper)")
    # the step statistics (perfstudy.measure.steptrace.summarize)
    steps_total: int = doc("steps timed on the measured pipeline")
    steps_measured: int = doc("steps in the steady measured window")
    steps_excluded: int = doc("steps before the window (compile or start-up, warm-up, drain)")
    steps_profiled: int = doc("steps run with the profilers, after the measured ones")
    steps_excluded_by_phase: dict[str, int] = doc("excluded steps per phase")
    first_measured_step: int = doc("index of the window's first step")
    before_window_ms: float = doc("wall time of the steps before the window, from the "
                                  "pipeline's launch")
    first_step_ms: float = doc("the first step's time")
    step_ms: Spread = doc("step time over the window")
    gap_ms: Spread = doc("iteration gap (wait for the batch) over the window")
    fwd_bwd_ms: Spread = doc("forward + backward over the window")
    tail_ms: Spread = doc("iteration tail (optimizer update) over the window")
    gap_share: float = doc("share of the window's wall time spent waiting for data")
    window_wall_s: float = doc("the window's wall time")
    steady_step_ms: float = doc("the window's wall time per step (the steady step)")
    images_per_s: float = doc("batch size / steady step")
    final_loss: float = doc("the loss of the last step")
    drain_rule: str = doc("how the window's start was found (the buffered batches drained)")
    num_parallel_workers: Workers = doc("map workers requested, effective, defaults, CPUs")
    scenario: ScenarioPlace | None = doc("where the run sits in a diagnosis benchmark "
                                         "(benchmark studies only)")
    operator_settings: Settings = doc(
        "workers (and processes: <key>_multiprocessing) per sized operator, by config key")
    queue_capacity_batches: float = doc("batches the operators' declared queues hold when full")
    warmup_steps: int = doc("trainer.warmup_steps")
    model_num_classes: int = doc("outputs of the model's head")
    factories: Factories = doc("the model's and the pipeline's factories")
    batch_size: int = doc("images per batch")
    image_size: int = doc("the network's input size (px)")
    train_wall_s: float = doc("wall time of the measured training loop")
    precompile_s: float | None = doc("graph compile on a synthetic batch (None: not compiled first)")
    calibration: Calibration = doc("each side alone (network, pipeline, operators)")
    # the floors (perfstudy.measure.steptrace.step_floor)
    compute_floor_ms: float = doc("the network alone per step")
    input_floor_ms: float = doc("the pipeline alone per batch")
    cpu_floor_ms: float = doc("(pipeline + network CPU-ms) / cores")
    floor_ms: float = doc("the highest of the three floors")
    binding_floor: str = doc("which floor is highest: compute | input | cpu")
    steady_vs_floor: float = doc("steady step / floor_ms")
    config_hash: str = doc("hash of the resolved config")
    dataset_sha256: str = doc("the dataset manifest's digest of its files")
    dataset: DatasetFacts = doc("the dataset's facts")
    git_sha: str = doc("commit of the code ('unknown' outside a git checkout)")
    git_dirty: bool | None = doc("uncommitted changes in the work tree")
    mindspore_version: str = doc("MindSpore's version")
    mindspore_commit: str | None = doc("the commit MindSpore was built from")
    device_target: str = doc("CPU | GPU | Ascend")
    mode: str = doc("graph | pynative")
    environment: dict[str, Any] = doc("machine and packages (perfstudy.common.provenance)")
    profile: ProfileMeta = doc("what the profilers recorded (perfstudy.measure.profiling)")
    autotune: Tuned | None = doc("what Dataset AutoTune settled on (its arms only)")
    profiled_window: WindowStats | None = doc("the profiled steps' step and gap share")
    run_wall_s: float = doc("the run's wall time up to the summary (training, profiling, "
                            "calibration)")
    started_at: str | None = doc("when the run started (UTC, ISO 8601): the order of a study's "
                                 "runs, as they trained", default=None)
    verification: Verification | None = doc(
        "the run's own setting and the model's best settings measured in interleaved rounds "
        "(perfstudy.run.verify)", default=None)
    sweep: Sweep | None = doc(
        "ground truth: every setting of one operator measured in interleaved rounds "
        "(perfstudy.run.sweep; the sweep.key config)", default=None)
    against_source: AgainstSource | None = doc(
        "a prepared arm's pipeline and its source's at the same settings, in interleaved "
        "rounds (perfstudy.run.remedy_rounds; verify.against_source)", default=None)
    resources: Resources | None = doc("peak memory and CPU time of the training process, at "
                                      "its end", default=None)

    @property
    def name(self) -> str:
        """The run's folder name (the arm for its first repeat)."""
        return self.run

    def with_verification(self, verification: Verification) -> RunSummary:
        """The same summary with its verification windows."""
        return replace(self, verification=verification)

    def with_sweep(self, sweep: Sweep) -> RunSummary:
        """The same summary with its sweep's rounds."""
        return replace(self, sweep=sweep)

    def with_against_source(self, found: AgainstSource) -> RunSummary:
        """The same summary with its rounds against the source it was prepared from."""
        return replace(self, against_source=found)

    def with_resources(self, used: Resources) -> RunSummary:
        """The same summary with the process's peak memory and CPU time."""
        return replace(self, resources=used)


def write_summary(run_dir: str | Path, summary: RunSummary) -> Path:
    """Write `run_dir`/summary.json."""
    return write_record(Path(run_dir) / FILE, summary)


def read_summary(run_dir: str | Path) -> RunSummary:
    """Read `run_dir`/summary.json (refused, in one sentence, if another schema version)."""
    return read_record(Path(run_dir) / FILE, RunSummary)
