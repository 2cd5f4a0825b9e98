"""The training's model and input pipeline, built by factories named with Hydra's `_target_`
convention, and the addresses of a built pipeline's operators.

Contract (docs/bring-your-own.md):
* model: `_target_(num_classes=<the data's>, **model.args)` -> a mindspore.nn.Cell mapping NCHW
  float32 images to logits;
* loss: `_target_(**loss.args)` -> a mindspore.nn.Cell of (logits, labels) -> scalar;
* optimizer: `_target_(params, lr=<one rate per step>, **optimizer.args)` -> mindspore.nn.Optimizer
  (`learning_rate=` for a factory that names it so, as MindSpore's own optimizers do);
* pipeline: `_target_(root=, batch_size=, image_size=, seed=, **pipeline.args)` -> a
  mindspore.dataset.Dataset whose rows are (image, label) batches: one epoch or more. A factory
  that names `pipeline` or `num_batches` among its parameters also gets the pipeline config and
  the batches the run needs (the case study's own factory uses both).
The study repeats a pipeline's epochs to the batches it needs, and re-sizes its operators on the
built tree (pipeline.workers / pipeline.processes, by address) before any iterator exists: the
user's code is never edited.

An operator's address is its type and its rank among the operators of that type counted from
the source, e.g. `map_2` (the second map() applied) or `imagefolder_1`: it does not move when
the study puts a repeat on top, and reads like the code that built it. profile/pipeline.json
lists each with MindData's op id (the profile's `Map #1`) and its operations.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import math
from typing import Any

import hydra.utils
import mindspore.dataset as ds
import numpy as np
from hydra.errors import InstantiationException
from mindspore import nn

from perfstudy.common.config import ConfigError

log = logging.getLogger(__name__)


def _reason(exc: BaseException) -> str:
    """The first line of what went wrong, without Hydra's wrapping."""
    while isinstance(exc, InstantiationException) and exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1].strip() if text else ''}".rstrip(": ")


def _locate(path: str) -> Any:
    """The object at a dotted path: the longest importable module prefix, then attributes
    (an error raised inside the user's module is raised as it is)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
                if cut == 1:
                    raise
                continue  # this prefix is no module: try a shorter one
            raise
        for name in parts[cut:]:
            found = getattr(found, name)  # AttributeError: the module has no such name
        return found
    raise ImportError(path)


def load_target(key: str, target: str) -> Any:
    """The callable a `_target_` names, or one sentence on why it does not import."""
    if not target or "." not in target:
        raise ConfigError(f"{key}._target_ is {target!r}; give the dotted path of a function or "
                          "class, e.g. mindcv.models.create_model.")
    try:
        found = _locate(target)
    except Exception as exc:  # noqa: BLE001 - any import failure of the user's code is reported
        raise ConfigError(f"{key}._target_ {target} does not import ({_reason(exc)}); check the "
                          "dotted path, and that its package is installed in .venv.") from None
    if not callable(found):
        raise ConfigError(f"{key}._target_ {target} is a {type(found).__name__}, not a function "
                          "or class; name the factory itself.")
    return found


def _failed(key: str, target: str, factory: Any, exc: BaseException) -> ConfigError:
    """One sentence for a factory call that raised: a wrong argument name, or its own error."""
    reason = _reason(exc)
    if "unexpected keyword argument" in reason and reason.count("'") >= 2:
        name = reason.rsplit("'", 2)[-2]
        try:
            params = ", ".join(inspect.signature(factory).parameters)
        except (TypeError, ValueError):
            params = "?"
        return ConfigError(f"{target} takes no argument {name!r} (its parameters: {params}); "
                           f"fix {key}.args.{name}.")
    return ConfigError(f"{key}._target_ {target} failed when called ({reason}); check "
                       f"{key}.args and the factory's code.")


def instantiate(key: str, target: str, args: dict[str, Any], given: dict[str, Any],
                config: dict[str, Any] | None = None, positional: tuple = ()) -> Any:
    """hydra.utils.instantiate of `target` with the study's arguments and the user's `args`
    (config: keyword arguments passed as they are, not converted by Hydra, e.g. a DictConfig;
    positional: the leading positional ones, e.g. an optimizer's parameters)."""
    factory = load_target(key, target)
    clash = sorted(set(args) & (set(given) | set(config or {})))
    if clash:
        raise ConfigError(f"{key}.args sets {', '.join(clash)}, which the study passes itself; "
                          f"remove it from {key}.args (set it with the study's own key instead).")
    try:
        call = hydra.utils.instantiate({"_target_": target, "_partial_": True, **args}, **given,
                                       _convert_="all")
        return call(*positional, **(config or {}))
    except ConfigError:
        raise
    except ValueError as exc:  # the study's own data errors (DatasetError) pass as they are
        if type(exc).__module__.startswith("perfstudy"):
            raise
        raise _failed(key, target, factory, exc) from None
    except Exception as exc:  # noqa: BLE001 - the user's code: one sentence
        raise _failed(key, target, factory, exc) from None


def build_model(model_cfg, num_classes: int) -> nn.Cell:
    """The network, from model._target_ (called with num_classes and model.args)."""
    args = dict(model_cfg.args)
    if "num_classes" in args and int(args["num_classes"]) != num_classes:
        raise ConfigError(f"model.args.num_classes is {args['num_classes']} but the data has "
                          f"{num_classes} classes; remove it (the study passes the class count).")
    args.pop("num_classes", None)
    net = instantiate("model", model_cfg._target_, args, {"num_classes": num_classes})
    if not isinstance(net, nn.Cell):
        raise ConfigError(f"model._target_ {model_cfg._target_} returned a {type(net).__name__}, "
                          "not a mindspore.nn.Cell; return the network itself.")
    return net


def build_loss(loss_cfg) -> nn.Cell:
    """The loss, from loss._target_ (called with loss.args): a Cell of (logits, labels)."""
    loss = instantiate("loss", loss_cfg._target_, dict(loss_cfg.args), {})
    if not isinstance(loss, nn.Cell):
        raise ConfigError(f"loss._target_ {loss_cfg._target_} returned a {type(loss).__name__}, "
                          "not a mindspore.nn.Cell; return the loss cell itself.")
    return loss


def build_optimizer(opt_cfg, params: list, rates: list[float]) -> nn.Optimizer:
    """The optimizer, from optimizer._target_: called with the network's trainable parameters
    (first, positional), one rate per step (the study's schedule) as its `lr` or `learning_rate`
    (mindcv's create_optimizer, or MindSpore's nn.AdamWeightDecay itself) and optimizer.args."""
    args = dict(opt_cfg.args)
    if "lr" in args or "learning_rate" in args:
        raise ConfigError("optimizer.args sets the learning rate, which the study passes itself "
                          "(one rate per step, from its schedule); set optimizer.lr and "
                          "optimizer.schedule instead.")
    factory = load_target("optimizer", opt_cfg._target_)
    name = next((n for n in ("lr", "learning_rate") if takes(factory, n)), None)
    if name is None:
        raise ConfigError(f"optimizer._target_ {opt_cfg._target_} takes no lr or learning_rate "
                          "parameter, through which the study passes its rate per step; wrap it "
                          "in a factory of (params, lr, ...).")
    optimizer = instantiate("optimizer", opt_cfg._target_, args, {}, {name: list(rates)},
                            positional=(list(params),))
    if not isinstance(optimizer, nn.Optimizer):
        raise ConfigError(f"optimizer._target_ {opt_cfg._target_} returned a "
                          f"{type(optimizer).__name__}, not a mindspore.nn.Optimizer; return the "
                          "optimizer built over the parameters it is given.")
    return optimizer


def takes(factory: Any, name: str) -> bool:
    """Whether a factory names `name` among its parameters."""
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def build_pipeline(pipe_cfg, root: str, seed: int, num_batches: int) -> ds.Dataset:
    """The factory's dataset (before the study repeats it or re-sizes it), checked."""
    target = pipe_cfg._target_
    factory = load_target("pipeline", target)
    given: dict[str, Any] = {"root": str(root), "batch_size": int(pipe_cfg.batch_size),
                             "image_size": int(pipe_cfg.image_size), "seed": int(seed)}
    for name, value in (("pipeline", pipe_cfg), ("num_batches", num_batches)):
        if takes(factory, name):
            given[name] = value
    config = {"pipeline": given.pop("pipeline")} if "pipeline" in given else None
    data = instantiate("pipeline", target, dict(pipe_cfg.args), given, config)
    if not isinstance(data, ds.Dataset):
        raise ConfigError(f"pipeline._target_ {target} returned a {type(data).__name__}, not a "
                          "mindspore.dataset.Dataset; return the dataset of (image, label) batches.")
    columns = data.get_col_names()
    if len(columns) != 2:
        raise ConfigError(f"pipeline._target_ {target} gives rows of {len(columns)} columns "
                          f"({', '.join(columns)}); the study trains on (image, label) rows: "
                          "project the dataset to those two columns.")
    return data


def repeat_to(data: ds.Dataset, num_batches: int, target: str) -> ds.Dataset:
    """The pipeline repeated to give `num_batches` batches (MindSpore drops a repeat(1) from the
    running tree, so none is added then: pipeline.json lines up with the profile)."""
    per_epoch = data.get_dataset_size()
    if not per_epoch or per_epoch < 1:
        raise ConfigError(f"pipeline._target_ {target} gives no whole batch (dataset size "
                          f"{per_epoch}); give it more images or lower pipeline.batch_size.")
    count = math.ceil(num_batches / per_epoch)
    return data.repeat(count) if count > 1 else data


# --- addresses -------------------------------------------------------------------------------

def short_type(op_type: str) -> str:
    """MindData's op type (serialised `MindDataDataset`, Python `MindDataset`) -> address stem."""
    name = op_type.removesuffix("Dataset")
    return "minddata" if name in ("Mind", "MindData") else name.lower()


def walk(dataset: ds.Dataset) -> list[ds.Dataset]:
    """The tree's nodes consumer first, depth first (the order ds.serialize and MindData's op
    ids follow)."""
    nodes = []

    def visit(node: ds.Dataset) -> None:
        nodes.append(node)
        for child in node.children:
            visit(child)

    visit(dataset)
    return nodes


def addresses(op_types: list[str]) -> list[str]:
    """Address of each node of a consumer-first list: its type and its rank among that type's
    nodes counted from the source (the last node) up."""
    counts: dict[str, int] = {}
    out = [""] * len(op_types)
    for index in range(len(op_types) - 1, -1, -1):
        stem = short_type(op_types[index])
        counts[stem] = counts.get(stem, 0) + 1
        out[index] = f"{stem}_{counts[stem]}"
    return out


def sizable(node: ds.Dataset) -> bool:
    """An operator whose workers a setting may change: a map, or a source (a leaf)."""
    return isinstance(node, ds.MapDataset) or not node.children


def in_processes(node: ds.Dataset) -> bool:
    """An operator whose Python may run in worker processes instead of threads
    (python_multiprocessing): a map, or a Python source (GeneratorDataset)."""
    return isinstance(node, (ds.MapDataset, ds.GeneratorDataset))


def address_book(dataset: ds.Dataset) -> dict[str, ds.Dataset]:
    """Address -> node of every operator of a built tree."""
    nodes = walk(dataset)
    return dict(zip(addresses([type(n).__name__ for n in nodes]), nodes, strict=True))


def _listing(book: dict[str, ds.Dataset]) -> str:
    return ", ".join(a for a, n in reversed(book.items()) if sizable(n)) or "none"


def resize(dataset: ds.Dataset, workers: dict[str, int], processes: dict[str, bool],
           cpus: int) -> ds.Dataset:
    """Set num_parallel_workers / python_multiprocessing on the built tree's operators by address,
    before any iterator exists (MindSpore reads them when the iterator builds its tree)."""
    if not workers and not processes:
        return dataset
    book = address_book(dataset)
    for key, wanted in (("workers", workers), ("processes", processes)):
        for address in wanted:
            node = book.get(address)
            if node is None or not sizable(node):
                raise ConfigError(f"pipeline.{key}.{address} names no sized operator of this "
                                  f"pipeline; its operators are {_listing(book)} (see "
                                  "profile/pipeline.json): use one of those addresses.")
            if key == "processes" and not in_processes(node):
                raise ConfigError(f"pipeline.processes.{address}: {address} is neither a map nor a "
                                  "GeneratorDataset; only their Python runs in worker processes, "
                                  "so drop the key.")
    for address, count in workers.items():
        count = int(count)
        if not 1 <= count <= cpus:
            raise ConfigError(f"pipeline.workers.{address}={count} is outside 1..{cpus}, the CPUs "
                              f"this machine gives the run (MindSpore refuses more); use 1..{cpus}.")
        book[address].num_parallel_workers = count
    for address, flag in processes.items():
        book[address].python_multiprocessing = bool(flag)
    log.info("operators re-sized on the built pipeline: %s",
             ", ".join([f"{a} {n} workers" for a, n in workers.items()]
                       + [f"{a} {'processes' if p else 'threads'}" for a, p in processes.items()]))
    return dataset


# --- the labels' form --------------------------------------------------------------------------

def _retypes_only(operations) -> bool:
    return all(type(op).__name__ == "TypeCast" for op in operations or ())


def label_changers(dataset: ds.Dataset) -> list[str]:
    """Addresses of the maps that change the label column beyond a type cast (a one-hot, label
    smoothing or a per-batch mixup map): the labels' form is then the pipeline's to say."""
    label = dataset.get_col_names()[1]
    return [address for address, node in address_book(dataset).items()
            if isinstance(node, ds.MapDataset) and label in (node.input_columns or ())
            and not _retypes_only(node.operations)]


def label_form(dataset: ds.Dataset) -> tuple[tuple[int, ...], str] | None:
    """One batch's label shape and numpy dtype name, asked of the pipeline (it runs one batch)
    when a map changes the labels; None: class indices as the source gives them."""
    if not label_changers(dataset):
        return None
    shapes, types = dataset.output_shapes(), dataset.output_types()
    return tuple(int(n) for n in shapes[1]), np.dtype(types[1]).name
