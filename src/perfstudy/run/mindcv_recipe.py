"""mindcv's ImageNet training recipe as a pipeline factory: its own create_dataset,
create_transforms and create_loader, called as mindcv's train.py calls them, unmodified. With
mixup or cutmix (mindcv's --mixup/--cutmix/--cutmix_prob), create_loader appends its per-batch
Mixup map (Python, after batch): the labels become mixed one-hot rows, which mindcv's own loss
(mindcv.loss.create_loss, loss._target_) reads, with its label smoothing.

What the adapter does besides calling them (MindSpore 2.10, mindcv 0.3.0):
* the recipe's worker count (mindcv's train.py default, 8) is clamped to the CPUs the run has:
  MindSpore 2.10 refuses a map with more workers than CPUs, where mindcv's recipe assumes an
  Ascend server's;
* mindcv's train.py downloads nothing here: create_dataset reads the study's ImageFolder
  (name "" = a customized folder, split "" = the root itself);
* the class count mindcv's train.py takes from its dataset (for the Mixup map) is the folder's.
The operators are re-sized by the study on the built tree, by address (map_2: the image map,
map_3: the per-batch Mixup map), never by changing these arguments in mindcv's code.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import mindspore.dataset as ds

from perfstudy.common.provenance import cpu_count

log = logging.getLogger(__name__)

RECIPE_WORKERS = 8  # mindcv's train.py default (--num_parallel_workers)


def imagenet_recipe(root: str, batch_size: int, image_size: int, seed: int,
                    auto_augment: Optional[str] = "randaug-m9-n2-mstd0.5",
                    num_parallel_workers: int = RECIPE_WORKERS,
                    python_multiprocessing: bool = False, interpolation: str = "bilinear",
                    hflip: float = 0.5, re_prob: float = 0.0,
                    scale: tuple = (0.08, 1.0), ratio: tuple = (0.75, 1.333),
                    mixup: float = 0.0, cutmix: float = 0.0,
                    cutmix_prob: float = 0.0) -> ds.Dataset:
    """mindcv's training loader over the ImageFolder at `root`: (image, label) batches of
    (batch_size, 3, image_size, image_size) float32 images and int32 labels (float32 rows of the
    classes with mixup or cutmix), one epoch."""
    from mindcv.data import create_dataset, create_loader, create_transforms

    del seed  # the study sets mindspore.dataset's seed before any factory runs
    cpus = cpu_count()
    workers = min(int(num_parallel_workers), cpus)
    if workers < num_parallel_workers:
        log.info("mindcv recipe: num_parallel_workers %d clamped to the %d CPUs (MindSpore 2.10 "
                 "refuses more)", num_parallel_workers, cpus)
    dataset = create_dataset(name="", root=root, split="", shuffle=True,
                             num_parallel_workers=workers)
    transforms = create_transforms("imagenet", image_resize=image_size, is_training=True,
                                   auto_augment=auto_augment, interpolation=interpolation,
                                   hflip=hflip, re_prob=re_prob, scale=tuple(scale),
                                   ratio=tuple(ratio))
    num_classes = len([p for p in Path(root).iterdir() if p.is_dir()])
    return create_loader(dataset, batch_size=batch_size, drop_remainder=True, is_training=True,
                         transform=transforms, num_parallel_workers=workers,
                         python_multiprocessing=python_multiprocessing, num_classes=num_classes,
                         mixup=mixup, cutmix=cutmix, cutmix_prob=cutmix_prob)
