"""A user's whole training through the factories: their loss, optimizer, precision and Python
reader (docs/examples/own_training.py), the head check, and mindcv's loss and optimizer."""

import logging
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest

from perfstudy.common.config import ConfigError, compose_run_config
from perfstudy.data.dataset import load_manifest
from perfstudy.run import factories, opprobe, pipeline
from perfstudy.run.step import LabelForm, TrainStep, check_labels, precompile, timed_step

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
OWN = ["model._target_=own_training.small_cnn", "loss._target_=own_training.focal_loss",
       "optimizer._target_=own_training.nesterov_sgd"]


@pytest.fixture(autouse=True)
def graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)  # as the training runs its steps


@pytest.fixture
def examples(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


def _cfg(tmp_path, *overrides):
    return compose_run_config(["size=smoke", f"paths.results={tmp_path}",
                               "verify.candidates=0", *overrides])


def _batch(classes=2, batch=4, size=32, seed=0):
    rng = np.random.default_rng(seed)
    return (ms.Tensor(rng.normal(size=(batch, 3, size, size)).astype(np.float32)),
            ms.Tensor(rng.integers(0, classes, batch).astype(np.int32)))


def test_a_users_loss_and_optimizer_are_built_and_trained(examples, tmp_path):
    step = TrainStep(_cfg(tmp_path, *OWN), 2)
    assert type(step.optimizer).__name__ == "SGD"
    assert type(step._forward_backward.loss_net._loss_fn).__name__ == "FocalLoss"
    images, labels = _batch()
    losses = [timed_step(step, images, labels)[0] for _ in range(4)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]  # it learns the batch


def test_a_static_loss_scale_gives_the_unscaled_gradients_and_amp_runs(examples, tmp_path):
    images, labels = _batch()
    grads = {}
    for scale in (1.0, 1024.0):
        ms.set_seed(3)
        step = TrainStep(_cfg(tmp_path, *OWN, f"trainer.loss_scale={scale}"), 2)
        loss, found = step.forward_backward(images, labels)
        grads[scale] = [g.asnumpy() for g in found]
    for plain, scaled in zip(grads[1.0], grads[1024.0], strict=True):
        assert np.allclose(plain, scaled, rtol=1e-4, atol=1e-7)
    ms.set_seed(3)
    half = TrainStep(_cfg(tmp_path, *OWN, "trainer.amp_level=O2", "trainer.loss_scale=128"), 2)
    assert np.isfinite(timed_step(half, images, labels)[0])


def test_mindcvs_loss_and_optimizer_read_mixed_label_rows(tmp_path):
    cfg = _cfg(tmp_path, "loss=mindcv_ce", "optimizer=mindcv_adamw",
               "model._target_=perfstudy.run.model.ResNet50")
    step = TrainStep(cfg, 2)
    assert "AdamW" in type(step.optimizer).__name__
    rows = LabelForm((4, 2), "float32")
    assert precompile(step, cfg, rows) > 0
    images = _batch()[0]
    mixed = ms.Tensor(np.array([[0.7, 0.3], [0.2, 0.8], [1, 0], [0, 1]], np.float32))
    check_labels(mixed, 2, 0)
    assert np.isfinite(timed_step(step, images, mixed)[0])
    with pytest.raises(ValueError, match="label rows of 2 classes, but the model has 3 outputs"):
        check_labels(mixed, 3, 5)


def test_bad_losses_and_optimizers_are_one_sentence_each(examples, tmp_path, monkeypatch):
    (tmp_path / "user_opt.py").write_text("def rates(params, lr):\n    return list(lr)\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def error(*overrides):
        with pytest.raises(ConfigError) as caught:
            TrainStep(_cfg(tmp_path, *overrides), 2)
        message = str(caught.value)
        assert "\n" not in message and message.endswith(".")
        return message

    assert "loss._target_ nowhere.loss does not import" in error("loss._target_=nowhere.loss")
    assert "returned a dict, not a mindspore.nn.Cell" in error("loss._target_=builtins.dict")
    assert "passes itself (one rate per step" in error("+optimizer.args.lr=0.1")
    assert "takes no lr or learning_rate" in error("optimizer._target_=builtins.dict")
    assert "takes no argument 'momentun'" in error("optimizer._target_=own_training.nesterov_sgd",
                                                   "+optimizer.args.momentun=0.9")
    assert "returned a list, not a mindspore.nn.Optimizer" in error(
        "optimizer._target_=user_opt.rates")


def test_a_head_wider_than_the_classes_is_one_warning_with_its_wasted_share(examples, tmp_path,
                                                                            caplog):
    caplog.set_level(logging.WARNING)
    step = TrainStep(_cfg(tmp_path, *OWN, "+model.args.width=8"), 2)
    assert step.head_outputs == 2 and not caplog.records
    wide = TrainStep(_cfg(tmp_path, "model._target_=perfstudy.run.model.ResNet50",
                          "+model.args.num_classes=10"), 10)
    assert wide.head_outputs == 10
    from perfstudy.run.step import warn_wide_head
    assert warn_wide_head(10, 2, "user.net") == pytest.approx(0.8)
    [record] = [r for r in caplog.records if "outputs for the data's" in r.getMessage()]
    assert "user.net has 10 outputs for the data's 2 classes: 80.0 %" in record.getMessage()


def test_a_python_readers_workers_and_processes_are_set_and_probed_by_address(examples,
                                                                               smoke_dataset):
    root = load_manifest(smoke_dataset)["root"]
    cfg = compose_run_config(["size=smoke", "pipeline._target_=own_training.make_dataset",
                              "pipeline.workers.generator_1=2",
                              "pipeline.processes.generator_1=false"])
    data = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=3, seed=1)
    book = factories.address_book(data)
    assert book["generator_1"].num_parallel_workers == 2
    assert book["generator_1"].python_multiprocessing is False
    nodes = {n["address"]: n for n in pipeline.describe(data, cfg.pipeline)}
    assert nodes["generator_1"]["config_key"] == "pipeline.workers.generator_1"
    assert nodes["generator_1"]["multiprocessing"] is False
    images, labels = next(data.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert images.shape == (4, 3, 32, 32) and labels.shape == (4,)
    [probed] = opprobe.probe(cfg.pipeline, root, 2)
    assert probed.config_key == "pipeline.workers.generator_1"
    assert probed.operation == "generator_1 [PillowReader]"
    ran = {(p.workers, p.multiprocessing) for p in probed.measured() if p.wall_ms_per_batch > 0}
    assert ran == {(1, False), (2, False), (1, True), (2, True)}
    assert probed.gil is not None  # the reader alone beside a GIL holder, as a Python map


@pytest.mark.slow
def test_a_users_whole_training_is_diagnosed_and_its_readers_settings_measured(examples, tmp_path):
    """The example's reader, network, loss and optimizer through the whole run: its Python
    reader probed alone, the model's candidates for it (threads or processes) measured in the
    verification rounds by address, the step recorded as built."""
    from perfstudy.orchestrate import analyze
    from perfstudy.run import train

    cfg = compose_run_config(["size=smoke", f"paths.results={tmp_path}", *OWN,
                              "pipeline._target_=own_training.make_dataset",
                              "verify.candidates=2", "pipeline.workers.generator_1=1"])
    summary = train.run(cfg, propose=analyze.propose)
    f = summary.factories
    assert (f.loss, f.optimizer) == ("own_training.focal_loss", "own_training.nesterov_sgd")
    assert f.head_outputs == summary.model_num_classes and f.labels == "class indices"
    [probed] = summary.calibration.operators
    assert probed.config_key == "pipeline.workers.generator_1"
    assert {p.multiprocessing for p in probed.measured()} == {False, True}
    plan = summary.verification.plan
    assert plan[0].role == "current" and len(plan) >= 2
    assert all("pipeline.workers.generator_1" in entry.settings for entry in plan)
    assert any(p.settings != plan[0].settings for p in plan[1:])
    assert {v.setting for v in summary.verification.rounds.kept()} == set(range(len(plan)))
