"""A whole training of your own, studied as it is (docs/bring-your-own.md): a Python reader
(GeneratorDataset decoding with Pillow), a network, a loss and an optimizer, each a factory.

    python scripts/train.py pipeline._target_=own_training.make_dataset \
        model._target_=own_training.small_cnn loss._target_=own_training.focal_loss \
        optimizer._target_=own_training.nesterov_sgd \
        pipeline.workers.generator_1=2 pipeline.processes.generator_1=false
    # (with docs/examples on PYTHONPATH)
"""

from pathlib import Path

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import nn, ops
from PIL import Image

JPEG = {".jpg", ".jpeg", ".JPG", ".JPEG"}


class PillowReader:
    """Random access to an ImageFolder's (image CHW float32, label int32) rows, decoded with
    Pillow at a reduced DCT scale and resized: Python that holds the GIL part of the time."""

    def __init__(self, root: str, size: int) -> None:
        classes = sorted(p.name for p in Path(root).iterdir() if p.is_dir())
        self.files = [(f, label) for label, name in enumerate(classes)
                      for f in sorted((Path(root) / name).iterdir()) if f.suffix in JPEG]
        self.size = size

    def __getitem__(self, index: int):
        path, label = self.files[index]
        with Image.open(path) as image:
            image.draft("RGB", (2 * self.size, 2 * self.size))
            pixels = np.asarray(image.convert("RGB").resize((self.size, self.size)))
        return (pixels.transpose(2, 0, 1).astype(np.float32) / 255.0,
                np.array(label, np.int32))

    def __len__(self) -> int:
        return len(self.files)


def make_dataset(root, batch_size, image_size, seed, workers=1):
    """GeneratorDataset over the reader (in worker processes by default, as MindSpore's) -> batch."""
    data = ds.GeneratorDataset(PillowReader(root, image_size), ["image", "label"], shuffle=True,
                               num_parallel_workers=workers)
    return data.batch(batch_size, drop_remainder=True)


def small_cnn(num_classes, width=16):
    """Two conv blocks and a linear head: NCHW float32 images -> logits."""
    return nn.SequentialCell(
        nn.Conv2d(3, width, 3, stride=2), nn.ReLU(), nn.Conv2d(width, 2 * width, 3, stride=2),
        nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dense(2 * width, num_classes))


class FocalLoss(nn.Cell):
    """Focal loss on class indices: cross-entropy weighted by (1 - p_true) ** gamma."""

    def __init__(self, gamma: float = 2.0) -> None:
        super().__init__()
        self.gamma = gamma
        self.log_softmax = nn.LogSoftmax(axis=-1)
        self.one_hot = ops.OneHot()
        self.on, self.off = ms.Tensor(1.0, ms.float32), ms.Tensor(0.0, ms.float32)

    def construct(self, logits, labels):  # noqa: D102
        log_p = self.log_softmax(logits)
        rows = self.one_hot(ops.cast(labels, ms.int32), logits.shape[-1], self.on, self.off)
        true = (log_p * rows).sum(-1)
        return (-((1.0 - ops.exp(true)) ** self.gamma) * true).mean()


def focal_loss(gamma=2.0):
    return FocalLoss(gamma)


def nesterov_sgd(params, lr, momentum=0.9, weight_decay=0.0):
    """MindSpore's SGD with Nesterov momentum, one rate per step."""
    return nn.SGD(params, learning_rate=lr, momentum=momentum, nesterov=True,
                  weight_decay=weight_decay)
