"""The article's pipeline: worker clamping, and real batches out of a generated folder."""

import pytest

from perfstudy.common.config import compose_run_config
from perfstudy.data.dataset import load_manifest
from perfstudy.run import pipeline


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


@pytest.mark.parametrize("requested", [None, 2])
def test_batches_have_the_network_input_shape(smoke_dataset, requested):
    cfg = compose_run_config(["size=smoke", f"pipeline.num_parallel_workers={requested}"
                              if requested else "pipeline.num_parallel_workers=null"])
    root = load_manifest(smoke_dataset)["root"]
    dataset = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=6, seed=1)
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
    dataset = pipeline.create_train_dataset(str(root), cfg.pipeline, num_batches=4, seed=1)
    rows = sum(images.shape[0] for images, _ in dataset.create_tuple_iterator(num_epochs=1,
                                                                                output_numpy=True))
    assert rows == 16  # the 16 JPEGs, one epoch of 4 batches; no README decoded


def test_every_sized_operator_is_described_with_its_config_key(smoke_dataset):
    from perfstudy.run.settings import operator_settings
    from perfstudy.run.train import queue_capacity_batches

    cfg = compose_run_config(["size=smoke", "experiment=slow_reader",
                              "pipeline.extra_transform=perfstudy.run.transforms:PythonBurn",
                              "pipeline.extra_transform_workers=2",
                              "pipeline.extra_transform_multiprocessing=true",
                              "pipeline.batch_transform=perfstudy.run.transforms:BatchBlur",
                              "pipeline.prefetch_size=2"])
    manifest = load_manifest(smoke_dataset)
    data = pipeline.create_train_dataset(manifest["root"], cfg.pipeline, 2, 0)
    nodes = pipeline.describe(data, cfg.pipeline)
    keyed = {n["config_key"]: n for n in nodes if n.get("config_key")}
    assert set(keyed) == {"pipeline.batch_transform_workers", "pipeline.extra_transform_workers",
                          "pipeline.num_parallel_workers", "pipeline.reader_workers"}
    assert keyed["pipeline.extra_transform_workers"]["operations"] == ["PythonBurn"]
    assert keyed["pipeline.extra_transform_workers"]["python"] is True
    assert keyed["pipeline.num_parallel_workers"]["python"] is False
    assert keyed["pipeline.reader_workers"]["op_type"] == "GeneratorDataset"
    settings = operator_settings(nodes)
    assert settings["pipeline.extra_transform_workers"] == 2
    assert settings["pipeline.extra_transform_workers:multiprocessing"] is True
    # queues of 2: Repeat?, batch map and Batch hold batches; the two maps and the reader rows
    assert queue_capacity_batches(nodes, 4) == pytest.approx(2 + 2 + 3 * 2 / 4)


def test_the_slow_reader_gives_imagefolder_labels(smoke_dataset):
    manifest = load_manifest(smoke_dataset)
    reader = pipeline.SlowReader(manifest["root"], 0.0)
    assert len(reader) == manifest["num_images"]
    labels = sorted({int(reader[i][1]) for i in range(len(reader))})
    assert labels == list(range(manifest["num_classes"]))
    assert reader[0][0][:2].tolist() == [0xFF, 0xD8]  # the file's bytes, decoded by the map


def test_a_user_folder_sets_the_class_count_and_bad_labels_stop_in_one_sentence():
    from perfstudy.run.train import check_labels, model_classes

    cfg = compose_run_config(["size=smoke", "data.path=/somewhere"])
    assert cfg.model.num_classes == 2
    assert model_classes(cfg, {"num_classes": 4}) == 4  # the folder's 4 classes, not 2
    assert model_classes(compose_run_config(["size=smoke"]), {"num_classes": 2}) == 2
    import numpy as np

    check_labels(np.array([0, 1, 3]), 4, 0)
    with pytest.raises(ValueError, match=r"Step 5 has label 3, but the model has 2 classes \(0..1\)"):
        check_labels(np.array([0, 3]), 2, 5)


def test_a_python_operation_inside_the_articles_map_runs_on_every_image(smoke_dataset, tmp_path):
    """pipeline.decode_map_extra: a Python op appended to the article's map (one mixed map, not
    a map of its own); here a gate that counts the images it passes."""
    cfg = compose_run_config(["size=smoke", "pipeline.decode_map_extra=perfstudy.run.transforms:Gate",
                              f"+pipeline.decode_map_extra_args.path={tmp_path / 'open'}"])
    (tmp_path / "open").write_text("")
    root = load_manifest(smoke_dataset)["root"]
    dataset = pipeline.create_train_dataset(root, cfg.pipeline, num_batches=2, seed=1)
    images, _ = next(dataset.create_tuple_iterator(num_epochs=1, output_numpy=True))
    assert images.shape == (4, 3, 32, 32)  # the op runs after HWC2CHW and returns it unchanged
    maps = [n for n in pipeline.describe(dataset, cfg.pipeline) if n["op_type"] == "Map"]
    assert len(maps) == 1 and maps[0]["operations"][-1] == "Gate"


@pytest.mark.parametrize("prefetch,batch", [(2, 4), (2, 1), (4, 8)])
def test_a_running_pipeline_reads_no_further_ahead_than_the_bound(prefetch, batch):
    """A measured window's source outlasts it by pipeline.batches_ahead: a real MindSpore
    pipeline (a source counting the rows pulled, a two-worker map, batch), one batch taken,
    then left idle until it stops reading, never holds more batches than the bound (measured
    here: 10-26 batches at prefetch_size 2, where the old bound, prefetch_size itself, let a
    window's last steps run dry)."""
    import threading
    import time

    import mindspore.dataset as ds
    import numpy as np
    from omegaconf import OmegaConf

    pulled, lock = [0], threading.Lock()

    def rows():
        for i in range(100_000):
            with lock:
                pulled[0] += 1
            yield np.zeros((8, 8, 3), np.uint8), np.array(i % 2, np.int32)

    before = ds.config.get_prefetch_size()
    ds.config.set_prefetch_size(prefetch)
    try:
        data = ds.GeneratorDataset(rows, ["image", "label"], shuffle=False, python_multiprocessing=False)
        data = data.map(lambda x: x, input_columns=["image"], num_parallel_workers=2)
        iterator = data.batch(batch, drop_remainder=True).create_tuple_iterator(num_epochs=1)
        next(iterator)
        seen, still = -1, 0
        while still < 10:  # idle until the count stops moving for a second
            time.sleep(0.1)
            with lock:
                still, seen = (still + 1, seen) if pulled[0] == seen else (0, pulled[0])
        iterator.stop()
    finally:
        ds.config.set_prefetch_size(before)
    ahead = seen / batch - 1
    bound = pipeline.batches_ahead(OmegaConf.create({"prefetch_size": prefetch, "batch_size": batch}))
    # an upper bound: a host that stalls the pipeline early only counts fewer (never a race)
    assert 0 < ahead <= bound, (ahead, bound)
