"""The what-if model: the steady step at any setting of the pipeline's operators, from ONE run.

Every operator whose workers a config key sets (the article's map, a map of your own, a
per-batch map, the reader) is a stage with its own cost, measured in this run:
* a Python operator: its probe (perfstudy.run.opprobe) ran it alone at 1..CPUs workers, in
  threads and in processes: its stage time and CPU per batch are read off those points;
* any other operator: the MindData profile's CPU per batch (the op's CPU % x the profiled
  step) and how busy each worker is. A worker busier than half a core computes: its stage
  is CPU-ms / min(workers, CPUs). One less busy waits (I/O, sleep): its stage is
  wall-ms per worker / workers. The pipeline-alone calibration (the same pipeline, no
  network) anchors the absolute pace of the slowest such stage at the current setting.
Without a profile the whole pipeline is one stage (its calibration), and the sentence says so.

The network: its wall and CPU time per step alone (calibration), so the cores it occupies.
A pipelined chain runs at the pace of its slowest stage and the cores are shared:
    step(s) = max(slowest stage, network on the cores the pipeline leaves free,
                  CPU floor = (pipeline CPU-ms + network CPU-ms) / CPUs)
over every setting s (each sized operator 1..CPUs workers; threads or processes for a
Python map). The best setting is the fastest predicted; the recommendation is the cheapest
setting (fewest workers, fewest changes) within 5 % of it. "No setting helps" is this
model's prediction that no setting beats the current one by 5 % or more.
A Python operator's share of time that needs the training process's GIL is measured by its
probe (run beside a thread that holds the GIL in long stretches, as a network's step does:
perfstudy.run.opprobe); a probe without that point counts one that computes (>= half a core
per thread worker) as all GIL. MindSpore's graph step holds the GIL while it runs, so the
two take turns (docs/lab-notes.md#gil-turns), in thread workers and
(through MindSpore's dispatch) in worker processes too:
    GIL floor     G    = GIL share x its wall-ms per batch (in threads: at 1 worker, however
                         many there are; in processes: at that setting) + the network's
                         wall-ms per step
Finally the model is levelled on the run: every prediction x (measured step / modelled step at
the run's own setting), within 0.67..1.5, the measured step being the median of every window of
that setting (the run's own and, once they ran, its verification rounds'); the shape across
settings is the model's.
The gap share is not predicted: how the network's time stretches when the cores are
shared is the scheduler's doing (docs/lab-notes.md#network-share).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from perfstudy.common.records import doc
from perfstudy.run.probe_record import GilPoint, PreparedProbe, ProbedOperator
from perfstudy.run.settings import BUILTIN_PIPELINE, MP, PRIMARY_KEY, Settings
from perfstudy.run.summary import RunSummary

COMPUTES = 0.5  # a worker busier than half a core computes; below, it mostly waits
MAX_SETTINGS = 4096
WELL_FILLED = 0.50  # the queue rule's thresholds (queue usage = mean size / capacity)
NEAR_EMPTY = 0.10
ANCHOR_RANGE = (0.5, 2.0)  # calibration / profile pace ratios accepted as the same stage
LEVEL_RANGE = (0.67, 1.5)  # measured / modelled step at the run's own setting, as applied


@dataclass(frozen=True)
class ProbePoint:
    """A Python operator run alone at one setting (perfstudy.run.opprobe)."""

    workers: int = doc("its workers")
    multiprocessing: bool = doc("in worker processes")
    wall_ms_per_batch: float = doc("wall ms per batch alone")
    cpu_ms_per_batch: float = doc("CPU ms per batch alone")
    samples: int = doc("runs averaged into it (the 1-thread point: 2 with the GIL pair's own)",
                       default=1)


@dataclass(frozen=True)
class Stage:
    """One sized operator of the pipeline as the model sees it."""

    key: str = doc("the config key that sizes it")
    label: str = doc("the operator as the profile (or the probe) names it")
    op_id: int | None = doc("its id in the profile (None: from the calibration)")
    operations: list[str] = doc("the operations it runs (what decides a culprit's kind)")
    workers_now: int = doc("its workers in the run")
    multiprocessing_now: bool = doc("its Python in worker processes in the run")
    cpu_ms_per_batch: float = doc("its CPU ms per batch in the run")
    kind: str = doc("probed (measured alone) | computes | waits")
    busy_per_worker: float = doc("how busy one worker is (cores)")
    points: list[ProbePoint] = doc("its probe's points (probed only)", default_factory=list)
    gil_share: float | None = doc("the share of its time that needs the GIL (probed only)",
                                  default=None)
    gil_measured: bool = doc("that share measured beside a GIL holder (else assumed)", default=False)
    holds_gil: bool = doc("it takes turns with the network on the GIL", default=False)
    anchor: float = doc("the calibration's pace over the profile's, applied to its CPU", default=1.0)


@dataclass(frozen=True)
class Model:
    """Everything the model needs, from the run itself."""

    source: str = doc("profile | calibration (pipeline alone; no profile)")
    cores: int = doc("the CPUs the run may use")
    stages: list[Stage] = doc("the sized operators")
    other_ops_cpu_ms_per_batch: float = doc("CPU ms per batch of every operator not sized")
    network_wall_ms: float = doc("the network's step alone (wall)")
    network_cpu_ms: float = doc("the network's step alone (CPU)")
    network_cores: float = doc("cores the network's step occupies alone")
    level: float = doc("measured / modelled step at the run's own setting, as applied")

    def stage(self, label: str) -> Stage | None:
        return next((s for s in self.stages if s.label == label), None)


@dataclass(frozen=True)
class Prediction:
    """The model's step at one setting, and what sets it."""

    settings: Settings = doc("every sized key's workers (and processes)")
    step_ms: float = doc("the predicted step, levelled on the run")
    model_step_ms: float = doc("the predicted step before levelling")
    slowest_stage: str = doc("the slowest stage's label")
    slowest_stage_ms: float = doc("its ms per batch")
    network_ms: float = doc("the network on the cores the pipeline leaves")
    cpu_floor_ms: float = doc("(pipeline + network CPU-ms) / CPUs")
    gil_floor_ms: float = doc("GIL turns + the network (0: no Python takes turns)")
    gil_ms: float = doc("the Python operators' GIL time per batch")
    pipeline_cpu_ms: float = doc("the pipeline's CPU ms per batch")
    binding: str = doc("pipeline | network | cpu | gil")
    stages_ms: dict[str, float] = doc("each stage's ms per batch")


def _flag(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and bool(value)


def _num(value: Any, default: float = 0.0) -> float:
    return default if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def probe_points(probe: ProbedOperator | PreparedProbe | None) -> list[ProbePoint]:
    """A probe's measured points (perfstudy.run.opprobe writes them into the calibration)."""
    return [ProbePoint(p.workers, p.multiprocessing, p.wall_ms_per_batch, p.cpu_ms_per_batch)
            for p in (probe.measured() if probe else [])]


def _profiled_stages(summary: RunSummary, ops: pd.DataFrame) -> tuple[list[Stage], float]:
    """Stages of the sized operators from the profile, and the CPU of all other operators."""
    window = summary.profiled_window
    step_ms = (window.steady_step_ms if window else None) or summary.steady_step_ms
    probed = {p.config_key: p for p in summary.calibration.operators}
    cpu_ms = {int(r["op_id"]): _num(r["cpu_pct"]) / 100 * step_ms for _, r in ops.iterrows()}
    keyed = ops[ops["config_key"].notna()] if "config_key" in ops else ops.iloc[0:0]
    if keyed.empty:  # a profile without config keys: the costliest map is the article's
        maps = ops[(ops["op_type"] == "Map") & ops["cpu_pct"].notna()]
        if maps.empty:
            return [], 0.0
        keyed = maps.sort_values("cpu_pct", ascending=False).iloc[:1].assign(config_key=PRIMARY_KEY)
    stages = []
    for _, row in keyed.iterrows():
        workers = int(_num(row["num_workers"], 1)) or 1
        base = {"key": row["config_key"], "label": row["label"], "op_id": int(row["op_id"]),
                "operations": [o for o in str(row.get("operations") or "").split(", ") if o],
                "workers_now": workers, "multiprocessing_now": _flag(row.get("multiprocessing")),
                "cpu_ms_per_batch": cpu_ms[int(row["op_id"])]}
        probe = probed.get(row["config_key"])
        points = probe_points(probe)
        if points:
            stages.append(Stage(**base, **probed_fields(points, probe.gil)))
            continue
        per_worker = _num(row.get("cpu_pct_per_worker"), _num(row["cpu_pct"]) / workers)
        busy = min(1.0, max(per_worker / 100, 1e-3))
        # Little CPU means waiting (I/O) only where the queues say the op holds the chain
        # up; otherwise it is idle, blocked by a slower neighbour, and costs its CPU only.
        waits = busy < COMPUTES and _held_up_at(row, ops)
        stages.append(Stage(**base, kind="waits" if waits else "computes", busy_per_worker=busy))
    sized = {s.op_id for s in stages}
    other = sum(v for k, v in cpu_ms.items() if k not in sized)
    return stages, other


def _held_up_at(row: pd.Series, ops: pd.DataFrame) -> bool:
    """MindInsight's queue rule for one op: its input queue well filled, its output near empty."""
    child = row.get("child_id")
    if child is None or pd.isna(child) or pd.isna(row.get("queue_usage")):
        return False
    below = ops[ops["op_id"] == int(child)]
    return bool(len(below)) and held_up(_num(below.iloc[0]["queue_usage"]), _num(row["queue_usage"]))


def held_up(input_usage: float, output_usage: float) -> bool:
    """MindInsight's queue rule: input queue well filled, own output queue near empty."""
    return input_usage >= WELL_FILLED and output_usage <= NEAR_EMPTY


def _probed_stage(probe: ProbedOperator, summary: RunSummary) -> Stage:
    """A Python operator's stage from its probe alone (a run without a dataset profile)."""
    settings = summary.operator_settings or {}
    key = probe.config_key
    fields = probed_fields(probe_points(probe), probe.gil)
    name = str(probe.operation or key).rpartition(":")[2]
    # an addressed map reads 'map_2 [RandomCropDecodeResize, ..., HWC2CHW]': its operations
    # (what decides a culprit's kind, e.g. decode) are in the brackets; a callable is its own
    _, bracket, inside = name.partition(" [")
    operations = inside.rstrip("]").split(", ") if bracket else [name]
    one = min(fields["points"], key=lambda p: (p.multiprocessing, p.workers))
    return Stage(key=key, label=f"{name} ({key})", op_id=None, operations=operations,
                 workers_now=int(settings.get(key) or probe.workers_now or 1),
                 multiprocessing_now=bool(settings.get(key + MP, probe.multiprocessing_now)),
                 cpu_ms_per_batch=one.cpu_ms_per_batch, **fields)


def gil_share(gil: GilPoint | None, alone_ms: float | None = None) -> float | None:
    """The share of its 1-thread time alone that an operator's GIL point (perfstudy.run.opprobe)
    measured: of the point's own run alone, else of `alone_ms`; None without a point."""
    reference = (gil.wall_ms_per_batch_alone if gil else None) or alone_ms
    if not gil or not reference or reference <= 0:
        return None
    return min(1.0, max(0.0, gil.gil_ms_per_batch / reference))


def probed_fields(points: list[ProbePoint], gil: GilPoint | None = None) -> dict[str, Any]:
    """A probed stage's kind, points, how busy one thread worker is alone, and the share of its
    time that needs the GIL: measured beside a GIL holder (`gil`, the probe's point); without
    that point, Python that computes (>= half a core) counts as all GIL, one that waits as none."""
    if gil and gil.wall_ms_per_batch_alone:
        points = [_with_second_sample(p, gil.wall_ms_per_batch_alone) for p in points]
    one = min(points, key=lambda p: (p.multiprocessing, p.workers))
    measured = gil_share(gil, one.wall_ms_per_batch)  # of the paired run alone, timed next to it
    busy = min(1.0, one.cpu_ms_per_batch / max(one.wall_ms_per_batch, 1e-9))
    # holding the GIL is running Python, so no more of its time than it spends on a core: a
    # waiting operator's GIL reading beside a holder on a busy host is the host's noise
    share = min(measured, busy) if measured is not None else (1.0 if busy >= COMPUTES else 0.0)
    return {"kind": "probed", "points": points, "busy_per_worker": busy, "gil_share": share,
            "gil_measured": measured is not None, "holds_gil": share > 0}


def _with_second_sample(point: ProbePoint, wall_ms: float) -> ProbePoint:
    """The 1-thread point averaged with the GIL pair's own run alone at 1 thread (a second
    sample of the same setting, timed minutes later: the probe's points vary ~10 %)."""
    if point.workers != 1 or point.multiprocessing:
        return point
    scale = (point.wall_ms_per_batch + wall_ms) / 2 / max(point.wall_ms_per_batch, 1e-9)
    return replace(point, wall_ms_per_batch=point.wall_ms_per_batch * scale,
                   cpu_ms_per_batch=point.cpu_ms_per_batch * scale, samples=2)


def _calibration_stages(summary: RunSummary) -> list[Stage]:
    """No profile: each probed Python operator from its probe, the rest of the pipeline as one
    stage sized by the article's map, from the pipeline-alone calibration."""
    cal = summary.calibration
    workers = summary.num_parallel_workers.effective
    cores = summary.num_parallel_workers.cpu_count
    probed = [_probed_stage(p, summary) for p in cal.operators if probe_points(p)]
    probed_cpu = sum(stage_ms(s, s.workers_now, s.multiprocessing_now, cores)[1] for s in probed)
    rest_cpu = max(cal.pipeline_cpu_ms - probed_cpu, 0.0)
    busy = min(1.0, max(rest_cpu, 1e-3) / max(cal.pipeline_wall_ms * min(workers, cores), 1e-9))
    label = "the rest of the pipeline" if probed else "the pipeline"
    key = _rest_key(summary, {s.key for s in probed})
    if key != PRIMARY_KEY:
        workers = int((summary.operator_settings or {}).get(key) or 1)
    rest = Stage(key=key, label=label, op_id=None, operations=[], workers_now=workers,
                 multiprocessing_now=False, cpu_ms_per_batch=rest_cpu, busy_per_worker=busy,
                 kind="computes" if busy >= COMPUTES or probed else "waits")
    return [*probed, rest]


def _rest_key(summary: RunSummary, probed: set[str]) -> str:
    """The key that sizes "the rest of the pipeline" without a profile: the article's map on
    the case study's pipeline; on any other, its first sized operator not probed alone (by
    address, as pipeline.json lists them)."""
    if summary.factories.pipeline == BUILTIN_PIPELINE:
        return PRIMARY_KEY
    keys = [k for k in summary.operator_settings or {} if not k.endswith(MP) and k not in probed]
    return keys[0] if keys else PRIMARY_KEY


def stage_ms(stage: Stage, workers: int, processes: bool, cores: int) -> tuple[float, float]:
    """(wall ms, CPU ms) per batch of one stage at `workers` workers."""
    workers = max(1, min(workers, cores))  # MindSpore refuses more workers than CPUs
    if stage.kind == "probed":
        mode = [p for p in stage.points if p.multiprocessing == processes] or stage.points
        point = min(mode, key=lambda p: (abs(p.workers - workers), -p.workers))
        # a count the probe could not measure: its workers split the nearest point's batches
        # (the cores they share are the CPU floor's business, in predict)
        return point.wall_ms_per_batch * point.workers / workers, point.cpu_ms_per_batch
    cpu = stage.cpu_ms_per_batch * stage.anchor
    if stage.kind == "computes":
        return cpu / workers, cpu
    return cpu / stage.busy_per_worker / workers, cpu


def rates(summary: RunSummary, ops: pd.DataFrame | None) -> Model:
    """Everything the model needs, from the run itself."""
    cal = summary.calibration
    cores = summary.num_parallel_workers.cpu_count
    stages, other = ([], 0.0) if ops is None or ops.empty else _profiled_stages(summary, ops)
    source = "profile" if stages else "calibration (pipeline alone; no profile)"
    if not stages:
        stages = _calibration_stages(summary)
    model = Model(source=source, cores=cores, stages=stages, other_ops_cpu_ms_per_batch=other,
                  network_wall_ms=cal.compute_wall_ms, network_cpu_ms=cal.compute_cpu_ms,
                  network_cores=cal.compute_cpu_ms / max(cal.compute_wall_ms, 1e-9), level=1.0)
    return _anchor(model, cal.pipeline_wall_ms)


def _anchor(model: Model, pipeline_wall_ms: float | None) -> Model:
    """Scale the slowest unprobed stage so the pipeline alone at the current setting takes
    what its calibration measured (the profile gives shares; the calibration the pace)."""
    if not pipeline_wall_ms or model.source != "profile":
        return model
    now = current_settings(model)
    parts = [stage_ms(s, now[s.key], now.get(s.key + MP, False), model.cores) for s in model.stages]
    index = max(range(len(parts)), key=lambda i: parts[i][0])
    slowest = model.stages[index]
    cpu_total = sum(p[1] for p in parts) + model.other_ops_cpu_ms_per_batch
    if slowest.kind == "probed" or parts[index][0] <= 0 or cpu_total / model.cores > parts[index][0]:
        return model  # a probed stage is measured already; a CPU-bound pipeline alone says nothing
    factor = pipeline_wall_ms / parts[index][0]
    if not ANCHOR_RANGE[0] <= factor <= ANCHOR_RANGE[1]:  # they disagree: trust the profile
        return model
    stages = list(model.stages)
    stages[index] = replace(slowest, anchor=factor)
    return replace(model, stages=stages)


def canonical(settings: Settings) -> Settings:
    """Settings as compared and shown: threads are the absence of key + MP (never False)."""
    return {k: v for k, v in settings.items() if not (k.endswith(MP) and not v)}


def current_settings(model: Model) -> Settings:
    """The run's own setting: workers per key (and processes for Python maps that use them)."""
    settings: Settings = {}
    for stage in model.stages:
        settings[stage.key] = stage.workers_now
        if stage.multiprocessing_now:
            settings[stage.key + MP] = True
    return settings


def _gil_ms(stage: Stage, settings: Settings, parts: dict, cores: int) -> float:
    """Per batch, how long a Python op keeps the network off the GIL: its GIL share of, in
    worker processes, its stage (they overlap outside the GIL); in thread workers, one worker's
    stage, however many there are (docs/lab-notes.md#gil-threads)."""
    share = 1.0 if stage.gil_share is None else stage.gil_share
    if settings.get(stage.key + MP, False):
        return share * parts[stage.label][0]
    return share * stage_ms(stage, 1, False, cores)[0]


def predict(model: Model, settings: Settings | int) -> Prediction:
    """Predicted steady step and its parts at `settings` (an int: the article's map's workers;
    keys left out keep the run's own setting)."""
    if not isinstance(settings, dict):
        settings = {PRIMARY_KEY: int(settings)}
    full = canonical({**current_settings(model), **settings})
    cores = model.cores
    parts = {s.label: stage_ms(s, int(full.get(s.key, s.workers_now)), bool(full.get(s.key + MP, False)), cores)
             for s in model.stages}
    slowest_label = max(parts, key=lambda k: parts[k][0])
    stage = parts[slowest_label][0]
    pipeline_cpu = sum(p[1] for p in parts.values()) + model.other_ops_cpu_ms_per_batch
    floor = (pipeline_cpu + model.network_cpu_ms) / cores
    # Python ops that compute take turns with the network on the training process's GIL:
    # MindSpore's graph step holds it while it runs, and so does the map worker that hands
    # rows to worker processes and waits for them (docs/lab-notes.md#gil-turns).
    gil = sum(_gil_ms(s, full, parts, cores) for s in model.stages if s.holds_gil)
    gil_floor = gil + model.network_wall_ms if gil else 0.0
    step = network = max(stage, model.network_wall_ms, floor, gil_floor)
    for _ in range(5):  # the network gets the cores the pipeline leaves free: a fixed point
        left = max(cores - min(pipeline_cpu / step, cores), 0.05)
        network = max(model.network_wall_ms, model.network_cpu_ms / min(model.network_cores, left))
        step = max(stage, network, floor, gil_floor)
    binding = ("gil" if gil_floor >= 0.97 * step and gil_floor > floor else
               "cpu" if floor >= 0.97 * step else "pipeline" if stage >= network else "network")
    return Prediction(settings=full, step_ms=step * model.level, model_step_ms=step,
                      slowest_stage=slowest_label, slowest_stage_ms=stage, network_ms=network,
                      cpu_floor_ms=floor, gil_floor_ms=gil_floor, gil_ms=gil,
                      pipeline_cpu_ms=pipeline_cpu, binding=binding,
                      stages_ms={label: round(p[0], 1) for label, p in parts.items()})


def stage_options(model: Model, stage: Stage) -> list[Settings]:
    """Every setting of one sized operator: 1..CPUs workers, a probed Python map also in
    processes (threads said explicitly: a run in processes keeps them otherwise)."""
    options: list[Settings] = [{stage.key: w} for w in range(1, model.cores + 1)]
    if stage.kind == "probed" and any(p.multiprocessing for p in stage.points) \
            and stage.key != "pipeline.reader_workers":
        options = [{**o, stage.key + MP: False} for o in options]
        options += [{stage.key: w, stage.key + MP: True} for w in range(1, model.cores + 1)]
    return options


def candidates(model: Model) -> list[Settings]:
    """Every setting to predict: the product of every sized operator's options."""
    axes = [stage_options(model, stage) for stage in model.stages]
    combos = []
    for parts in itertools.islice(itertools.product(*axes), MAX_SETTINGS):
        merged: Settings = {}
        for part in parts:
            merged.update(part)
        combos.append(merged)
    return combos
