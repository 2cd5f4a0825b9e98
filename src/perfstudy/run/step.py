"""The network's step, timed in three phases: forward+backward and the optimizer update as two
separately compiled graphs (so host timers see the iteration tail; on a CPU device the fused
graph would interleave ApplyMomentum with backward and hide it)."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from perfstudy.common.config import ConfigError
from perfstudy.common.provenance import cpu_count
from perfstudy.measure.profiling import extra_steps
from perfstudy.run import factories, pipeline, sweep, verify
from perfstudy.run.factories import build_loss, build_model, build_optimizer
from perfstudy.run.model import learning_rates

log = logging.getLogger(__name__)

_unscale = ops.MultitypeFuncGraph("unscale")


@_unscale.register("Tensor", "Tensor")
def _unscale_grad(inverse, grad):
    return grad * ops.cast(inverse, grad.dtype)


class ForwardBackward(nn.Cell):
    """Loss and gradients of one batch: one compiled graph in GRAPH_MODE. With a static loss
    scale the gradients are of the scaled loss, divided by the scale inside the graph."""

    def __init__(self, loss_net: nn.Cell, weights, loss_scale: float = 1.0) -> None:
        super().__init__(auto_prefix=False)
        self.loss_net = loss_net
        self.weights = weights
        self.scaled = float(loss_scale) != 1.0
        self.grad = ops.GradOperation(get_by_list=True, sens_param=self.scaled)
        self.scale = ms.Tensor(float(loss_scale), ms.float32)
        self.inverse = ms.Tensor(1.0 / float(loss_scale), ms.float32)
        self.hyper_map = ops.HyperMap()

    def construct(self, images, labels):  # noqa: D102 - MindSpore's forward
        loss = self.loss_net(images, labels)
        if self.scaled:
            sens = ops.ones_like(loss) * ops.cast(self.scale, loss.dtype)
            grads = self.grad(self.loss_net, self.weights)(images, labels, sens)
            return loss, self.hyper_map(ops.partial(_unscale, self.inverse), grads)
        return loss, self.grad(self.loss_net, self.weights)(images, labels)


class Update(nn.Cell):
    """The optimizer step (the iteration tail): a second compiled graph."""

    def __init__(self, optimizer: nn.Optimizer) -> None:
        super().__init__(auto_prefix=False)
        self.optimizer = optimizer

    def construct(self, grads):  # noqa: D102 - MindSpore's forward
        return self.optimizer(grads)


class TrainStep:
    """forward+backward and the optimizer update as two separately timed graphs.

    The two graphs cost what the fused TrainOneStepCell costs (docs/lab-notes.md#two-graphs).
    """

    def __init__(self, cfg, num_classes: int | None = None) -> None:
        self.num_classes = num_classes or cfg.model.num_classes
        self.net = build_model(cfg.model, self.num_classes)
        self.head_outputs = head_outputs(self.net)
        self.labels: LabelForm | None = None  # asked of the pipeline when a map changes them
        warn_wide_head(self.head_outputs, self.num_classes, cfg.model._target_)
        self.net.set_train(True)
        if cfg.trainer.amp_level != "O0":  # O1 writes the network it rewrites to the cwd
            Path(cfg.paths.run_dir).mkdir(parents=True, exist_ok=True)
            with contextlib.chdir(cfg.paths.run_dir):
                self.net = ms.amp.auto_mixed_precision(self.net, str(cfg.trainer.amp_level))
        total = (cfg.trainer.steps + extra_steps(cfg.profiler) + cfg.trainer.calibration_steps
                 + verify.total_steps(cfg) + sweep.total_steps(cfg, cpu_count()))
        opt = cfg.optimizer
        rates = learning_rates(opt.schedule, opt.lr, total, opt.warmup_steps, opt.step_gamma,
                               opt.step_every)
        self.optimizer = build_optimizer(opt, self.net.trainable_params(), rates)
        loss_net = nn.WithLossCell(self.net, build_loss(cfg.loss))
        self._forward_backward = ForwardBackward(loss_net, self.optimizer.parameters,
                                                 cfg.trainer.loss_scale)
        self._update = Update(self.optimizer)

    def forward_backward(self, images, labels):
        """Loss and gradients of one batch."""
        return self._forward_backward(images, labels)

    def update(self, grads):
        """Apply the gradients (mutable: one compiled graph for every step's values)."""
        return self._update(ms.mutable(grads))


def _wait(outputs) -> None:
    """Block until the optimizer's outputs exist (asnumpy() syncs on every device)."""
    for item in outputs if isinstance(outputs, (tuple, list)) else (outputs,):
        if hasattr(item, "asnumpy"):
            item.asnumpy()


def timed_step(step: TrainStep, images, labels) -> tuple[float, float, float]:
    """Run one step on a batch in hand; returns (loss, fwd_bwd_end_s, end_s)."""
    loss, grads = step.forward_backward(images, labels)
    loss_value = float(loss.asnumpy())  # asnumpy() waits for the graph: a sync point
    fwd_bwd_end = time.time()
    _wait(step.update(grads))
    return loss_value, fwd_bwd_end, time.time()


@dataclass(frozen=True)
class LabelForm:
    """The labels of one batch as the pipeline gives them: class indices (batch,) of an integer
    type, or rows (batch, classes) of a float type (one-hot, smoothed or mixed by a map)."""

    shape: tuple[int, ...]
    dtype: str  # numpy's name, e.g. int32, float32

    @classmethod
    def indices(cls, batch: int) -> LabelForm:
        return cls((batch,), "int32")

    def describe(self) -> str:
        """E.g. "rows (32, 4) float32"."""
        return f"{'rows' if self.rows else 'indices'} ({', '.join(map(str, self.shape))}) {self.dtype}"

    @property
    def rows(self) -> bool:
        return len(self.shape) == 2

    def synthetic(self, top_class: int) -> ms.Tensor:
        """A batch of labels of this form, all of class `top_class`."""
        if self.rows:
            values = np.zeros(self.shape, self.dtype)
            values[:, min(top_class, self.shape[1] - 1)] = 1
            return ms.Tensor(values)
        return ms.Tensor(np.full(self.shape, top_class, self.dtype))


def head_outputs(net: nn.Cell) -> int | None:
    """The output count of the network's last Dense layer (its head), if it has one."""
    last = None
    for _, cell in net.cells_and_names():
        if isinstance(cell, nn.Dense):
            last = cell
    return int(last.out_channels) if last is not None else None


def warn_wide_head(outputs: int | None, num_classes: int, target: str) -> float:
    """One warning when the head has more outputs than the data has classes; returns the share
    of the head's outputs (and its compute) spent on classes no label has."""
    if not outputs or outputs <= num_classes:
        return 0.0
    wasted = 1.0 - num_classes / outputs
    log.warning("model._target_ %s has %d outputs for the data's %d classes: %.1f %% of its last "
                "layer's compute is spent on classes no label has; build the network with the "
                "num_classes the study passes it.", target, outputs, num_classes, 100 * wasted)
    return wasted


def precompile(step: TrainStep, cfg, labels_form: LabelForm | None = None) -> float:
    """Compile both graphs on a synthetic batch before the pipeline starts; return seconds.

    Without this, the pipeline fills its queues during the compile (as the article saw)
    and the first steps after it look compute-bound. Weights, BN statistics, momenta and
    the optimizer's step counter are restored afterwards, so training starts from the
    same state as without it.
    """
    state = [(p, p.asnumpy().copy()) for p in (*step.net.get_parameters(),
                                               *step.optimizer.get_parameters())]
    size, batch = cfg.pipeline.image_size, cfg.pipeline.batch_size
    images = ms.Tensor(np.zeros((batch, 3, size, size), np.float32))
    # the top class: a network with fewer outputs than the data's classes fails here, not later
    labels = (labels_form or LabelForm.indices(batch)).synthetic(step.num_classes - 1)
    started = time.perf_counter()
    try:
        loss = timed_step(step, images, labels)[0]
    except RuntimeError as exc:
        if "label" not in str(exc).lower():
            raise
        loss = math.inf
    seconds = time.perf_counter() - started
    if not np.isfinite(loss):
        raise ConfigError(f"model._target_ {cfg.model._target_} gives fewer outputs than the "
                          f"data's {step.num_classes} classes (its loss on class "
                          f"{step.num_classes - 1} is not finite); build the network with the "
                          "num_classes the study passes it.")
    for param, value in state:
        param.set_data(ms.Tensor(value, dtype=param.dtype))
    return seconds


def check_labels(labels, num_classes: int, index: int) -> None:
    """Stop before a step that would train on labels the model has no output for."""
    if len(labels.shape) == 2:  # rows of class probabilities (one-hot, smoothed or mixed)
        if labels.shape[1] != num_classes:
            raise ValueError(f"Step {index} has label rows of {labels.shape[1]} classes, but the "
                             f"model has {num_classes} outputs; give the pipeline's one-hot or "
                             "mixup map the data's class count.")
        return
    top = int(labels.asnumpy().max()) if hasattr(labels, "asnumpy") else int(np.max(labels))
    if top >= num_classes:
        raise ValueError(f"Step {index} has label {top}, but the model has {num_classes} classes "
                         f"(0..{num_classes - 1}); set model.num_classes to the dataset's class count.")


def labels_of(cfg, source: str, seed: int) -> LabelForm | None:
    """The labels' form when a map of the pipeline changes them (a one-hot or mixup map): asked
    of a pipeline of its own, one batch; None: class indices."""
    built = pipeline.create_train_dataset(source, cfg.pipeline, 1, seed, one_pass=True)
    started = time.perf_counter()
    found = factories.label_form(built)
    if found is None:
        return None
    log.info("labels changed by %s: (%s) %s per batch (asked of one batch in %.1f s)",
             ", ".join(factories.label_changers(built)), ", ".join(map(str, found[0])), found[1],
             time.perf_counter() - started)
    return LabelForm(*found)


def compile_graphs(train_step: TrainStep, cfg, source: str, seed: int) -> float | None:
    """Compile both graphs on a synthetic batch of the pipeline's label form (`seed`: the seed
    of the pipeline that is asked it) before the pipeline starts (seconds; None when
    trainer.compile_first is off)."""
    train_step.labels = labels_of(cfg, source, seed)
    if not cfg.trainer.compile_first:
        return None
    seconds = precompile(train_step, cfg, train_step.labels)
    log.info("graphs compiled on a synthetic batch in %.1f s, before the pipeline starts", seconds)
    return seconds
