"""One arm's diagnosis (`Diagnosis`, diagnosis.json): its evidence, and the answer
perfstudy.decide.decision.decide gives on it; written and read back here only.

Evidence (DESIGN.md):
* input-bound band from the gap share (TensorFlow profiler): >= 20 % highly, >= 5 %
  moderately, else not;
* MindInsight's queue rule, along the whole chain: an operator whose input queue (its
  child's output queue) is well filled (usage >= 50 %) while its own output queue is near
  empty (usage <= 10 %); the largest difference wins; when none matches and the leaf's queue
  is under half full, the leaf. Kept as evidence beside the model's culprit;
* the CPUs: host and process busy %, per operator CPU (shown, not decisive).
The verdict, culprit, setting and predicted step are decision.decide's (one answer).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from perfstudy.common.records import doc, read_record, write_record
from perfstudy.common.thresholds import HIGHLY_INPUT_BOUND, MODERATELY_INPUT_BOUND, NEAR_CPU_FLOOR, pct
from perfstudy.decide.advisor import Advice, advise
from perfstudy.decide.decision import Recommendation, decide
from perfstudy.decide.peers import Readings
from perfstudy.decide.prediction_band import shipped_band
from perfstudy.decide.whatif import WELL_FILLED, canonical, held_up
from perfstudy.measure.minddata import HostCpu, IteratorWait
from perfstudy.measure.timeline import CrossCheck
from perfstudy.run.summary import RunSummary

FILE = "diagnosis.json"


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



def input_bound_band(gap_share: float) -> str:
    """'highly', 'moderately' or 'not' input-bound, by the TensorFlow profiler's bands."""
    if gap_share >= HIGHLY_INPUT_BOUND:
        return "highly"
    if gap_share >= MODERATELY_INPUT_BOUND:
        return "moderately"
    return "not"


def verdict_label(bound: str) -> str:
    """How a verdict reads in tables and tags ('input-bound', ..., 'not steady: no verdict')."""
    return "not steady: no verdict" if bound == "not_steady" else f"{bound}-bound"


def find_culprit(ops: pd.DataFrame) -> OperatorEvidence | None:
    """The operator the queue rule blames, with the evidence; None if none matches."""
    if ops is None or ops.empty:
        return None
    by_id = {int(r["op_id"]): r for _, r in ops.iterrows()}
    candidates = []
    for op_id, row in by_id.items():
        child = row.get("child_id")
        if child is None or pd.isna(child) or int(child) not in by_id:
            continue
        in_usage, out_usage = by_id[int(child)]["queue_usage"], row["queue_usage"]
        if pd.isna(in_usage) or pd.isna(out_usage):
            continue
        if held_up(in_usage, out_usage):
            candidates.append((in_usage - out_usage, op_id, in_usage, out_usage, "queue rule"))
    if not candidates:
        leaf = by_id[max(by_id)]
        if not pd.isna(leaf["queue_usage"]) and leaf["queue_usage"] < WELL_FILLED:
            candidates.append((0.0, int(leaf["op_id"]), None, float(leaf["queue_usage"]),
                               "leaf rule: the source's own queue is under half full"))
    if not candidates:
        return None
    _, op_id, in_usage, out_usage, rule = max(candidates, key=lambda c: (c[0], c[1]))
    row = by_id[op_id]
    cpu_worker = row.get("cpu_pct_per_worker")
    return OperatorEvidence(
        row["label"], op_id, row["op_type"], _operations(row),
        int(row["num_workers"]) if not pd.isna(row["num_workers"]) else None,
        None if in_usage is None else float(in_usage), float(out_usage),
        float(row["empty_ratio"]) if not pd.isna(row["empty_ratio"]) else None,
        None if cpu_worker is None or pd.isna(cpu_worker) else float(cpu_worker), rule=rule)


def _operations(row) -> list[str]:
    return [o for o in str(row.get("operations") or "").split(", ") if o]


def _cpu_state(summary: RunSummary, host: HostCpu, ops: pd.DataFrame | None,
               advice: Advice) -> CpuState:
    """The CPUs as measured (host busy %, per operator) and as the model sees them. Only the
    model's verdict (`saturated`: the CPU floor binds at the current setting) is used to
    decide; host busy % is shown, never decisive (it read 94 % while one worker bound a step)."""
    per_op = {}
    if ops is not None and not ops.empty:
        per_op = {r["label"]: round(float(r["cpu_pct"]), 1) for _, r in ops.iterrows()
                  if not pd.isna(r["cpu_pct"]) and r["cpu_pct"] > 0}
    return CpuState(cores=summary.num_parallel_workers.cpu_count,
                    host_busy_pct=host.host_busy_pct, process_pct=host.process_pct,
                    per_op_pct=per_op, cpu_floor_ms=summary.cpu_floor_ms,
                    steady_vs_cpu_floor=summary.steady_step_ms / summary.cpu_floor_ms,
                    saturated=advice.now_binding == "cpu",
                    near_cpu_floor=summary.binding_floor == "cpu"
                    and summary.steady_vs_floor <= NEAR_CPU_FLOOR)


def headline(decision: Recommendation, band: str, share: float, cores: int,
             steady_vs_cpu_floor: float) -> str:
    """The arm's verdict in one sentence; it states the decision, never a second opinion."""
    bound, action, culprit = decision.bound, decision.action, decision.culprit_label
    if bound == "not_steady":
        validity = decision.validity
        return (f"No verdict: the measured window was not steady (step {validity.steady_vs_floor:.2f}x "
                f"the {validity.floor} floor); the step waited for data {share:.0f} % of it.")
    if bound == "input" and band == "not":
        return (f"Input-bound in disguise: the step waits for data only {share:.0f} % of the time, yet "
                f"{culprit} sets its pace (predicted {decision.predicted_now_ms:.0f} ms, measured "
                f"{decision.measured_step_ms:.0f} ms): the pipeline's threads share the CPUs "
                "(and, running Python, the GIL) with the training loop, so the wait shows up as a "
                "longer forward+backward instead of a gap"
                + (", and no worker setting speeds it up." if action == "cannot_help" else "."))
    if bound == "input":
        text = f"{band.capitalize()} input-bound: the step waits for data {share:.0f} % of the time"
        if culprit:
            text += f", and {culprit} is the slow operator"
        if action == "cannot_help":
            text += ", which no worker setting speeds up"
        return text + "."
    if bound == "cpu":
        return (f"CPU-bound: pipeline and network together keep the {cores} CPUs busy (steady step "
                f"{steady_vs_cpu_floor:.2f}x the CPU floor); the step "
                + ("waits for data only " if band == "not" else "still waits for data ")
                + f"{share:.0f} % of the time ({band} input-bound by the TensorFlow bands)"
                + ("" if band == "not" else ", but no worker setting removes that wait")
                + (f"; {culprit} is the operator whose setting moves it" if decision.culprit_swing
                   else f"; {culprit} is the slowest operator" if culprit else "") + ".")
    return (f"Not input-bound: the step waits for data {share:.0f} % of the time; the network's "
            "compute sets the pace.")


def diagnose(summary: RunSummary, steps: pd.DataFrame, ops: pd.DataFrame | None = None,
             host: HostCpu | None = None, iterator: IteratorWait | None = None,
             cross: CrossCheck | None = None) -> Diagnosis:
    """diagnosis.json's content for one arm: the evidence, and decision.decide's answer.

    Args:
        summary: the run's summary; steps: steps.csv; ops: the profile's operator table
        (None: no profile); host, iterator: MindData's host CPU and iterator waits;
        cross: the op timeline's cross-check of the host timers.

    Returns:
        The Diagnosis (perfstudy.orchestrate.analyze adds the profiled window and the peers' readings).
    """
    host = host or HostCpu()
    band = input_bound_band(summary.gap_share)
    measured = steps[steps["phase"] == "measured"]
    compute_ms = float((measured["fwd_bwd_ms"] + measured["tail_ms"]).median())
    queue_culprit = find_culprit(ops) if band != "not" else None
    advice = advise(summary, ops, shipped_band())
    answer = decide(summary, advice, band, compute_ms, queue_culprit.label if queue_culprit else None)
    advice = label_advice(advice, answer)
    cpu = _cpu_state(summary, host, ops, advice)
    return Diagnosis(
        arm=summary.arm, study=summary.study, bound=answer.bound,
        headline=headline(answer, band, 100 * summary.gap_share, cpu.cores, cpu.steady_vs_cpu_floor),
        input_bound=InputBound(band=band, gap_share=summary.gap_share, gap_ms_mean=summary.gap_ms.mean,
                               steady_step_ms=summary.steady_step_ms,
                               thresholds={"highly": HIGHLY_INPUT_BOUND, "moderately": MODERATELY_INPUT_BOUND}),
        culprit=_culprit_evidence(answer, ops, queue_culprit), queue_rule=queue_culprit,
        cpu=cpu, recommendation=answer, compute_ms=compute_ms,
        iterator_wait=iterator, cross_check=cross,
        profiled=ops is not None, profiler_effect=profiler_effect(summary), advisor=advice)


INFORMATION_ONLY = "for information only, not a recommendation"


def label_advice(advice: Advice, answer: Recommendation) -> Advice:
    """The advisor's block as diagnosis.json keeps it, saying what its pick is: the model behind
    the recommendation (the decision took it), or, when no verdict was issued, a what-if kept
    for information only. recommendation.settings is the one setting named recommended."""
    if answer.action != "not_steady" and canonical(advice.pick) == canonical(answer.settings):
        return replace(advice, role="the model behind the recommendation (recommendation.settings "
                       "is its pick" + (", and measurement confirmed it)" if answer.verified else ")"),
                       pick_is_recommendation=True)
    if answer.action != "not_steady":  # verified: the measurement chose another setting
        return replace(advice, role="the model that proposed the verified settings; the measurement "
                       "chose recommendation.settings, not its pick", pick_is_recommendation=False,
                       sentence=f"Proposal, overruled by measurement: {advice.sentence}")
    return replace(advice, role=f"what-if {INFORMATION_ONLY}: no verdict was issued on this window",
                   pick_is_recommendation=False,
                   sentence=f"What-if {INFORMATION_ONLY} (no verdict on this window): {advice.sentence}")


def _culprit_evidence(answer: Recommendation, ops: pd.DataFrame | None,
                      queue_culprit: OperatorEvidence | None) -> OperatorEvidence | None:
    """The decided culprit with its queues and CPU from the profile (None when none)."""
    label = answer.culprit_label
    if label is None:
        return None
    found = OperatorEvidence(label, config_key=answer.culprit_key, kind=answer.culprit_kind,
                             agrees_with_queue_rule=bool(queue_culprit and queue_culprit.label == label))
    rows = ops[ops["label"] == label] if ops is not None and not ops.empty else None
    if rows is None or not len(rows):
        return found
    row = rows.iloc[0]
    by_id = {int(r["op_id"]): r for _, r in ops.iterrows()}
    child = row.get("child_id")
    child_row = by_id.get(int(child)) if child is not None and not pd.isna(child) else None

    def number(value, kind=float):
        return None if value is None or pd.isna(value) else kind(value)
    return replace(found, op_id=int(row["op_id"]), op_type=row["op_type"], operations=_operations(row),
                   num_workers=number(row["num_workers"], int),
                   cpu_pct_per_worker=number(row["cpu_pct_per_worker"]),
                   output_queue_usage=number(row["queue_usage"]),
                   input_queue_usage=None if child_row is None else number(child_row["queue_usage"]),
                   output_empty_ratio=number(row["empty_ratio"]))


def profiler_effect(summary: RunSummary) -> ProfilerEffect | None:
    """The profiled steps against the measured ones of the same run (placement after)."""
    window = summary.profiled_window
    if not window:
        return None
    ratio = window.steady_step_ms / summary.steady_step_ms
    return ProfilerEffect(
        steps=window.steps, profiled_step_ms=window.steady_step_ms, measured_step_ms=summary.steady_step_ms,
        step_ratio=ratio, profiled_gap_share=window.gap_share, measured_gap_share=summary.gap_share,
        sentence=(f"The {window.steps} profiled steps took {window.steady_step_ms:.0f} ms each "
                         f"against {summary.steady_step_ms:.0f} ms unprofiled ({ratio:.2f}x), gap share "
                         f"{pct(window.gap_share, 1)} against {pct(summary.gap_share, 1)}; "
                         "the verdict's numbers come from the unprofiled steps, the queues and kernels "
                         "from the profiled ones."))
