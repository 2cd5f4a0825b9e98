"""The what-if model's records (perfstudy.decide.advisor): a stage per sized operator, the
model built from one run, a prediction at one setting, and the advice (diagnosis.json's
`advisor`). Frozen: the model is levelled and anchored by making a new one, never by editing."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from perfstudy.common.records import doc
from perfstudy.run.settings import Settings


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


@dataclass(frozen=True)
class Swing:
    """How far one operator's own setting moves the predicted step, the others kept as they run
    (perfstudy.decide.advisor.step_swing); the culprit's carries its CPU share."""

    label: str = doc("the operator, as the report names it")
    key: str = doc("the config key that sizes it")
    swing: float = doc("slowest / fastest predicted step - 1")
    slowest: Settings = doc("its setting with the slowest predicted step")
    slowest_ms: float = doc("that step (ms)")
    fastest: Settings = doc("its setting with the fastest predicted step")
    fastest_ms: float = doc("that step (ms)")
    cpu_ms_per_batch: float | None = doc("its CPU ms per batch at the current setting (the "
                                         "culprit's only)", default=None)
    pipeline_cpu_ms: float | None = doc("the whole pipeline's CPU ms per batch then",
                                        default=None)


@dataclass(frozen=True)
class CurvePoint:
    """The picked operator at one worker count (MLflow plots the curve)."""

    workers: int
    step_ms: float


@dataclass(frozen=True)
class Advice(Model):
    """diagnosis.json's `advisor`: the model, its prediction at every setting, and its pick."""

    now: Settings = doc("the run's own setting")
    predictions: list[Prediction] = doc("every setting predicted")
    pick: Settings = doc("the cheapest setting within 5 % of the best predicted")
    curve: list[CurvePoint] = doc("the picked operator's workers 1..CPUs, the others as picked")
    pick_key: str = doc("the picked operator's key")
    pick_workers: int | None = doc("its workers in the pick")
    predicted_best_ms: float = doc("the best predicted step")
    predicted_pick_ms: float = doc("the predicted step at the pick")
    predicted_now_ms: float = doc("the predicted step at the run's own setting")
    pick_binding: str = doc("what binds at the pick")
    now_binding: str = doc("what binds at the run's own setting")
    now_slowest_stage: str = doc("the slowest stage at the run's own setting")
    gain: float = doc("predicted now / pick - 1")
    now_error: float = doc("(predicted now - measured) / measured")
    sentence: str = doc("the prediction in words")
    pick_is_recommendation: bool = doc("the pick is the answer's setting (else measurement "
                                       "overruled it, or no verdict was issued)", default=True)
    role: str = doc("what the model is to the answer", default="")

    @classmethod
    def of(cls, model: Model, **fields) -> Advice:
        """The advice on `model`: its fields, and the prediction's (`fields`)."""
        return cls(**{f.name: getattr(model, f.name) for f in dataclasses.fields(Model)}, **fields)


@dataclass(frozen=True)
class PreparedRow:
    """The decode remedy's predicted step at one setting."""

    settings: Settings = doc("every sized key's workers (and processes)")
    step_ms: float = doc("the predicted step on the prepared source")
    binding: str = doc("what binds there: pipeline | network | cpu | gil")
    levelled: bool = doc("levelled on the run (the same thing binds as in the run)")


@dataclass(frozen=True)
class PreparedPrediction:
    """The step this arm's pipeline is predicted to take on its source prepared at the bounded
    resolution (perfstudy.decide.fixes.prepared_prediction; diagnosis.json's
    recommendation.prepared_prediction)."""

    megapixels_now: float = doc("the source's mean megapixels per image")
    megapixels_prepared: float = doc("... once prepared at the bound")
    rule: str | None = doc("the bound in words")
    decoding_stage: str = doc("the stage that decodes, as the model names it")
    binding_now: str = doc("what binds at the run's own setting on the source")
    now: float = doc("the predicted step at the run's own setting, prepared")
    predictions: list[PreparedRow] = doc("every setting the model tried, prepared")
    basis: str = doc("scaled: its measured cost x the megapixels' ratio (a C++ decoding map); "
                     "probed: the map measured alone on its captured rows prepared at the bound "
                     "(a decoding map that also runs Python)", default="scaled")

    def step_at(self, settings: Settings) -> float | None:
        """The predicted step at a run's own operator settings (None: not among them)."""
        for row in self.predictions:
            if all(row.settings.get(k) == v for k, v in settings.items() if k in row.settings):
                return row.step_ms
        return None

    @property
    def best(self) -> PreparedRow:
        return min(self.predictions, key=lambda r: r.step_ms)
