"""The arm's answer (diagnosis.json's `recommendation`), and the diagnosis that carries it.

`Recommendation` is made by perfstudy.decide.decision.decide only; every other stage presents
it (the headline, the report's verdict line, MLflow's tags). `Diagnosis` is diagnosis.json,
made by perfstudy.decide.diagnosis.diagnose and completed by perfstudy.decide.analysis
(the profiled window, the peer tools' readings); written and read back here only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfstudy.common.records import doc, read_record, write_record
from perfstudy.decide.advice import Advice, PreparedPrediction, Swing
from perfstudy.decide.readings import Readings
from perfstudy.decide.verification import Checked
from perfstudy.measure.minddata import IteratorWait
from perfstudy.measure.timeline import CrossCheck
from perfstudy.run.settings import Settings

FILE = "diagnosis.json"
ACTIONS = ("set_workers", "cannot_help", "none", "inconclusive", "not_steady")


@dataclass(frozen=True)
class ModelAnswer:
    """What the what-if model alone would have answered, before any measurement."""

    action: str
    settings: Settings
    predicted_step_ms: float


@dataclass(frozen=True)
class Validity:
    """Is the measured window a steady state (perfstudy.decide.decision.validity)?"""

    steady: bool = doc("a verdict may be issued on this window")
    steady_vs_floor: float | None = doc("the steady step / the floor it is judged by", default=None)
    floor: str | None = doc("the floor judged by: input (the pipeline alone)", default=None)
    floor_ms: float | None = doc("that floor (not steady only)", default=None)
    floor_suspect: bool = doc("steady, and the pipeline-alone reading is the one off", default=False)
    buffered_batches: float | None = doc("batches buffered before the window", default=None)
    buffered_basis: str | None = doc("how that was estimated", default=None)
    drain_steps: int | None = doc("steps that drain them", default=None)
    steps_needed: int | None = doc("trainer.steps a steady window needs", default=None)
    sentence: str | None = doc("the judgement in words", default=None)


@dataclass(frozen=True)
class InputBound:
    """How much of the step waits for data, and its band (the TensorFlow profiler's)."""

    band: str = doc("highly | moderately | not")
    gap_share: float = doc("share of the window's wall time waiting for data")
    gap_ms_mean: float = doc("mean iteration gap over the window")
    steady_step_ms: float = doc("the window's steady step")
    thresholds: dict[str, float] = doc("the bands' lower gap shares")


@dataclass(frozen=True)
class CpuState:
    """The CPUs as measured and as the model sees them (only `saturated` decides)."""

    cores: int = doc("the CPUs the run may use")
    host_busy_pct: float | None = doc("the host's busy % over the profiled window (shown only)")
    process_pct: float | None = doc("the training process's CPU % (shown only)")
    per_op_pct: dict[str, float] = doc("each profiled operator's CPU %")
    cpu_floor_ms: float = doc("(pipeline + network CPU-ms) / cores")
    steady_vs_cpu_floor: float = doc("the steady step / the CPU floor")
    saturated: bool = doc("the model's CPU floor binds at the run's own setting")
    near_cpu_floor: bool = doc("the CPU floor is the binding floor and the step is near it")


@dataclass(frozen=True)
class ProfilerEffect:
    """The profiled steps against the unprofiled ones of the same run (placement after)."""

    steps: int
    profiled_step_ms: float
    measured_step_ms: float
    step_ratio: float
    profiled_gap_share: float
    measured_gap_share: float
    sentence: str


@dataclass(frozen=True)
class Recommendation:
    """One answer per arm: the verdict, the culprit, the setting and its predicted step."""

    validity: Validity = doc("is the measured window a steady state (decision.validity)")
    measured_step_ms: float = doc("the run's steady step")
    predicted_now_ms: float = doc("the model's step at the run's own setting")
    source: str = doc("what the model was built from: profile | calibration")
    bound: str = doc("input | cpu | compute | not_steady")
    action: str = doc("set_workers | cannot_help | none | inconclusive | not_steady")
    settings: Settings = doc("the recommended operator settings (all sized keys)")
    predicted_step_ms: float = doc("the model's step at the recommended settings")
    sentence: str = doc("the answer in one paragraph")
    changes: Settings = doc("the settings that differ from the run's own", default_factory=dict)
    predicted_gain: float | None = doc("the model's gain at the recommended settings "
                                       "(None: no verdict)", default=None)
    culprit_key: str | None = doc("the config key of the culprit operator", default=None)
    culprit_label: str | None = doc("the culprit as the profile names it", default=None)
    culprit_kind: str | None = doc("decode | python | waits | computes", default=None)
    culprit_swing: Swing | None = doc("when the CPUs bind: how much the culprit's own "
                                               "setting moves the predicted step", default=None)
    queue_rule_culprit: str | None = doc("MindInsight's queue rule's operator, as evidence",
                                         default=None)
    workers: int | None = doc("the culprit's recommended workers (set_workers only)", default=None)
    remedies: list[str] = doc("what would help, by the culprit's kind", default_factory=list)
    prepared_prediction: PreparedPrediction | None = doc(
        "the step predicted on the source prepared at the bounded resolution", default=None)
    verified: bool = doc("the answer was decided by the verification windows", default=False)
    model_answer: ModelAnswer | None = doc("the model's own answer, before measurement",
                                           default=None)
    verification: Checked | None = doc("what the verification's interleaved rounds decided",
                                       default=None)
    verified_now_ms: float | None = doc("the run's own setting, measured", default=None)
    verified_step_ms: float | None = doc("the chosen setting, measured", default=None)
    measured_gain: float | None = doc("the chosen setting's measured gain over the run's own "
                                      "(1 / its paired ratio - 1)", default=None)


@dataclass(frozen=True)
class OperatorEvidence:
    """An operator of the profiled pipeline and what the profile says of it: the decided
    culprit (diagnosis.json's `culprit`) or the one MindInsight's queue rule blames
    (`queue_rule`). Queue and CPU readings are None where the profile lacks them."""

    label: str = doc("the operator, as the report names it")
    op_id: int | None = doc("its id in MindData's profile", default=None)
    op_type: str | None = doc("Map, Batch, ImageFolder, ...", default=None)
    operations: list[str] = doc("a map's transforms", default_factory=list)
    num_workers: int | None = doc("its workers in the run", default=None)
    input_queue_usage: float | None = doc("its input queue's mean fill (its child's output)",
                                          default=None)
    output_queue_usage: float | None = doc("its output queue's mean fill", default=None)
    output_empty_ratio: float | None = doc("share of samples its output queue was empty",
                                           default=None)
    cpu_pct_per_worker: float | None = doc("its CPU per worker (%)", default=None)
    rule: str | None = doc("which rule blamed it (the queue rule's only)", default=None)
    config_key: str | None = doc("the config key that sizes it (the decided culprit's)",
                                 default=None)
    kind: str | None = doc("what kind of operator it is (the decided culprit's)", default=None)
    agrees_with_queue_rule: bool | None = doc("the queue rule blames it too (the decided "
                                              "culprit's)", default=None)


@dataclass(frozen=True)
class ProfiledWindow:
    """The profiled steps' span, on the time.time() clock (seconds)."""

    start_s: float
    end_s: float


@dataclass(frozen=True)
class Diagnosis:
    """One arm's diagnosis (diagnosis.json): the evidence, and the answer decided from it."""

    # 2: the verification decided by interleaved rounds (typed); 3: the advisor typed;
    # 4: the culprit, queue rule, iterator wait, cross-check, window and peers' readings typed
    SCHEMA_VERSION = 4
    KIND = "diagnosis (diagnosis.json)"
    RERUN = ("analyse that arm again with this code (snakemake --cores all --forcerun analyze), "
             "or retrain it (--forcerun train)")

    arm: str = doc("the arm")
    study: str = doc("the study")
    bound: str = doc("the verdict: input | cpu | compute | not_steady (the recommendation's)")
    headline: str = doc("the verdict in one sentence")
    input_bound: InputBound = doc("the gap share, its band and the bands' thresholds")
    culprit: OperatorEvidence | None = doc("the culprit operator and the evidence for it "
                                           "(None: no operator sets the pace)")
    queue_rule: OperatorEvidence | None = doc("MindInsight's queue rule's operator (None: none)")
    cpu: CpuState = doc("cores, host and process CPU, per-operator CPU, the CPU floor")
    recommendation: Recommendation = doc("the answer (perfstudy.decide.decision.decide)")
    compute_ms: float = doc("median forward+backward+tail of the measured steps")
    iterator_wait: IteratorWait | None = doc("MindData's per-batch wait over the profiled "
                                             "window (None: no dataset profile)")
    cross_check: CrossCheck | None = doc("op timeline against the host timers (None: no op "
                                         "profile)")
    profiled: bool = doc("a dataset profile was read")
    profiler_effect: ProfilerEffect | None = doc("profiled steps against the unprofiled ones")
    advisor: Advice | None = doc("the what-if model: stages, predictions, pick, role")
    window: ProfiledWindow | None = doc("the profiled window", default=None)
    sampling_interval_ms: int | None = doc("MindData's sampling interval", default=None)
    peers: Readings | None = doc("the peer tools' readings of this run (perfstudy.decide.peers)",
                                 default=None)

    def completed(self, **fields: Any) -> Diagnosis:
        """The same diagnosis with the fields the analysis adds (window, peers, ...)."""
        return replace(self, **fields)


def write_diagnosis(run_dir: str | Path, diagnosis: Diagnosis) -> Path:
    """Write `run_dir`/diagnosis.json."""
    return write_record(Path(run_dir) / FILE, diagnosis)


def read_diagnosis(run_dir: str | Path) -> Diagnosis:
    """Read `run_dir`/diagnosis.json (refused, in one sentence, if another schema version)."""
    return read_record(Path(run_dir) / FILE, Diagnosis)
