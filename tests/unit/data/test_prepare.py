"""The prepared dataset: the source re-encoded at a bounded resolution in a MindRecord, read in
the source's order; its manifest, re-preparation, and bad inputs."""

import hashlib
import json
import os

import mindspore.dataset as ds
import numpy as np
import pytest

from perfstudy.common.config import ConfigError, compose_run_config
from perfstudy.data import dataset, prepare, sources
from perfstudy.run import pipeline


@pytest.fixture(scope="module")
def prepared(smoke_dataset, tmp_path_factory):
    settings = prepare.Settings(image_size=32, short_side=None, quality=90)
    out = tmp_path_factory.mktemp("prepared") / "prepared-smoke"
    path = prepare.prepare(smoke_dataset, settings, out, workers=2)
    return dataset.load_manifest(path), settings


def test_crop_bound_is_the_smallest_side_that_never_upsamples_a_crop():
    # a 4:3 photo at a 32 px input: the smallest crop (area 0.08, ratio 3/4 or 4/3) of a
    # 114 x 152 image is 32.2 px on its short side; at 113 px it would be 31.96
    assert prepare.crop_bound_side(32, 4 / 3) == 114
    assert prepare.crop_bound_side(32, 1.0) == 131  # a square loses more to the ratio
    assert prepare.crop_bound_side(224, 4 / 3) == 792
    side = 114
    smallest = np.sqrt(0.08 * side * side * 4 / 3) * min(np.sqrt(0.75), 1 / np.sqrt(1.333))
    assert smallest >= 32 > smallest * 113 / 114


def test_target_size_keeps_the_aspect_and_never_upsamples():
    settings = prepare.Settings(image_size=32, short_side=None, quality=90)
    assert prepare.target_size(4608, 3456, settings) == (152, 114)
    assert prepare.target_size(3456, 4608, settings) == (114, 152)
    assert prepare.target_size(100, 80, settings) == (100, 80)  # already smaller: kept
    fixed = prepare.Settings(image_size=32, short_side=64, quality=90)
    assert prepare.target_size(640, 480, fixed) == (85, 64)


def test_manifest_names_source_settings_sizes_and_cost(prepared, smoke_dataset):
    manifest, settings = prepared
    source = dataset.load_manifest(smoke_dataset)
    assert manifest["source"] == "prepared" and manifest["format"] == "mindrecord"
    assert manifest["source_manifest"]["sha256"] == hashlib.sha256(smoke_dataset.read_bytes()).hexdigest()
    assert manifest["source_manifest"]["dataset_sha256"] == source["dataset_sha256"]
    assert manifest["settings"]["image_size"] == 32 and manifest["settings"]["quality"] == 90
    assert manifest["num_images"] == source["num_images"] == 16
    assert manifest["classes"] == source["classes"]
    assert manifest["before"]["bytes"] == source["total_bytes"]
    assert manifest["before"]["mean_megapixels"] == pytest.approx(320 * 240 / 1e6)
    assert manifest["after"]["mean_megapixels"] == pytest.approx(152 * 114 / 1e6)
    assert manifest["after"]["bytes"] < manifest["before"]["bytes"]
    # the record file is sized to its data (MindRecord's default 32 MB pages are not)
    assert manifest["total_bytes"] < 4 * manifest["after"]["bytes"]
    assert manifest["preparation"]["wall_s"] > 0 and manifest["preparation"]["cpu_s"] > 0
    assert manifest["psnr_db"]["min"] > 28
    sources.verify(manifest)


def test_the_summary_carries_the_manifest_as_a_typed_record(prepared, smoke_dataset):
    """What a run summary carries of a prepared dataset is made from its manifest in one place
    (PreparedFacts), read back from summary.json unchanged, and a manifest without one of its
    facts is refused with a sentence naming the field, never read as a missing key later."""
    from perfstudy.common.records import RecordError, from_dict, to_dict
    from perfstudy.data.prepared_record import PreparedFacts

    manifest, settings = prepared
    facts = PreparedFacts.from_manifest(manifest)
    assert facts.format == "mindrecord" and facts.record == prepare.RECORD
    assert facts.source_manifest.sha256 == hashlib.sha256(smoke_dataset.read_bytes()).hexdigest()
    assert facts.settings.image_size == settings.image_size and facts.settings.format == settings.format
    assert facts.after.mean_megapixels == manifest["after"]["mean_megapixels"]
    assert facts.preparation.workers == 2 and facts.psnr_db.min == manifest["psnr_db"]["min"]
    assert from_dict(PreparedFacts, json.loads(json.dumps(to_dict(facts)))) == facts
    # the shape is the manifest's own: what a summary recorded before the record reads back
    assert to_dict(facts) == {k: manifest[k] for k in to_dict(facts)}
    broken = {k: v for k, v in manifest.items() if k != "psnr_db"}
    with pytest.raises(RecordError, match="psnr_db"):
        PreparedFacts.from_manifest(broken)


def test_prepared_images_are_the_source_resized(prepared, smoke_dataset):
    from PIL import Image

    manifest, _ = prepared
    source = dataset.load_manifest(smoke_dataset)
    reader = ds.MindDataset(prepare.record_path(manifest), columns_list=["image", "label", "path"],
                            shuffle=False)
    rows = list(reader.create_dict_iterator(output_numpy=True, num_epochs=1))
    assert len(rows) == 16
    for row in rows:
        rel = str(row["path"])
        blob = row["image"].tobytes()
        with Image.open(__import__("io").BytesIO(blob)) as image:
            assert min(image.size) == 114
        score = prepare.reference_psnr(os.path.join(source["root"], rel), blob)
        assert score > 28, (rel, score)
        assert int(row["label"]) == source["classes"].index(rel.split("/")[0])


def test_same_images_and_labels_in_the_same_order_under_the_same_seed(prepared, smoke_dataset):
    """ImageFolderDataset and the prepared MindDataset through the training pipeline's source,
    over three epochs (a batch of 5 leaves a remainder each epoch)."""
    manifest, _ = prepared
    source = dataset.load_manifest(smoke_dataset)
    by_sha = {f["sha256"]: f["path"] for f in source["files"]}
    cfg = compose_run_config(["size=smoke", "pipeline.batch_size=5"])
    got = {}
    for name, root in (("folder", source["root"]), ("prepared", prepare.record_path(manifest))):
        ds.config.set_seed(11)
        reader = pipeline.create_source(root, cfg.pipeline, 2, num_batches=9)
        if name == "folder":
            reader = reader.repeat(3)
        rows = list(reader.create_dict_iterator(output_numpy=True, num_epochs=1))
        got[name] = rows
    folder = [by_sha[hashlib.sha256(r["image"].tobytes()).hexdigest()] for r in got["folder"]]
    folder = [p for e in range(3) for p in folder[16 * e:16 * e + 15]]  # whole batches per epoch
    # the prepared rows carry their source path in the record: read them in the same order
    orders = pipeline.image_folder_orders(16, 3, 11)
    paths = [f["path"] for f in manifest["files"]]
    assert [paths[i] for order in orders for i in order[:15]] == folder
    assert [int(r["label"]) for r in got["prepared"]] == [
        source["classes"].index(p.split("/")[0]) for p in folder]
    assert orders[0] != orders[1]  # each epoch reshuffles, as ImageFolderDataset does


def test_the_same_source_and_settings_reuse_the_preparation(prepared, smoke_dataset):
    manifest, settings = prepared
    path = os.path.join(manifest["root"], dataset.MANIFEST)
    before = os.stat(path).st_mtime_ns
    prepare.prepare(smoke_dataset, settings, manifest["root"])
    assert os.stat(path).st_mtime_ns == before


def test_a_changed_source_or_setting_prepares_again(smoke_dataset, tmp_path):
    source = tmp_path / "source"
    import shutil

    shutil.copytree(smoke_dataset.parent, source)
    settings = prepare.Settings(image_size=32, short_side=None, quality=90)
    out = tmp_path / "prepared-x"
    first = json.loads(prepare.prepare(source / dataset.MANIFEST, settings, out).read_text())
    changed = json.loads((source / dataset.MANIFEST).read_text())
    changed["note"] = "regenerated"  # a new source manifest (e.g. another seed)
    (source / dataset.MANIFEST).write_text(json.dumps(changed))
    second = json.loads(prepare.prepare(source / dataset.MANIFEST, settings, out).read_text())
    assert second["source_manifest"]["sha256"] != first["source_manifest"]["sha256"]
    smaller = prepare.Settings(image_size=32, short_side=64, quality=90)
    third = json.loads(prepare.prepare(source / dataset.MANIFEST, smaller, out).read_text())
    assert third["after"]["short_side_max"] == 64


def test_a_corrupt_record_gets_one_sentence(prepared, tmp_path):
    import shutil

    manifest, _ = prepared
    copy = tmp_path / "prepared-copy"
    shutil.copytree(manifest["root"], copy)
    record = copy / prepare.RECORD
    blob = bytearray(record.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    record.write_bytes(bytes(blob))
    broken = dataset.load_manifest(copy / dataset.MANIFEST)
    with pytest.raises(dataset.DatasetError, match="corrupt or changed.*re-prepare"):
        sources.verify(broken)
    (copy / (prepare.RECORD + ".db")).unlink()
    with pytest.raises(dataset.DatasetError, match="missing.*re-prepare"):
        sources.verify(broken)


def test_an_unreadable_record_gets_one_sentence(tmp_path):
    bogus = tmp_path / prepare.RECORD
    bogus.write_bytes(b"not a mindrecord")
    cfg = compose_run_config(["size=smoke"])
    with pytest.raises(dataset.DatasetError, match="cannot be read.*re-prepare"):
        pipeline.create_source(str(bogus), cfg.pipeline, 2)


def test_an_unwritable_target_gets_one_sentence(smoke_dataset, tmp_path):
    blocker = tmp_path / "data_root"
    blocker.write_text("a file where the data folder should be")  # unwritable even for root
    settings = prepare.Settings(image_size=32, short_side=None, quality=90)
    with pytest.raises(dataset.DatasetError, match="Cannot write the prepared dataset.*data_root"):
        prepare.prepare(smoke_dataset, settings, blocker / "prepared-x")


@pytest.mark.parametrize("overrides, fragment", [
    (["data.prepared_short_side=16"], "below the network input"),
    (["data.prepared_quality=0"], "data.prepared_quality"),
    (["experiment=prepared", "pipeline.reader_delay_ms=5"], "reader_delay_ms"),
])
def test_bad_preparation_settings_fail_at_compose_time(overrides, fragment):
    with pytest.raises(ConfigError, match=fragment):
        compose_run_config(["size=smoke", *overrides])


def test_a_changed_source_file_is_reported_not_prepared(smoke_dataset, tmp_path):
    import shutil

    source = tmp_path / "source"
    shutil.copytree(smoke_dataset.parent, source)
    victim = sorted(source.rglob("*.jpg"))[0]
    victim.write_bytes(victim.read_bytes()[:-10] + b"0123456789")
    settings = prepare.Settings(image_size=32, short_side=None, quality=90)
    with pytest.raises(dataset.DatasetError, match="differ from its manifest"):
        prepare.prepare(source / dataset.MANIFEST, settings, tmp_path / "prepared-x")
    assert not (tmp_path / "prepared-x").exists()


def test_an_imagefolder_copy_keeps_paths_order_and_labels_and_is_checked(smoke_dataset, tmp_path):
    """The copy handed to a user's factory as its root: every file at its source's relative
    path, bounded, read by ImageFolderDataset in the source's order with its labels; a changed
    or missing file is one sentence."""
    from PIL import Image

    settings = prepare.Settings(image_size=32, short_side=None, quality=90, format="imagefolder")
    manifest = dataset.load_manifest(prepare.prepare(smoke_dataset, settings, tmp_path / "p",
                                                     workers=2))
    source = dataset.load_manifest(smoke_dataset)
    root = prepare.record_path(manifest)
    assert manifest["format"] == "imagefolder" and root.endswith("/images")
    assert sources.training_source(manifest) == root
    assert sorted(f["path"] for f in manifest["files"]) == sorted(f["path"] for f in source["files"])
    for entry in manifest["files"]:
        with Image.open(os.path.join(root, entry["path"])) as image:
            assert image.size == (entry["width"], entry["height"])
            assert min(image.size) <= prepare.crop_bound_side(32, max(image.size) / min(image.size))
    labels = {}
    for name, folder in (("source", source["root"]), ("copy", root)):
        ds.config.set_seed(5)
        reader = ds.ImageFolderDataset(folder, shuffle=True, decode=False)
        labels[name] = [int(r["label"]) for r in reader.create_dict_iterator(output_numpy=True,
                                                                             num_epochs=1)]
    assert labels["copy"] == labels["source"] and len(set(labels["copy"])) > 1
    sources.verify(manifest)
    first = os.path.join(root, manifest["files"][0]["path"])
    with open(first, "ab") as handle:
        handle.write(b"x")
    with pytest.raises(dataset.DatasetError, match="changed .* delete .* re-prepare it"):
        sources.verify(manifest)
    os.remove(first)
    with pytest.raises(dataset.DatasetError, match="is missing from"):
        sources.verify(manifest)


def test_the_format_follows_the_pipeline_and_a_mindrecord_is_refused_to_a_users_factory(tmp_path):
    from perfstudy.run import training_data

    assert prepare.Settings.from_config(compose_run_config([])).format == "mindrecord"
    mindcv = compose_run_config(["experiment=mindcv_resnet50", "data.prepared=true"])
    assert prepare.Settings.from_config(mindcv).format == "imagefolder"
    assert prepare.Settings.from_config(mindcv).tag().endswith("-folder")
    forced = compose_run_config(["experiment=mindcv_resnet50", "data.prepared=true",
                                 "data.prepared_format=mindrecord"])
    with pytest.raises(ConfigError, match="only the case study's pipeline reads"):
        training_data.check_factories(forced)
