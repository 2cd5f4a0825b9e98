"""What would help, by the kind of the culprit (decode, Python, waiting, computing), with only
the numbers that bear on it; and the step predicted on the source prepared at a bounded
resolution (the decode remedy, `PreparedPrediction`), at every setting the model tried.
Whether a prepared arm then kept that promise is perfstudy.decide.remedy_proof's."""

from __future__ import annotations

from dataclasses import dataclass, replace

from perfstudy.common.records import doc
from perfstudy.common.thresholds import pct
from perfstudy.decide.advisor import Advice
from perfstudy.decide.whatif import Prediction, Stage, predict, probe_points, probed_fields
from perfstudy.run.settings import BUILTIN_PIPELINE, DECODE_OPS, Settings
from perfstudy.run.summary import RunSummary


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
    resolution (perfstudy.decide.remedies.prepared_prediction; diagnosis.json's
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


def prepared_prediction(advice: Advice, summary: RunSummary) -> PreparedPrediction | None:
    """The step this arm's pipeline is predicted to take on its source prepared at the bounded
    resolution (perfstudy.data.prepare), at every setting the model tried: a C++ decoding
    stage's measured cost scaled by megapixels (decode cost is per pixel); a decoding map that
    also runs Python (probed alone) as the probe measured it on its rows prepared at the bound
    (its Python's cost does not scale with the source's pixels); the rest as measured. None
    when nothing decodes, the source is already within the bound, or a probed decoding map
    was not probed on prepared rows."""
    data = summary.dataset
    now_mp, target_mp = data.mean_megapixels, data.bounded_megapixels
    if not now_mp or not target_mp or target_mp >= now_mp:
        return None
    on_prepared = {p.config_key: p.prepared for p in summary.calibration.operators if p.prepared}
    decoding = [s for s in advice.stages if any(op in DECODE_OPS for op in s.operations)
                and (s.kind != "probed" or s.key in on_prepared)]
    if not decoding:
        return None
    ratio = target_mp / now_mp

    def prepared_stage(stage: Stage) -> Stage:
        if stage not in decoding:
            return stage
        if stage.kind != "probed":
            return replace(stage, cpu_ms_per_batch=stage.cpu_ms_per_batch * ratio)
        probe = on_prepared[stage.key]
        fields = probed_fields(probe_points(probe), probe.gil)
        one = min(fields["points"], key=lambda p: (p.multiprocessing, p.workers))
        return replace(stage, cpu_ms_per_batch=one.cpu_ms_per_batch, **fields)

    scaled = replace(advice, stages=[prepared_stage(s) for s in advice.stages])
    own = predict(advice, advice.now).binding

    def step(row: Prediction) -> float:
        # The level (measured / modelled at the run's own setting) corrects what the model
        # misses in the run's own regime (e.g. a decoding map and the network contending for
        # the cores); a smaller source changes what binds, and there the model stands alone.
        return row.step_ms if row.binding == own else row.model_step_ms

    rows = [predict(scaled, r.settings) for r in advice.predictions]
    return PreparedPrediction(
        megapixels_now=now_mp, megapixels_prepared=target_mp, rule=data.bound_rule,
        decoding_stage=decoding[0].label,
        basis="probed" if decoding[0].kind == "probed" else "scaled", binding_now=own,
        now=step(predict(scaled, advice.now)),
        predictions=[PreparedRow(r.settings, step(r), r.binding, r.binding == own) for r in rows])


def prepared_step_at(prediction: PreparedPrediction | None, settings: Settings) -> float | None:
    """The predicted prepared step at a run's own operator settings (None if not predicted)."""
    return prediction.step_at(settings) if prediction else None


def _decode_remedy(summary: RunSummary, best: Prediction, prepared: PreparedPrediction | None) -> str:
    data = summary.dataset
    count = data.num_images or 0
    size = (f"the source JPEGs average {data.total_bytes / count / 1e3:,.0f} KB"
            if count and data.total_bytes else "")
    mp = data.mean_megapixels
    text = f"decode less: {size}" + (f" and {mp:.2f} megapixels per image" if mp else "")
    if prepared:
        how = ("the decode cost scales with megapixels" if prepared.basis == "scaled" else
               f"{prepared.decoding_stage}, probed on its rows prepared, decodes less")
        text += (f"; {how}, so the source prepared at a bounded "
                 f"resolution ({prepared.megapixels_prepared:.3f} MP: {prepared.rule}) is "
                 f"predicted to give {prepared.now:.0f} ms per step at the current setting and "
                 f"{prepared.best.step_ms:.0f} ms at the best, against {best.step_ms:.0f} ms at the "
                 f"best setting now ({_prepare_how(summary)})")
    return text


def _prepare_how(summary: RunSummary) -> str:
    """How to get the prepared source: data.prepared converts it once, to a MindRecord for the
    case study's pipeline, to an ImageFolder copy handed to any other factory as its root."""
    factory = summary.factories.pipeline
    if factory == BUILTIN_PIPELINE:
        return "data.prepared=true converts it once to MindRecord"
    return (f"data.prepared=true converts it once to an ImageFolder copy, handed to {factory} "
            "as its root")


def remedies(kind: str | None, advice: Advice, stage: Stage | None, summary: RunSummary,
             best: Prediction, prepared: PreparedPrediction | None) -> list[str]:
    """What would help, by the kind of the culprit; only numbers that bear on it (`prepared`:
    the step predicted on the prepared source, perfstudy.decide.remedies.prepared_prediction)."""
    cores = advice.cores
    if kind == "decode":
        return [_decode_remedy(summary, best, prepared),
                f"or decode on the accelerator, or more cores (CPU floor {best.cpu_floor_ms:.0f} ms "
                f"on {cores} CPUs)"]
    if kind == "python":
        points = stage.points
        threads = {p.workers: p.wall_ms_per_batch for p in points if not p.multiprocessing}
        procs = {p.workers: p.wall_ms_per_batch for p in points if p.multiprocessing}
        top = max(threads)
        measured = (f"alone it took {threads[1]:.0f} ms per batch with 1 thread worker and "
                    f"{threads[top]:.0f} ms with {top}")
        if procs:
            measured += f", {procs.get(max(procs)):.0f} ms with {max(procs)} worker processes"
        gil = threads[top] > 0.9 * threads[1]  # thread workers barely overlap: the GIL holds
        scale = ("thread workers do not overlap it (the GIL serialises it)" if gil else
                 f"thread workers overlap it ({threads[1] / threads[top]:.1f}x at {top})")
        if procs and max(procs) > 1:
            scale += f", worker processes give {procs[1] / procs[max(procs)]:.1f}x at {max(procs)}"
        return [f"{stage.label} runs Python ({measured}): {scale}",
                "vectorise it (NumPy on whole batches) or write it as a C++ op (mindspore.dataset.vision)"]
    if kind == "waits":
        return [f"{stage.label} waits rather than computes ({pct(stage.busy_per_worker)} of "
                "a core per worker): more workers overlap the waits, but MindSpore caps "
                f"num_parallel_workers at the {cores} CPUs; beyond that, fetch asynchronously or cache"]
    if kind == "computes":
        return [f"{stage.label} computes in C++: a cheaper or fewer transforms, or more cores "
                f"(CPU floor {best.cpu_floor_ms:.0f} ms on {cores} CPUs)"]
    if best.binding == "cpu":
        # the CPUs are full and decoding fills them: a smaller source lowers the floor itself
        decode = ([_decode_remedy(summary, best, prepared)]
                  if prepared and prepared.best.step_ms < 0.95 * best.step_ms else [])
        return decode + [f"nothing {'else ' if decode else ''}in the pipeline's settings: the CPUs are full (pipeline "
                f"{best.pipeline_cpu_ms:.0f} + network {advice.network_cpu_ms:.0f} CPU-ms per "
                f"step on {cores} CPUs = {best.cpu_floor_ms:.0f} ms); cheaper transforms, an "
                "accelerator for the network, or more cores"]
    return [f"nothing in the pipeline: the network's compute ({advice.network_wall_ms:.0f} ms "
            "per step alone) sets the pace; a smaller input or model, an accelerator, or more cores"]
