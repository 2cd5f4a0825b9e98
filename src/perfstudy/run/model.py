"""ResNet50 (bottleneck v1.5, as MindSpore ModelZoo's), the study's loss and optimizer factories
(the defaults of loss._target_ and optimizer._target_) and the lr schedule."""

from __future__ import annotations

import math

import mindspore as ms
from mindspore import nn, ops

LAYER_BLOCKS = (3, 4, 6, 3)
LAYER_WIDTHS = (256, 512, 1024, 2048)  # output channels of each stage (bottleneck x4)
LAYER_STRIDES = (1, 2, 2, 2)
EXPANSION = 4


def _conv(in_ch: int, out_ch: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_ch, out_ch, kernel_size=kernel, stride=stride, pad_mode="pad",
                     padding=kernel // 2, has_bias=False, weight_init="HeNormal")


def _bn(channels: int, last_in_block: bool = False) -> nn.BatchNorm2d:
    # The last BN of a residual branch starts at gamma=0 (ModelZoo's _bn_last), so each
    # block starts as identity: this keeps a fresh ResNet50 stable at batch 32.
    return nn.BatchNorm2d(channels, momentum=0.9, eps=1e-5,
                          gamma_init="zeros" if last_in_block else "ones")


class Bottleneck(nn.Cell):
    """1x1 -> 3x3 (carries the stride: v1.5) -> 1x1, with a projection shortcut if needed."""

    def __init__(self, in_ch: int, out_ch: int, stride: int) -> None:
        super().__init__()
        mid = out_ch // EXPANSION
        self.branch = nn.SequentialCell(
            _conv(in_ch, mid, 1), _bn(mid), nn.ReLU(),
            _conv(mid, mid, 3, stride), _bn(mid), nn.ReLU(),
            _conv(mid, out_ch, 1), _bn(out_ch, last_in_block=True),
        )
        self.project = stride != 1 or in_ch != out_ch
        self.shortcut = (nn.SequentialCell(_conv(in_ch, out_ch, 1, stride), _bn(out_ch))
                         if self.project else nn.Identity())
        self.relu = nn.ReLU()

    def construct(self, x):  # noqa: D102 - MindSpore's forward
        return self.relu(self.branch(x) + self.shortcut(x))


class ResNet50(nn.Cell):
    """ResNet50 for `num_classes` classes; input NCHW float32."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.SequentialCell(
            _conv(3, 64, 7, 2), _bn(64), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same"))
        stages = []
        in_ch = 64
        for blocks, width, stride in zip(LAYER_BLOCKS, LAYER_WIDTHS, LAYER_STRIDES, strict=True):
            for index in range(blocks):
                stages.append(Bottleneck(in_ch, width, stride if index == 0 else 1))
                in_ch = width
        self.stages = nn.SequentialCell(stages)
        self.mean = ops.ReduceMean(keep_dims=False)
        self.head = nn.Dense(in_ch, num_classes, weight_init="Normal", bias_init="zeros")

    def construct(self, x):  # noqa: D102 - MindSpore's forward
        x = self.stages(self.stem(x))
        return self.head(self.mean(x, (2, 3)))


class TinyConvNet(nn.Cell):
    """Two strided 3x3 convolutions and a dense head (about 5,000 weights): a network that
    compiles and steps in a fraction of ResNet50's time, for checking a study's wiring (a
    pipeline, a tracking store, a cluster) rather than measuring it (`model=tiny_cnn`)."""

    def __init__(self, num_classes: int = 1000, width: int = 16) -> None:
        super().__init__()
        self.body = nn.SequentialCell(
            _conv(3, width, 3, 2), _bn(width), nn.ReLU(),
            _conv(width, 2 * width, 3, 2), _bn(2 * width), nn.ReLU())
        self.mean = ops.ReduceMean(keep_dims=False)
        self.head = nn.Dense(2 * width, num_classes, weight_init="Normal", bias_init="zeros")

    def construct(self, x):  # noqa: D102 - MindSpore's forward
        return self.head(self.mean(self.body(x), (2, 3)))


def count_trainable_parameters(net: nn.Cell) -> int:
    """Number of trainable scalars (25,557,032 for ResNet50 at 1000 classes)."""
    return sum(int(math.prod(p.shape)) for p in net.trainable_params())


def learning_rates(schedule: str, base_lr: float, steps: int, warmup_steps: int = 0,
                   step_gamma: float = 0.1, step_every: int = 10) -> list[float]:
    """Per-step learning rates: linear warm-up, then constant, cosine or step decay."""
    rates = []
    for step in range(steps):
        if step < warmup_steps:
            rates.append(base_lr * (step + 1) / warmup_steps)
            continue
        progress = (step - warmup_steps) / max(1, steps - warmup_steps)
        if schedule == "constant":
            rates.append(base_lr)
        elif schedule == "cosine":
            rates.append(0.5 * base_lr * (1.0 + math.cos(math.pi * progress)))
        elif schedule == "step":
            rates.append(base_lr * step_gamma ** ((step - warmup_steps) // step_every))
        else:
            raise ValueError(f"Unknown lr schedule {schedule!r}; use constant, cosine or step.")
    return rates


def momentum_sgd(params, lr, momentum: float = 0.9, weight_decay: float = 1e-4,
                 nesterov: bool = False) -> nn.Optimizer:
    """The study's optimizer: Momentum SGD, weight decay on conv/dense weights only (not BN, not
    biases); `lr` one rate per step (the study's schedule)."""
    params = list(params)
    decayed = [p for p in params if p.name.endswith("weight") and p.ndim > 1]
    others = [p for p in params if not (p.name.endswith("weight") and p.ndim > 1)]
    groups = [{"params": decayed, "weight_decay": weight_decay},
              {"params": others, "weight_decay": 0.0}]
    return nn.Momentum(groups, learning_rate=ms.Tensor(list(lr), ms.float32),
                       momentum=momentum, use_nesterov=nesterov)


def create_loss() -> nn.Cell:
    """Softmax cross-entropy on integer labels, averaged over the batch."""
    return nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
