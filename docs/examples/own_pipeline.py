"""A pipeline of your own, studied as it is (docs/bring-your-own.md): any function that returns
a mindspore.dataset.Dataset of (image, label) batches.

    python scripts/train.py pipeline._target_=own_pipeline.make_dataset \
        +pipeline.args.jitter=0.2 pipeline.workers.map_2=2     # with docs/examples on PYTHONPATH
"""

import mindspore.dataset as ds
import numpy as np
from mindspore.dataset import vision


class Jitter:
    """A per-image Python step: brightness scaled by a random factor in 1 +- `amount`."""

    def __init__(self, amount: float) -> None:
        self.amount = amount

    def __call__(self, image: np.ndarray) -> np.ndarray:
        factor = 1.0 + np.random.uniform(-self.amount, self.amount)
        return np.clip(image.astype(np.float32) * factor, 0, 255).astype(np.uint8)


def make_dataset(root, batch_size, image_size, seed, jitter=0.1, one_map=False):
    """ImageFolder -> decode and resize (C++) -> jitter (Python) -> normalize -> batch; with
    `one_map`, all of them in one map, as ModelZoo's scripts write it (C++ and Python mixed)."""
    data = ds.ImageFolderDataset(root, shuffle=True, decode=False)
    if one_map:
        data = data.map([vision.Decode(), vision.Resize((image_size, image_size)), Jitter(jitter),
                         vision.Rescale(1 / 255, 0), vision.HWC2CHW()], input_columns="image")
        return data.batch(batch_size, drop_remainder=True)
    data = data.map([vision.Decode(), vision.Resize((image_size, image_size))], input_columns="image")
    data = data.map([Jitter(jitter)], input_columns="image")
    data = data.map([vision.Rescale(1 / 255, 0), vision.HWC2CHW()], input_columns="image")
    return data.batch(batch_size, drop_remainder=True)
