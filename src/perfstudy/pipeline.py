"""The case study's MindSpore input pipeline, with num_parallel_workers as the article used it."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import mindspore.dataset as ds
from mindspore.dataset import vision

from perfstudy.provenance import cpu_count
from perfstudy.transforms import load_transform

log = logging.getLogger(__name__)

JPEG_EXTENSIONS = [".jpg", ".jpeg", ".JPG", ".JPEG", ".Jpg", ".Jpeg"]

# ImageNet statistics on the 0..255 scale, as in the article's code.
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@dataclass(frozen=True)
class Workers:
    """Map workers asked for vs used.

    requested None means map() is called without num_parallel_workers; then MindSpore's
    process-wide default applies (`global_default`, what this study sets it to) instead of
    what MindSpore itself would choose on this machine (`mindspore_default`).
    """

    requested: Optional[int]
    effective: int
    global_default: Optional[int]
    mindspore_default: int
    cpu_count: int
    clamped: bool

    def as_dict(self) -> dict:
        """JSON-ready form for summary.json and MLflow."""
        return {"requested": self.requested, "effective": self.effective,
                "global_default": self.global_default,
                "mindspore_default": self.mindspore_default,
                "cpu_count": self.cpu_count, "clamped": self.clamped}


_MINDSPORE_DEFAULT = ds.config.get_num_parallel_workers()


def resolve_workers(requested: Optional[int], global_default: Optional[int],
                    cpus: Optional[int] = None) -> Workers:
    """Clamp the requested map workers to the CPUs (MindSpore raises above that)."""
    cpus = cpus or cpu_count()
    asked = requested if requested is not None else (global_default or _MINDSPORE_DEFAULT)
    effective = min(asked, cpus)
    clamped = effective < asked
    if clamped:
        log.warning("num_parallel_workers=%d asked for, but this machine has %d CPUs and "
                    "MindSpore refuses more workers than CPUs: using %d.", asked, cpus, effective)
    return Workers(requested, effective, global_default, _MINDSPORE_DEFAULT, cpus, clamped)


def train_transforms(image_size: int) -> list:
    """The article's training transforms."""
    return [
        vision.RandomCropDecodeResize(image_size, scale=(0.08, 1.0), ratio=(0.75, 1.333)),
        vision.RandomHorizontalFlip(prob=0.5),
        vision.Normalize(mean=MEAN, std=STD),
        vision.HWC2CHW(),
    ]


def eval_transforms(image_size: int) -> list:
    """The article's evaluation transforms (Resize(256) scaled with the input size)."""
    resize = max(image_size, round(image_size * 256 / 224))
    return [vision.Decode(), vision.Resize(resize), vision.CenterCrop(image_size),
            vision.Normalize(mean=MEAN, std=STD), vision.HWC2CHW()]


def create_train_dataset(root: str, pipe_cfg, num_batches: int, seed: int,
                         workers: Workers, one_pass: bool = False) -> ds.Dataset:
    """ImageFolder -> the article's map -> batch, repeated to give `num_batches` batches
    (one_pass: not repeated; the caller iterates epochs, as AutoTune needs to act).

    The baseline calls map() WITHOUT num_parallel_workers, exactly as the article's code;
    MindSpore then uses its process-wide default, which this study sets (1, the article's).
    """
    ds.config.set_seed(seed)
    if pipe_cfg.prefetch_size is not None:
        ds.config.set_prefetch_size(pipe_cfg.prefetch_size)
    if pipe_cfg.global_default_workers is not None:
        ds.config.set_num_parallel_workers(min(pipe_cfg.global_default_workers, workers.cpu_count))
    # Only the JPEGs the manifest lists: a stray README.txt in a class folder is no sample.
    data = ds.ImageFolderDataset(root, shuffle=pipe_cfg.shuffle, decode=False,
                                 extensions=JPEG_EXTENSIONS)
    per_epoch = data.get_dataset_size() // pipe_cfg.batch_size
    if per_epoch < 1:
        raise ValueError(f"The dataset at {root} has {data.get_dataset_size()} images, fewer than "
                         f"one batch of {pipe_cfg.batch_size}; lower pipeline.batch_size.")
    transforms = train_transforms(pipe_cfg.image_size)
    if workers.requested is None:
        data = data.map(operations=transforms, input_columns="image")
    else:
        data = data.map(operations=transforms, input_columns="image",
                        num_parallel_workers=workers.effective)
    if pipe_cfg.extra_transform:
        extra = load_transform(pipe_cfg.extra_transform, dict(pipe_cfg.extra_transform_args))
        extra_workers = pipe_cfg.extra_transform_workers
        kwargs = {} if extra_workers is None else {
            "num_parallel_workers": min(extra_workers, workers.cpu_count)}
        data = data.map(operations=[extra], input_columns="image", **kwargs)
    data = data.batch(pipe_cfg.batch_size, drop_remainder=pipe_cfg.drop_remainder)
    if one_pass:  # real epochs, iterated by the caller: AutoTune adjusts at each epoch's end
        return data
    return data.repeat(math.ceil(num_batches / per_epoch))


def _operation_name(op: dict) -> str:
    return str(op.get("tensor_op_name") or op.get("python_module") or op.get("op_type") or "?")


def describe(dataset: ds.Dataset) -> list[dict]:
    """The pipeline's operators, consumer first (the order MindData numbers them in).

    Each: op_type (Map, Batch, ImageFolderDataset, ...), num_parallel_workers, the
    transforms of a map, and the queue capacity. The dataset profiler only says "MapOp";
    this lets the diagnosis name the map a user would recognise.
    """
    nodes = []

    def walk(node: dict) -> None:
        nodes.append({
            "op_type": node.get("op_type", "?"),
            "num_parallel_workers": node.get("num_parallel_workers"),
            "operations": [_operation_name(op) for op in node.get("operations", [])],
            "connector_queue_size": node.get("connector_queue_size"),
        })
        for child in node.get("children", []):
            walk(child)

    walk(ds.serialize(dataset))
    return nodes
