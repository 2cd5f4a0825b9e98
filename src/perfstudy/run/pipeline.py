"""The case study's MindSpore input pipeline, with num_parallel_workers as the article used it."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Optional

import mindspore.dataset as ds
import numpy as np
from mindspore.dataset import vision

from perfstudy.common.provenance import cpu_count
from perfstudy.data.dataset import DatasetError
from perfstudy.data.prepare import CROP_RATIO, CROP_SCALE
from perfstudy.run import factories
from perfstudy.run.settings import BUILTIN_PIPELINE, Workers
from perfstudy.run.transforms import load_transform

log = logging.getLogger(__name__)

JPEG_EXTENSIONS = [".jpg", ".jpeg", ".JPG", ".JPEG", ".Jpg", ".Jpeg"]

# ImageNet statistics on the 0..255 scale, as in the article's code.
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


_MINDSPORE_DEFAULT = ds.config.get_num_parallel_workers()


def resolve_workers(requested: Optional[int], global_default: Optional[int],
                    cpus: Optional[int] = None, quiet: bool = False) -> Workers:
    """Clamp the requested map workers to the CPUs (MindSpore raises above that); quiet: no
    warning (the run has said it once)."""
    cpus = cpus or cpu_count()
    asked = requested if requested is not None else (global_default or _MINDSPORE_DEFAULT)
    effective = min(asked, cpus)
    clamped = effective < asked
    if clamped and not quiet:
        log.warning("num_parallel_workers=%d asked for, but this machine has %d CPUs and "
                    "MindSpore refuses more workers than CPUs: using %d.", asked, cpus, effective)
    return Workers(requested, effective, global_default, _MINDSPORE_DEFAULT, cpus, clamped)


def train_transforms(image_size: int) -> list:
    """The article's training transforms."""
    return [
        vision.RandomCropDecodeResize(image_size, scale=CROP_SCALE, ratio=CROP_RATIO),
        vision.RandomHorizontalFlip(prob=0.5),
        vision.Normalize(mean=MEAN, std=STD),
        vision.HWC2CHW(),
    ]


class SlowReader:
    """Random-access source over an ImageFolder that waits `delay_ms` before reading each file
    (a remote or slow file system); labels as ImageFolderDataset gives them (sorted classes)."""

    def __init__(self, root: str, delay_ms: float) -> None:
        classes = sorted(p.name for p in Path(root).iterdir() if p.is_dir())
        self.samples = [(str(f), label) for label, name in enumerate(classes)
                        for f in sorted((Path(root) / name).iterdir())
                        if f.suffix in JPEG_EXTENSIONS]
        self.delay_s = delay_ms / 1e3

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        path, label = self.samples[index]
        time.sleep(self.delay_s)
        return np.fromfile(path, dtype=np.uint8), np.array(label, dtype=np.int32)

    def __len__(self) -> int:
        return len(self.samples)


def _workers_kwarg(value: Optional[int], cpus: int) -> dict:
    """num_parallel_workers for map()/a source: none when null (MindSpore's default)."""
    return {} if value is None else {"num_parallel_workers": min(value, cpus)}


def create_source(root: str, pipe_cfg, cpus: int, num_batches: int = 1) -> ds.Dataset:
    """The reader: MindSpore's ImageFolder one, the slow Python one (reader_delay_ms), or for a
    prepared dataset (root is its .mindrecord file) MindDataset in ImageFolderDataset's order."""
    workers = _workers_kwarg(pipe_cfg.reader_workers, cpus)
    if str(root).endswith(".mindrecord"):
        return _prepared_source(str(root), pipe_cfg, workers, num_batches)
    if pipe_cfg.reader_delay_ms > 0:
        return ds.GeneratorDataset(SlowReader(root, pipe_cfg.reader_delay_ms), ["image", "label"],
                                   shuffle=pipe_cfg.shuffle, python_multiprocessing=False, **workers)
    # Only the JPEGs the manifest lists: a stray README.txt in a class folder is no sample.
    return ds.ImageFolderDataset(root, shuffle=pipe_cfg.shuffle, decode=False,
                                 extensions=JPEG_EXTENSIONS, **workers)


_ORDERS: dict[tuple[int, int], list[list[int]]] = {}


def image_folder_orders(size: int, epochs: int, seed: int | None = None) -> list[list[int]]:
    """The row order ImageFolderDataset(shuffle=True) reads in each epoch under `seed` (default:
    the current one): its RandomSampler run over row numbers. The seed is left as it was.

    It runs a small pipeline of its own, and MindSpore's dataset profiler attaches to the first
    pipeline launched after it starts: a profiled run plans its orders first (plan_orders)."""
    seed = ds.config.get_seed() if seed is None else seed
    cached = _ORDERS.get((size, seed))
    if cached is None or len(cached) < epochs:
        current = ds.config.get_seed()
        ds.config.set_seed(seed)
        rows = ds.NumpySlicesDataset({"row": np.arange(size).reshape(size, 1)},
                                     sampler=ds.RandomSampler())
        iterator = rows.create_tuple_iterator(output_numpy=True, num_epochs=epochs)
        _ORDERS[(size, seed)] = [[int(row[0][0]) for row in iterator] for _ in range(epochs)]
        iterator.stop()
        ds.config.set_seed(current)  # the maps' random operations draw as they would have
    return _ORDERS[(size, seed)][:epochs]


def plan_orders(root: str, pipe_cfg, batches_by_seed: dict[int, int]) -> None:
    """Compute a prepared source's epoch orders for each pipeline the run will launch (seed ->
    batches), before any profiler starts. Nothing to do for other sources."""
    if not str(root).endswith(".mindrecord") or not pipe_cfg.shuffle:
        return
    size = _mindrecord(str(root), shuffle=False).get_dataset_size()
    for seed, batches in batches_by_seed.items():
        image_folder_orders(size, _epochs(size, pipe_cfg.batch_size, batches), seed)


def _epochs(size: int, batch_size: int, num_batches: int) -> int:
    """Epochs of `size` rows that give `num_batches` whole batches (at least one)."""
    return max(1, math.ceil(num_batches / max(size // batch_size, 1)))


def _mindrecord(root: str, **kwargs) -> ds.Dataset:
    try:
        return ds.MindDataset(root, columns_list=["image", "label"], **kwargs)
    except (RuntimeError, ValueError) as exc:
        raise DatasetError(f"The prepared MindRecord {root} cannot be read "
                           f"({str(exc).strip().splitlines()[0][:120]}); delete its folder and "
                           "run again to re-prepare it.") from None


def _prepared_source(root: str, pipe_cfg, workers: dict, num_batches: int) -> ds.Dataset:
    """MindDataset rows in the order ImageFolderDataset reads the source, epoch by epoch.

    MindRecord's own shuffle is another permutation than ImageFolderDataset's, and its subset
    sampler takes each row at most once, so with shuffle on each epoch is its own reader of the
    record (one SubsetSampler per epoch, concatenated), holding whole batches when
    drop_remainder, so batches match the source's."""
    if not pipe_cfg.shuffle:
        return _mindrecord(root, sampler=ds.SequentialSampler(), **workers)
    size = _mindrecord(root, shuffle=False).get_dataset_size()
    per_epoch = size // pipe_cfg.batch_size
    if per_epoch < 1:  # fewer rows than a batch: the caller says so
        return _mindrecord(root, shuffle=False, **workers)
    keep = per_epoch * pipe_cfg.batch_size if pipe_cfg.drop_remainder else size
    parts = [_mindrecord(root, sampler=ds.SubsetSampler(order[:keep]), **workers)
             for order in image_folder_orders(size, _epochs(size, pipe_cfg.batch_size, num_batches))]
    source = parts[0]
    for part in parts[1:]:
        source = source + part
    return source


def batches_ahead(pipe_cfg) -> int:
    """A bound on the batches a running pipeline reads ahead of the step that consumes them.
    The source must outlast a measured window by this much: once it runs dry, the last steps
    run on buffered batches with no pipeline beside them (measured at cpu_demo: 2-3 steps of
    445 ms after 1.6-3 s ones, the window's estimate off by up to 20 %).

    Measured on MindSpore 2.x (a Python source counting the rows pulled, one step taken, then
    idle): at prefetch_size 2, 10-14 batches ahead for batch 4-32 and 26 for batch 1; at 16,
    27-53 for batch 32-4 and 152 for batch 1. Rows queue before the batch operator, batches
    after it; the bound covers both with room (tests/unit/run/test_pipeline.py reads it)."""
    prefetch = pipe_cfg.prefetch_size or ds.config.get_prefetch_size()
    return math.ceil(12 * prefetch / max(int(pipe_cfg.batch_size), 1)) + 4 * prefetch + 8


def create_train_dataset(root: str, pipe_cfg, num_batches: int, seed: int,
                         one_pass: bool = False) -> ds.Dataset:
    """The run's training pipeline: pipeline._target_'s dataset (the case study's by default,
    perfstudy.run.factories has the contract), its operators re-sized by address
    (pipeline.workers / pipeline.processes), repeated to give `num_batches` batches (one_pass:
    not repeated; the caller iterates epochs, as AutoTune needs to act).

    Before the factory runs, the seed, the queue capacity (prefetch_size) and MindSpore's
    process-wide default workers (what a map() without num_parallel_workers gets: 1, the
    article's) are set, for any pipeline.
    """
    cpus = cpu_count()
    ds.config.set_seed(seed)
    if pipe_cfg.prefetch_size is not None:
        ds.config.set_prefetch_size(pipe_cfg.prefetch_size)
    if pipe_cfg.global_default_workers is not None:
        ds.config.set_num_parallel_workers(min(pipe_cfg.global_default_workers, cpus))
    data = factories.build_pipeline(pipe_cfg, root, seed, 1 if one_pass else num_batches)
    data = factories.resize(data, dict(pipe_cfg.workers), dict(pipe_cfg.processes), cpus)
    if one_pass:  # real epochs, iterated by the caller: AutoTune adjusts at each epoch's end
        return data
    return factories.repeat_to(data, num_batches, pipe_cfg._target_)


def case_study(root: str, batch_size: int, image_size: int, seed: int, pipeline,
               num_batches: int) -> ds.Dataset:
    """The case study's pipeline, one pass: source -> the article's map -> [extra map] -> batch
    -> [per-batch map]. A prepared source reads `num_batches` batches' worth of epochs (each in
    the source's order), so it is not repeated after.

    The baseline calls map() WITHOUT num_parallel_workers, exactly as the article's code;
    MindSpore then uses its process-wide default, which this study sets (1, the article's).
    """
    pipe_cfg = pipeline
    del seed  # set by the caller before any factory runs (ds.config), as for any pipeline
    workers = resolve_workers(pipe_cfg.num_parallel_workers, pipe_cfg.global_default_workers,
                              quiet=True)
    data = create_source(root, pipe_cfg, workers.cpu_count, num_batches)
    size = data.get_dataset_size()
    if size // batch_size < 1:
        raise DatasetError(f"The dataset at {root} has {size} images, fewer "
                           f"than one batch of {batch_size}; lower pipeline.batch_size.")
    transforms = train_transforms(image_size)
    if pipe_cfg.decode_map_extra:  # a Python operation inside the article's map (a mixed map)
        transforms = [*transforms, load_transform(pipe_cfg.decode_map_extra,
                                                  dict(pipe_cfg.decode_map_extra_args))]
    if workers.requested is None:
        data = data.map(operations=transforms, input_columns="image")
    else:
        data = data.map(operations=transforms, input_columns="image",
                        num_parallel_workers=workers.effective)
    if pipe_cfg.extra_transform:
        extra = load_transform(pipe_cfg.extra_transform, dict(pipe_cfg.extra_transform_args))
        data = data.map(operations=[extra], input_columns="image",
                        python_multiprocessing=pipe_cfg.extra_transform_multiprocessing,
                        **_workers_kwarg(pipe_cfg.extra_transform_workers, workers.cpu_count))
    data = data.batch(batch_size, drop_remainder=pipe_cfg.drop_remainder)
    if pipe_cfg.batch_transform:
        per_batch = load_transform(pipe_cfg.batch_transform, dict(pipe_cfg.batch_transform_args),
                                   key="pipeline.batch_transform")
        data = data.map(operations=[per_batch], input_columns="image",
                        python_multiprocessing=pipe_cfg.batch_transform_multiprocessing,
                        **_workers_kwarg(pipe_cfg.batch_transform_workers, workers.cpu_count))
    return data


def _operation_name(op: dict | None) -> str:
    if not op:  # MindSpore serialises a map in worker processes without its operations
        return "?"
    return str(op.get("tensor_op_name") or op.get("python_module") or op.get("op_type") or "?")


def _is_python(node: dict) -> bool:
    return node.get("op_type") == "GeneratorDataset" or any(
        "py_transforms" in str((op or {}).get("python_module", ""))
        for op in node.get("operations", []))


BUILTIN = BUILTIN_PIPELINE  # this module's case_study: its config keys are aliases


def describe(dataset: ds.Dataset, pipe_cfg=None) -> list[dict]:
    """The pipeline's operators, consumer first (the order MindData numbers them in: op_id).

    Each: op_id, op_type (Map, Batch, ImageFolderDataset, ...), its address (perfstudy.run.
    factories: map_2 ...), num_parallel_workers, the transforms of a map, the queue capacity,
    whether it runs Python code, and (given the pipeline config) the config key that sets its
    workers, whether it is a per-batch map and whether it runs in processes. The case study's
    own pipeline names its operators by its config keys (pipeline.num_parallel_workers ...),
    any other by address (pipeline.workers.map_2). The dataset profiler only says "MapOp";
    this lets the diagnosis name the map a user would recognise and the setting that sizes it.
    """
    nodes = []

    def walk(node: dict) -> None:
        nodes.append({
            "op_id": len(nodes),
            "op_type": node.get("op_type", "?"),
            "num_parallel_workers": node.get("num_parallel_workers"),
            "operations": [_operation_name(op) for op in node.get("operations", [])],
            "connector_queue_size": node.get("connector_queue_size"),
            "python": _is_python(node),
        })
        for child in node.get("children", []):
            walk(child)

    walk(ds.serialize(dataset))
    built = factories.walk(dataset)
    if len(built) == len(nodes):  # the serialised tree mirrors the built one, node for node
        for node, address in zip(nodes, factories.addresses([n["op_type"] for n in nodes]),
                                 strict=True):
            node["address"] = address
    if pipe_cfg is None:
        return nodes
    if pipe_cfg._target_ == BUILTIN:
        _annotate(nodes, pipe_cfg)
    elif len(built) == len(nodes):
        _annotate_addresses(nodes, built)
    return nodes


def _annotate_addresses(nodes: list[dict], built: list[ds.Dataset]) -> None:
    """Any pipeline's sized operators (maps, sources) keyed by address: pipeline.workers.<address>."""
    for node, op in zip(nodes, built, strict=True):
        if not factories.sizable(op):
            continue
        per_batch = isinstance(op, ds.MapDataset) and any(
            isinstance(below, ds.BatchDataset) for below in factories.walk(op)[1:])
        node.update(config_key=f"pipeline.workers.{node['address']}", per_batch=per_batch,
                    multiprocessing=bool(getattr(op, "python_multiprocessing", False)))
        if isinstance(op, ds.MapDataset) and node["operations"] in ([], ["?"]):
            # MindSpore serialises a map in worker processes without its (Python) operations
            node.update(operations=[type(o).__name__ for o in op.operations], python=True)


def _own_map(node: dict, spec: str, key: str, processes: bool, per_batch: bool) -> None:
    """A map of the user's transform: its key, processes, and its name when MindSpore's
    serialisation lost it (maps in worker processes)."""
    node.update(config_key=key, per_batch=per_batch, multiprocessing=bool(processes))
    if node["operations"] in ([], ["?"]):
        node.update(operations=[spec.rpartition(":")[2]], python=True)


def _annotate(nodes: list[dict], pipe_cfg) -> None:
    """Give each sized operator its config key (consumer first: [per-batch map], Batch,
    [extra map], the article's map, the source)."""
    seen_batch = seen_source = False
    maps_below_batch = []
    for node in nodes:
        kind = node["op_type"]
        if kind == "Batch":
            seen_batch = True
        elif kind == "Map" and not seen_batch and pipe_cfg.batch_transform:
            _own_map(node, pipe_cfg.batch_transform, "pipeline.batch_transform_workers",
                     pipe_cfg.batch_transform_multiprocessing, per_batch=True)
        elif kind == "Map" and seen_batch:
            maps_below_batch.append(node)
        elif kind in ("ImageFolderDataset", "GeneratorDataset", "MindDataDataset") and not seen_source:
            # a prepared source reads each epoch with its own MindDataset: the first one stands
            # for them all (the others are idle until their epoch)
            seen_source = True
            node.update(config_key="pipeline.reader_workers", per_batch=False, multiprocessing=False)
    if pipe_cfg.extra_transform and maps_below_batch:
        _own_map(maps_below_batch.pop(0), pipe_cfg.extra_transform,
                 "pipeline.extra_transform_workers", pipe_cfg.extra_transform_multiprocessing,
                 per_batch=False)
    if maps_below_batch:
        maps_below_batch[0].update(config_key="pipeline.num_parallel_workers", per_batch=False,
                                   multiprocessing=False)
