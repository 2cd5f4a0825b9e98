"""The article's pipeline: worker clamping, and real batches out of a generated folder."""

import pytest

from perfstudy import pipeline
from perfstudy.config import compose_run_config
from perfstudy.data import load_manifest


def test_workers_above_the_cpu_count_are_clamped_and_both_values_kept():
    workers = pipeline.resolve_workers(12, 1, cpus=2)
    assert (workers.requested, workers.effective, workers.clamped) == (12, 2, True)
    assert workers.as_dict()["requested"] == 12


def test_no_workers_argument_uses_the_global_default():
    workers = pipeline.resolve_workers(None, 1, cpus=2)
    assert (workers.requested, workers.effective, workers.clamped) == (None, 1, False)
    assert workers.mindspore_default >= 1


def test_train_transforms_are_the_articles():
    names = [type(t).__name__ for t in pipeline.train_transforms(224)]
    assert names == ["RandomCropDecodeResize", "RandomHorizontalFlip", "Normalize", "HWC2CHW"]
    names = [type(t).__name__ for t in pipeline.eval_transforms(224)]
    assert names == ["Decode", "Resize", "CenterCrop", "Normalize", "HWC2CHW"]


@pytest.mark.parametrize("requested", [None, 2])
def test_batches_have_the_network_input_shape(smoke_dataset, requested):
    cfg = compose_run_config(["size=smoke"])
    root = load_manifest(smoke_dataset)["root"]
    workers = pipeline.resolve_workers(requested, 1)
    dataset = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=6, seed=1,
                                            workers=workers)
    batches = list(dataset.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert len(batches) >= 6
    images, labels = batches[0]
    assert images.shape == (4, 3, 32, 32)
    assert images.dtype.name == "float32"
    assert set(labels.tolist()) <= {0, 1}


def test_only_jpegs_become_samples(tmp_path, smoke_dataset):
    import shutil

    root = tmp_path / "data"
    shutil.copytree(load_manifest(smoke_dataset)["root"], root)
    for folder in root.iterdir():
        if folder.is_dir():
            (folder / "README.txt").write_text("not an image")
    cfg = compose_run_config(["size=smoke"])
    workers = pipeline.resolve_workers(None, 1)
    dataset = pipeline.create_train_dataset(str(root), cfg.pipeline, num_batches=4, seed=1,
                                            workers=workers)
    rows = sum(images.shape[0] for images, _ in dataset.create_tuple_iterator(num_epochs=1,
                                                                                output_numpy=True))
    assert rows == 16  # the 16 JPEGs, one epoch of 4 batches; no README decoded
