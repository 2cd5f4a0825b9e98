"""The network's step, timed in three phases: forward+backward and the optimizer update as two
separately compiled graphs (so host timers see the iteration tail; on a CPU device the fused
graph would interleave ApplyMomentum with backward and hide it)."""

from __future__ import annotations

import math
import time

import mindspore as ms
import numpy as np
from mindspore import nn, ops

from perfstudy.common.config import ConfigError
from perfstudy.common.provenance import cpu_count
from perfstudy.measure.profiling import extra_steps
from perfstudy.run import sweep, verify
from perfstudy.run.factories import build_model
from perfstudy.run.model import create_loss, create_optimizer


class ForwardBackward(nn.Cell):
    """Loss and gradients of one batch: one compiled graph in GRAPH_MODE."""

    def __init__(self, loss_net: nn.Cell, weights) -> None:
        super().__init__(auto_prefix=False)
        self.loss_net = loss_net
        self.weights = weights
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, images, labels):  # noqa: D102 - MindSpore's forward
        return self.loss_net(images, labels), self.grad(self.loss_net, self.weights)(images, labels)


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
        self.net.set_train(True)
        total = (cfg.trainer.steps + extra_steps(cfg.profiler) + cfg.trainer.calibration_steps
                 + verify.total_steps(cfg) + sweep.total_steps(cfg, cpu_count()))
        self.optimizer = create_optimizer(self.net, cfg.optimizer, total)
        loss_net = nn.WithLossCell(self.net, create_loss())
        self._forward_backward = ForwardBackward(loss_net, self.optimizer.parameters)
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


def precompile(step: TrainStep, cfg) -> float:
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
    labels = ms.Tensor(np.full((batch,), step.num_classes - 1, np.int32))
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
    top = int(labels.asnumpy().max()) if hasattr(labels, "asnumpy") else int(np.max(labels))
    if top >= num_classes:
        raise ValueError(f"Step {index} has label {top}, but the model has {num_classes} classes "
                         f"(0..{num_classes - 1}); set model.num_classes to the dataset's class count.")
