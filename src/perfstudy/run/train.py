"""One arm's training run, read top to bottom: `run` calls named steps (load the data, compile,
measure, profile, calibrate, summarise, verify), each small and tested alone.

Each step is three timed phases: wait for the batch (iteration gap), forward+backward and the
optimizer update (perfstudy.run.step). The run's result is its `RunSummary` (summary.json,
perfstudy.run.summary) beside steps.csv.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mindspore as ms
import numpy as np
import pandas as pd

from perfstudy.common import config as config_mod
from perfstudy.common.io import check_writable, write_csv, write_json
from perfstudy.common.provenance import environment, full_environment, git_state, mindspore_build
from perfstudy.common.records import from_dict
from perfstudy.data import sources
from perfstudy.measure import steptrace
from perfstudy.measure.profiling import ProfileMeta, RunProfiler, extra_steps
from perfstudy.run import autotune, opprobe, pipeline, remedy_rounds, sweep, verify
from perfstudy.run.settings import Workers, operator_settings
from perfstudy.run.step import LabelForm, TrainStep, check_labels, compile_graphs, timed_step
from perfstudy.run.summary import Calibration, Resources, RunSummary, write_summary
from perfstudy.run.training_data import check_factories, dataset_facts, load_data, model_classes, remedy_settings
from perfstudy.run.verify_record import Proposal, Verification, prior_of

__all__ = ["check_labels", "model_classes", "queue_capacity_batches", "run", "run_seed"]

REPEAT_SEED_STRIDE = 10
log = logging.getLogger(__name__)
OnStep = Callable[[steptrace.StepTimes], None]


class DeviceError(RuntimeError):
    """The configured device cannot run MindSpore here; the message says what to do."""


def _setup_mindspore(cfg) -> None:
    target = str(cfg.device.target)
    try:  # set_device may accept an accelerator and fail only at its first op: try one
        if ms.get_context("device_target") != target:  # once kernels ran it refuses
            ms.set_device(target)  # even the device it has (a second run in a process)
        if target != "CPU":
            (ms.Tensor(np.ones(1, np.float32)) + 1).asnumpy()  # eager, before graph mode
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DeviceError(
            f"device={cfg.device.name} ({target}) is not usable with this MindSpore install "
            f"({reason.split('. ')[0].rstrip('.')}); use device=cpu or install MindSpore's "
            f"{target} build.") from None
    ms.set_context(mode=ms.GRAPH_MODE if cfg.trainer.mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(run_seed(cfg))


def queue_capacity_batches(nodes: list[dict], batch_size: int) -> float:
    """How many batches the operators' declared output queues hold when full (row queues count
    rows/batch). Not a bound on what is buffered: MindSpore's workers hold more (measured)."""
    total, rows = 0.0, False
    for node in nodes:  # consumer first: queues above Batch hold batches, below it rows
        size = node.get("connector_queue_size") or 0
        total += size / batch_size if rows else size
        rows = rows or node["op_type"] == "Batch"
    return total


def train_loop(step: TrainStep, dataset, steps: int, batch_size: int, log_every: int,
               profiler: RunProfiler | None = None, first_index: int = 0,
               on_step: OnStep | None = None) -> tuple[list[steptrace.StepTimes], tuple]:
    """Train `steps` steps numbered from first_index; returns the step timestamps and the last
    batch. on_step sees each step's times as it ends (a live view; it must not block)."""
    per_epoch = dataset.get_dataset_size()
    # a repeated dataset is one long epoch; one of a single pass (AutoTune's arm) is iterated
    # epoch after epoch, with one more so the pipeline still works when the last step runs
    epochs = 1 if per_epoch >= steps else math.ceil(steps / per_epoch) + 1
    iterator = dataset.create_tuple_iterator(num_epochs=epochs)
    records = []
    batch = None
    previous_end = time.time()
    try:
        for index in range(first_index, first_index + steps):
            start = previous_end
            if profiler is not None:
                profiler.step_begin(index)  # inside the gap: ~µs unless the window starts
            try:
                batch = next(iterator)
            except StopIteration:  # an epoch ended (AutoTune adjusts here); the next one follows
                batch = next(iterator)
            data_ready = time.time()
            check_labels(batch[1], step.num_classes, index)
            loss, fwd_bwd_end, end = timed_step(step, batch[0], batch[1])
            if profiler is not None:
                profiler.step_end(index)
                end = time.time()  # a stop at the window's end is part of this step
            if not np.isfinite(loss):
                raise FloatingPointError(
                    f"The loss became {loss} at step {index}; likely causes: a learning rate too "
                    "high for this batch (lower optimizer.lr), labels outside the model's classes "
                    "(model.num_classes), or NaN/inf values produced by a transform of your own.")
            records.append(steptrace.StepTimes(index, start, data_ready, fwd_bwd_end, end, loss))
            if on_step is not None:
                on_step(records[-1])
            previous_end = end
            if index % log_every == 0 or index == first_index + steps - 1:
                total = end - start
                log.info("step %d/%d  loss %.4f  step %.0f ms  gap %.0f ms (%.0f %%)  %.1f img/s",
                         index + 1, first_index + steps, loss, total * 1e3, (data_ready - start) * 1e3,
                         100 * (data_ready - start) / total, batch_size / total)
    finally:
        iterator.stop()
        if profiler is not None:
            profiler.end_training()
    return records, batch


def run_seed(cfg) -> int:
    """The seed of this run: trainer.seed for the first repeat, +10 per further repeat (the
    run derives seed, +1 and +2 for its pipelines, so repeats never share a stream)."""
    return cfg.trainer.seed + REPEAT_SEED_STRIDE * (cfg.repeat - 1)


def calibrate(step: TrainStep, batch, cfg, workers: Workers, root: str) -> Calibration:
    """Cost of each side alone: the network on a batch in hand, the pipeline with no network.

    CPU times are the whole process's (all MindSpore and MindData threads).
    """
    count = cfg.trainer.calibration_steps
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(count):
        timed_step(step, batch[0], batch[1])
    compute_wall = (time.perf_counter() - wall) / count
    compute_cpu = (time.process_time() - cpu) / count
    batches = cfg.trainer.calibration_batches
    dataset = pipeline.create_train_dataset(root, cfg.pipeline, batches + 1, run_seed(cfg) + 1)
    iterator = dataset.create_tuple_iterator(num_epochs=1)
    try:
        next(iterator)  # the first batch pays for start-up; time the steady ones
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(batches):
            next(iterator)
        pipe_wall = (time.perf_counter() - wall) / batches
        pipe_cpu = (time.process_time() - cpu) / batches
    finally:
        iterator.stop()
    return Calibration(compute_wall_ms=compute_wall * 1e3, compute_cpu_ms=compute_cpu * 1e3,
                       pipeline_wall_ms=pipe_wall * 1e3, pipeline_cpu_ms=pipe_cpu * 1e3,
                       compute_steps=count, pipeline_batches=batches,
                       operators=opprobe.probe(cfg.pipeline, root, workers.cpu_count,
                                               remedy_settings(cfg)))


@dataclass
class Measured:
    """What the measured (and profiled) steps left: their timestamps, the last batch (for the
    calibration), the profiled pipeline's operators, AutoTune's result and the profiler."""

    records: list[steptrace.StepTimes]
    last_batch: Any
    nodes: list[dict[str, Any]]
    train_wall_s: float
    autotune: autotune.Tuned | None
    profiler: RunProfiler


def measure(cfg, train_step: TrainStep, source: str, run_dir: Path,
            on_step: OnStep | None = None) -> Measured:
    """The measured steps on a fresh pipeline (profiled inline, or then a second, profiled
    pipeline after them: placement=after)."""
    # Surplus batches: the pipeline must still be working when the last step runs, or the
    # last steps run without it and look faster than the steady state.
    surplus = pipeline.batches_ahead(cfg.pipeline)
    seed = run_seed(cfg)
    pipeline.plan_orders(source, cfg.pipeline, {  # every pipeline of this run, by seed
        seed: cfg.trainer.steps + surplus, seed + 1: cfg.trainer.calibration_batches + 1,
        seed + 2: extra_steps(cfg.profiler) + surplus})
    profiler = RunProfiler(cfg.profiler, run_dir / "profile", cfg.trainer.steps,
                           cfg.trainer.warmup_steps, tuple(cfg.device.profiler_activities))
    inline = cfg.profiler.placement == "inline"
    if inline:
        profiler.begin()  # dataset profiling must be initialised before the pipeline is launched
    if cfg.pipeline.autotune:
        autotune.start(run_dir / "autotune", cfg.pipeline.autotune_interval)
    dataset = pipeline.create_train_dataset(source, cfg.pipeline, cfg.trainer.steps + surplus,
                                            seed, one_pass=cfg.pipeline.autotune)
    started = time.time()
    try:
        records, last_batch = train_loop(train_step, dataset, cfg.trainer.steps, cfg.pipeline.batch_size,
                                         cfg.trainer.log_every, profiler if inline else None,
                                         on_step=on_step)
    finally:
        if cfg.pipeline.autotune:
            autotune.stop()
    train_wall_s = time.time() - started
    tuned = autotune.result(run_dir / "autotune") if cfg.pipeline.autotune else None
    if tuned:
        log.info("AutoTune ended with map workers %s (%s)", tuned.map_workers,
                 tuned.config_file or tuned.remark)
    extra = 0 if inline else extra_steps(cfg.profiler)
    if not inline:
        profiler.begin()
    if extra:  # a second pipeline, launched with the profilers, after the measured steps
        log.info("profiling %d more steps on a fresh pipeline (the measured steps ran without "
                 "any profiler)", extra - 1)
        dataset = pipeline.create_train_dataset(source, cfg.pipeline, extra + surplus, seed + 2)
        more, last_batch = train_loop(train_step, dataset, extra, cfg.pipeline.batch_size,
                                      cfg.trainer.log_every, profiler, first_index=cfg.trainer.steps,
                                      on_step=on_step)
        records += more
    # the profiled pipeline's operators are the ones the profile numbers (a prepared source's
    # readers per epoch differ with the pipeline's length)
    nodes = pipeline.describe(dataset, cfg.pipeline)
    write_json(run_dir / "profile" / "pipeline.json", nodes)
    return Measured(records, last_batch, nodes, train_wall_s, tuned, profiler)


def step_frame(cfg, records: list[steptrace.StepTimes], compiled: bool) -> tuple[pd.DataFrame, str]:
    """steps.csv's rows with their phases (start-up or compile, warm-up, drain, measured,
    profiled), and the rule that found the window's start."""
    all_steps = steptrace.steps_frame(records, cfg.pipeline.batch_size)
    frame, drain_rule = steptrace.assign_phases(
        all_steps.iloc[:cfg.trainer.steps], cfg.trainer.warmup_steps,
        first_phase="startup" if compiled else "compile",
        min_measured_steps=cfg.trainer.min_measured_steps)
    extra = all_steps.iloc[cfg.trainer.steps:].copy()
    if not len(extra):  # profiler=off or placement=inline: no extra steps (and no empty row)
        return frame, drain_rule
    extra["phase"] = ["profile_startup"] + ["profiled"] * (len(extra) - 1)
    return pd.concat([frame, extra], ignore_index=True), drain_rule


@dataclass(frozen=True)
class Resolved:
    """What a run resolved before its steps: workers, the dataset, the network's classes, the
    graphs' compile time and the run's start (time.time())."""

    workers: Workers
    manifest: dict
    classes: int
    compile_s: float | None
    started: float
    head_outputs: int | None = None
    labels: LabelForm | None = None


def summarise(cfg, frame: pd.DataFrame, drain_rule: str, measured: Measured, context: Resolved,
              calibration: Calibration, profile_meta: ProfileMeta) -> RunSummary:
    """The run's RunSummary: the step statistics, floors and calibration, config and
    provenance (`context`: what the run resolved before its steps)."""
    stats = steptrace.summarize(frame, cfg.pipeline.batch_size, cfg.trainer.min_measured_steps)
    workers = context.workers
    floors = steptrace.step_floor(
        compute_wall_ms=calibration.compute_wall_ms, compute_cpu_ms=calibration.compute_cpu_ms,
        pipeline_wall_ms=calibration.pipeline_wall_ms, pipeline_cpu_ms=calibration.pipeline_cpu_ms,
        cpu_count=workers.cpu_count)
    profiled = steptrace.window_stats(frame[frame["phase"] == "profiled"], cfg.pipeline.batch_size)
    manifest = context.manifest
    data = {
        "study": cfg.study, "arm": cfg.arm, "run": cfg.run, "repeat": cfg.repeat,
        "seed": run_seed(cfg), "size": cfg.size, **stats, "drain_rule": drain_rule,
        "num_parallel_workers": workers,
        "scenario": config_mod.to_container(cfg.scenario) if cfg.scenario.name else None,
        "operator_settings": operator_settings(measured.nodes),
        "queue_capacity_batches": queue_capacity_batches(measured.nodes, cfg.pipeline.batch_size),
        "warmup_steps": cfg.trainer.warmup_steps, "model_num_classes": context.classes,
        "factories": {"model": cfg.model._target_, "model_name": cfg.model.name,
                      "pipeline": cfg.pipeline._target_, "loss": cfg.loss._target_,
                      "loss_name": cfg.loss.name, "optimizer": cfg.optimizer._target_,
                      "optimizer_name": cfg.optimizer.name,
                      "amp_level": str(cfg.trainer.amp_level),
                      "loss_scale": float(cfg.trainer.loss_scale),
                      "head_outputs": context.head_outputs,
                      "labels": context.labels.describe() if context.labels else "class indices"},
        "batch_size": cfg.pipeline.batch_size, "image_size": cfg.pipeline.image_size,
        "train_wall_s": measured.train_wall_s, "precompile_s": context.compile_s,
        "calibration": calibration, **floors,
        "steady_vs_floor": stats["steady_step_ms"] / floors["floor_ms"],
        "config_hash": config_mod.config_hash(cfg), "dataset_sha256": manifest["dataset_sha256"],
        "dataset": dataset_facts(cfg, manifest), **git_state(),
        "mindspore_version": ms.__version__, "mindspore_commit": mindspore_build()["commit"],
        "device_target": str(cfg.device.target), "mode": cfg.trainer.mode,
        "environment": environment(str(cfg.device.target)), "profile": profile_meta, "autotune": measured.autotune,
        "profiled_window": profiled, "run_wall_s": time.time() - context.started,
        "started_at": datetime.fromtimestamp(context.started, UTC).isoformat(timespec="seconds")}
    # typed through the reader's own path: a field missing or misnamed here fails at once
    return from_dict(RunSummary, {"schema_version": RunSummary.SCHEMA_VERSION, **{
        k: asdict(v) if is_dataclass(v) else v for k, v in data.items()}}, "the run's summary")


def _verify(cfg, propose, train_step: TrainStep, source: str, run_dir: Path,
            first_index: int, training_wall: float, own_step_ms: float) -> Verification:
    """The run's own setting and the model's best others, measured in interleaved rounds."""
    proposal = propose(run_dir, cfg.verify.candidates)
    base = {"plan": proposal.plan, "training_wall_s": training_wall,
            "budget_share": cfg.verify.budget_share, "stretch_share": cfg.verify.stretch_share,
            "budget_base_min_s": cfg.verify.budget_base_min_s, "skipped": proposal.skipped,
            "model_recommendation": proposal.model_recommendation,
            "prediction_bound": cfg.verify.prediction_bound, "reused": proposal.reused,
            "earlier": proposal.earlier}
    if not proposal.plan:
        log.info("no verification: %s", proposal.skipped)
        return Verification(rounds=None, **base)
    if len(proposal.plan) < 2:  # every candidate settled, or out of reach, in earlier runs' rounds
        log.info("no rounds: earlier runs' rounds account for every candidate (%s)",
                 "; ".join(f"{r.label}: {r.comparison.words()} in {r.source_run}'s"
                           for r in proposal.reused))
        return Verification(rounds=None, **base)
    found = verify.run_rounds(lambda images, labels: timed_step(train_step, images, labels),
                              source, cfg, proposal.plan, run_seed(cfg) + 3, first_index,
                              training_wall, own_step_ms, prior_of(proposal.earlier))
    result = Verification(rounds=found, **base)
    log.info("verification: %d settings in %d rounds (%s, %d past the budget) in %.0f s (%.0f %% "
             "of the training's %.0f s); %d window(s) measured again; %d settled by earlier runs, %d "
             "pooled with theirs",
             len(proposal.plan), len(found.orders), found.stopped, found.stretched, found.wall_s,
             100 * result.share_of_training, training_wall, len(found.dropped()), len(proposal.reused),
             len(proposal.earlier))
    return result


def _verified_steps(summary: RunSummary) -> int:
    """Steps the verification's and the remedy's rounds took (the next are numbered after)."""
    found = [summary.verification.rounds if summary.verification else None,
             summary.against_source.rounds if summary.against_source else None]
    return sum(v.window.steps for rounds in found if rounds for v in rounds.visits)


def run(cfg, manifest_path: str | Path | None = None,
        propose: Callable[[Path, int], Proposal] | None = None,
        on_step: OnStep | None = None, remedy_bounds: tuple[float, ...] = ()) -> RunSummary:
    """Train one arm; write steps.csv and summary.json into cfg.paths.run_dir.

    Args:
        cfg: the arm's resolved config (perfstudy.common.config).
        manifest_path: the dataset's manifest (None: made or found from cfg.data).
        propose: (run folder, k) -> the verification's Proposal (perfstudy.orchestrate.analyze.propose:
            the model's best k settings beside the run's own); all are then measured in
            interleaved rounds (perfstudy.run.verify). None: no verification.
        on_step: sees each trained step's times as it ends (perfstudy.present.live's run).
        remedy_bounds: gains a prepared run's rounds against its source decide beside
            verify.against_source_bounds (a claim on its source's prediction: the orchestrator
            reads them from the source run's diagnosis, perfstudy.decide.remedy_proof).

    Returns:
        The run's summary, as written to summary.json.
    """
    started = time.time()
    _setup_mindspore(cfg)  # first: a missing device fails before minutes of data work
    check_factories(cfg)
    check_writable(cfg.paths.run_dir, "paths.results")
    run_dir = Path(cfg.paths.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = load_data(cfg, manifest_path)
    source = sources.training_source(manifest)
    workers = pipeline.resolve_workers(cfg.pipeline.num_parallel_workers,
                                       cfg.pipeline.global_default_workers)
    log.info("study %s arm %s: %d images in %d classes at %s; map workers requested %s, "
             "effective %d of %d CPUs", cfg.study, cfg.arm, manifest["num_images"],
             manifest["num_classes"], manifest["root"], workers.requested, workers.effective,
             workers.cpu_count)
    train_step = TrainStep(cfg, model_classes(cfg, manifest))
    compile_s = compile_graphs(train_step, cfg, source, run_seed(cfg) + 3)
    measured = measure(cfg, train_step, source, run_dir, on_step)
    calibration = calibrate(train_step, measured.last_batch, cfg, workers, source)
    profile_meta = measured.profiler.finish()  # the op profile's analysis, after all timing
    frame, drain_rule = step_frame(cfg, measured.records, compile_s is not None)
    context = Resolved(workers, manifest, train_step.num_classes, compile_s, started,
                       train_step.head_outputs, train_step.labels)
    summary = summarise(cfg, frame, drain_rule, measured, context, calibration, profile_meta)
    write_json(run_dir / "environment.json", full_environment(str(cfg.device.target)))
    write_csv(run_dir / "steps.csv", frame)
    write_summary(run_dir, summary)
    summary = measure_in_rounds(cfg, summary, RoundsContext(train_step, source, manifest, run_dir,
                                                            len(frame), workers.cpu_count,
                                                            tuple(remedy_bounds)), propose)
    summary = summary.with_resources(Resources.now())
    write_summary(run_dir, summary)
    _log_result(summary)
    return summary


@dataclass(frozen=True)
class RoundsContext:
    """What the rounds after the measured steps run on: the compiled step, the data, the run
    folder, the steps trained so far and the CPUs."""

    train_step: TrainStep
    source: str
    manifest: dict
    run_dir: Path
    steps_done: int
    cpu_count: int
    remedy_bounds: tuple[float, ...] = ()  # gains the rounds against the source decide too


def measure_in_rounds(cfg, summary: RunSummary, ctx: RoundsContext,
                      propose: Callable[[Path, int], Proposal] | None) -> RunSummary:
    """The comparisons measured in interleaved rounds after the run's own steps, each written
    to summary.json as it ends: the verification (the run's own setting against the model's
    candidates), the remedy (a prepared arm against its source) and a sweep (a benchmark's
    ground truth: every setting of one operator)."""
    def step_fn(images, labels):
        return timed_step(ctx.train_step, images, labels)

    if propose is not None and cfg.verify.candidates > 0 and not cfg.pipeline.autotune:
        summary = summary.with_verification(_verify(
            cfg, propose, ctx.train_step, ctx.source, ctx.run_dir, ctx.steps_done, summary.run_wall_s,
            summary.steady_step_ms))
        write_summary(ctx.run_dir, summary)
    if cfg.data.prepared and cfg.verify.against_source:  # the remedy, paired by round
        summary = summary.with_against_source(remedy_rounds.run(
            step_fn, ctx.source, ctx.manifest, cfg, summary.operator_settings or {}, run_seed(cfg) + 5,
            ctx.steps_done + _verified_steps(summary), summary.run_wall_s, ctx.remedy_bounds))
        write_summary(ctx.run_dir, summary)
    if cfg.sweep.key:  # the diagnosis benchmark's ground truth: every setting of one operator
        summary = summary.with_sweep(sweep.run(
            step_fn, ctx.source, cfg, summary.operator_settings, ctx.cpu_count, run_seed(cfg) + 4,
            ctx.steps_done + _verified_steps(summary), summary.run_wall_s))
        write_summary(ctx.run_dir, summary)
    return summary


def _log_result(summary: RunSummary) -> None:
    log.info("peak memory %.0f MiB (ended workers %.0f MiB), CPU time %.0f s (+ %.0f s in ended "
             "workers)", summary.resources.max_rss_mb, summary.resources.children_max_rss_mb,
             summary.resources.cpu_s, summary.resources.children_cpu_s)
    log.info("steady step %.0f ms, gap share %.0f %%, %.1f img/s over %d measured steps "
             "(%d excluded); floor %.0f ms (%s)", summary.steady_step_ms, 100 * summary.gap_share,
             summary.images_per_s, summary.steps_measured, summary.steps_excluded,
             summary.floor_ms, summary.binding_floor)

