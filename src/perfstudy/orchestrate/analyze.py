"""One arm's raw traces -> tidy tables, a Chrome trace and diagnosis.json (rule analyze).

Reads the run folder that training wrote (steps.csv, summary.json, profile/) and writes
next to them:
  pipeline_ops.csv    per MindData operator: queue usage, empty/full ratio, CPU %
  queues.csv          per sample and operator: output-queue size (the queue figure)
  timeline_steps.csv  per step from the op timeline, joined to the host timers
  trace.json          Chrome trace (host steps, kernels, queues, iterator waits) for Perfetto
  diagnosis.json      verdict, culprit, CPU state, recommendation, timeline cross-check, and
                      the peer tools' readings (MindSpore's analyzer, AutoTune; decide/peers)
Every file is written even when the profiler was off (then with headers only), so the
workflow's outputs do not depend on the profiler setting.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perfstudy.common.io import read_json, write_csv
from perfstudy.decide import diagnosis, peers, verify
from perfstudy.decide.diagnosis import Diagnosis, ProfiledWindow, write_diagnosis
from perfstudy.decide.peers import Readings
from perfstudy.decide.reuse import decided_elsewhere
from perfstudy.measure import minddata, msanalyzer, timeline
from perfstudy.measure.timeline import CrossCheck
from perfstudy.run.summary import RunSummary, read_summary
from perfstudy.run.verify_record import Proposal

log = logging.getLogger(__name__)

OPS_COLUMNS = ["op_id", "op_type", "label", "num_workers", "operations", "child_id", "capacity",
               "queue_usage", "empty_ratio", "full_ratio", "cpu_pct", "cpu_pct_per_worker", "samples",
               *minddata.DESCRIBED]


def profiled_window(steps: pd.DataFrame) -> tuple[float, float]:
    """Start and end (time.time() clock) of the profiled steps: the extra steps after the
    measured ones (placement after), else the measured steps (placement inline)."""
    chosen = steps[steps["phase"] == "profiled"]
    if chosen.empty:
        chosen = steps[steps["phase"] == "measured"]
    return (float(chosen["start_time_s"].min()),
            float((chosen["start_time_s"] + chosen["step_ms"] / 1e3).max()))


@dataclass(frozen=True)
class Analysed:
    """One run folder diagnosed in memory: the diagnosis, what it was made from, and the tables
    analyze_run writes (None where the run has no such profile)."""

    diagnosis: Diagnosis
    summary: RunSummary
    steps: pd.DataFrame
    ops: pd.DataFrame | None  # MindData's operators over the profiled window
    queues: pd.DataFrame | None  # their queue sizes over time
    joined: pd.DataFrame  # the op timeline's steps joined to the host timers
    kernels: pd.DataFrame | None  # the op timeline's kernels
    iterator: pd.DataFrame | None  # MindData's per-batch iterator waits
    cross: CrossCheck | None  # the op timeline against the host timers


def diagnose_run(run_dir: str | Path) -> Analysed:
    """Diagnose one run folder in memory: the diagnosis, and the tables analyze_run writes."""
    run = Path(run_dir)
    steps = pd.read_csv(run / "steps.csv")
    summary = read_summary(run)
    profile_dir = run / "profile"
    window = profiled_window(steps)
    ops = queues = iterator_frame = host = waits = None
    meta = summary.profile
    if meta.dataset:
        profile = minddata.load(profile_dir)
        ops = minddata.op_table(profile, window)
        queues = minddata.queue_series(profile)
        host = minddata.host_cpu(profile, window)
        waits = minddata.iterator_waits(profile, window)
        iterator_frame = profile.iterator
    kernels, cross, joined = None, None, pd.DataFrame(columns=timeline.TIMELINE_COLUMNS)
    trace_path = timeline.find_trace(profile_dir) if meta.timeline else None
    if trace_path is not None:
        kernels = timeline.load_kernels(trace_path)
        joined = timeline.match_host(timeline.timeline_steps(kernels), steps)
        cross = timeline.cross_check(joined)
    elif meta.timeline:
        cross = timeline.NO_TRACE
    result = diagnosis.diagnose(summary, steps, ops, host, waits, cross).completed(
        window=ProfiledWindow(*window),
        sampling_interval_ms=meta.sampling_interval_ms)
    return Analysed(diagnosis=result, summary=summary, steps=steps, ops=ops, queues=queues,
                    joined=joined, kernels=kernels, iterator=iterator_frame, cross=cross)


def propose(run_dir: str | Path, k: int, reused: Sequence[str | Path] = (),
            max_rounds: int | None = None) -> Proposal:
    """The verification plan of a trained run (perfstudy.run.verify measures it): the run's own
    setting and the model's best k others, less those the earlier runs' rounds (`reused`: their
    summary.json, verify.reuse_from) settled or, with `max_rounds` (verify.max_rounds), left out
    of this run's reach (those they measured unsettled within reach: their rounds to pool with
    this run's); none when the measured window was not steady."""
    analysed = diagnose_run(run_dir)
    found = analysed.diagnosis
    if found.recommendation.action == "not_steady":
        return Proposal([], skipped="the measured window was not steady, so no verdict was "
                        "issued and nothing was verified")
    plan, settled, pooled = decided_elsewhere(verify.plan(found.advisor, k), analysed.summary,
                                              _earlier(reused), max_rounds=max_rounds)
    for r in settled:
        log.info("not measured again: %s, %s by %s's rounds: %s", r.label,
                 "settled" if r.settled else "out of this run's reach", r.source_run,
                 r.comparison.words())
    for e in pooled:
        log.info("measured again, pooled with %s's rounds: %s, %s there", e.source_run, e.label,
                 e.comparison.words())
    return Proposal(plan, model_recommendation=found.recommendation.sentence, reused=settled,
                    earlier=pooled)


def _earlier(paths: Sequence[str | Path]) -> list[RunSummary]:
    """The earlier runs' summaries (one that cannot be read is measured again here: a warning)."""
    out = []
    for path in paths:
        try:
            out.append(read_summary(Path(path).parent))
        except (OSError, ValueError) as exc:
            log.warning("paths.reused: %s cannot be read (%s); its pairs are measured here", path, exc)
    return out


def peer_readings(run: Path, found: Analysed) -> Readings:
    """The tools users have, on this run (perfstudy.decide.peers): MindSpore's analyzer on its
    profile, AutoTune's setting where this arm is AutoTune's, and ours beside them."""
    theirs = None
    if found.summary.profile.dataset:
        theirs = peers.analyzer(msanalyzer.read(run / "profile"), found.ops)
        log.info("%s: %s (%s)", msanalyzer.TOOL, theirs.operator or "-", theirs.advice)
    ops = found.ops
    if ops is None and (run / "profile" / "pipeline.json").exists():  # profiler off: as built
        ops = peers.described_ops(read_json(run / "profile" / "pipeline.json"))
    return Readings(peers.ours(found.diagnosis.recommendation), theirs,
                    peers.autotune(found.summary, ops))


def analyze_run(run_dir: str | Path) -> Diagnosis:
    """Analyse one run folder: write its tables, trace and diagnosis.json; returns the diagnosis."""
    run = Path(run_dir)
    found = diagnose_run(run)
    result, steps, ops, queues = found.diagnosis, found.steps, found.ops, found.queues
    write_csv(run / "pipeline_ops.csv", ops if ops is not None else pd.DataFrame(columns=OPS_COLUMNS))
    write_csv(run / "queues.csv", queues if queues is not None else pd.DataFrame(columns=minddata.QUEUE_COLUMNS))
    write_csv(run / "timeline_steps.csv", found.joined)
    timeline.write_chrome_trace(run / "trace.json",
                                timeline.chrome_trace(steps, found.kernels, queues, found.iterator))
    result = result.completed(peers=peer_readings(run, found))
    write_diagnosis(run, result)
    log.info("%s: %s %s", found.summary.arm, result.headline, result.recommendation.sentence)
    if found.cross:
        log.info("%s", found.cross.sentence)
    return result
