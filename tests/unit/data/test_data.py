"""The generated dataset is deterministic; a user's folder is validated up front."""

import json

import numpy as np
import pytest

from perfstudy.data import dataset
from perfstudy.data.dataset import DatasetError, GeneratorParams

TINY = GeneratorParams(num_images=6, num_classes=3, image_width=96, image_height=64,
                       jpeg_quality=90, seed=7)


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*.jpg"))}


def test_same_parameters_give_byte_identical_files(tmp_path):
    first = dataset.generate(TINY, tmp_path / "a")
    second = dataset.generate(TINY, tmp_path / "b", workers=2)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert first["dataset_sha256"] == second["dataset_sha256"]
    assert len(first["files"]) == 6
    assert first["classes"] == ["class_000", "class_001", "class_002"]


def test_another_seed_gives_other_photos(tmp_path):
    first = dataset.generate(TINY, tmp_path / "a")
    other = dataset.generate(GeneratorParams(**{**TINY.__dict__, "seed": 8}), tmp_path / "b")
    assert first["dataset_sha256"] != other["dataset_sha256"]


def test_manifest_records_files_sizes_hashes_and_parameters(tmp_path):
    manifest = dataset.generate(TINY, tmp_path)
    on_disk = json.loads((tmp_path / "manifest.json").read_text())
    assert on_disk == json.loads(json.dumps(manifest))
    entry = manifest["files"][0]
    assert (tmp_path / entry["path"]).stat().st_size == entry["bytes"]
    assert manifest["generator"]["seed"] == 7
    assert manifest["generator"]["source_photos"]
    assert manifest["total_bytes"] == sum(f["bytes"] for f in manifest["files"])


def test_photos_are_real_jpegs_of_the_requested_size(tmp_path):
    from PIL import Image

    dataset.generate(TINY, tmp_path)
    with Image.open(next(tmp_path.rglob("*.jpg"))) as image:
        assert image.format == "JPEG"
        assert image.size == (96, 64)
        assert len(np.unique(np.asarray(image.convert("L")))) > 20  # photo content, not a fill


def _user_folder(root, classes=("cat", "dog")):
    for name in classes:
        (root / name).mkdir(parents=True)
    dataset.generate(GeneratorParams(2, 1, 32, 32, 90, 0), root / "_src")
    jpeg = next((root / "_src").rglob("*.jpg")).read_bytes()
    for name in classes:
        (root / name / "x.JPEG").write_bytes(jpeg)
    import shutil
    shutil.rmtree(root / "_src")
    return root


def test_a_valid_user_folder_is_described(tmp_path):
    manifest = dataset.scan_user_folder(_user_folder(tmp_path / "mine"))
    assert manifest["classes"] == ["cat", "dog"]
    assert manifest["num_images"] == 2
    assert manifest["source"] == "user"


@pytest.mark.parametrize("make, fragment", [
    (lambda root: root / "missing", "does not exist"),
    (lambda root: (root / "f.txt").write_text("x") and root / "f.txt", "is a file"),
    (lambda root: root, "no class folders"),
    (lambda root: (root / "empty_class").mkdir() or root, "holds no JPEG"),
])
def test_bad_user_folders_fail_with_the_fix(tmp_path, make, fragment):
    with pytest.raises(DatasetError) as info:
        dataset.scan_user_folder(make(tmp_path))
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_prepare_reuses_a_dataset_made_with_the_same_parameters(tmp_path):
    from perfstudy.common.config import compose_run_config

    cfg = compose_run_config(["size=smoke", f"paths.results={tmp_path}", "data.num_images=4"])
    manifest = dataset.prepare_dataset(cfg.data, cfg.paths.data_root)
    stamp = manifest.stat().st_mtime_ns
    assert dataset.prepare_dataset(cfg.data, cfg.paths.data_root) == manifest
    assert manifest.stat().st_mtime_ns == stamp


def test_user_data_gets_its_own_folder(tmp_path):
    from perfstudy.common.config import compose_run_config

    folder = _user_folder(tmp_path / "imagenet_train")
    cfg = compose_run_config([f"data.path={folder}", f"paths.results={tmp_path}/r"])
    manifest = dataset.prepare_dataset(cfg.data, cfg.paths.data_root)
    assert manifest.parent.name.startswith("user-imagenet_train-")
    assert dataset.load_manifest(manifest)["root"] == str(folder.resolve())


def test_corrupt_or_missing_manifest_says_how_to_recover(tmp_path):
    with pytest.raises(DatasetError, match="run the make_dataset rule"):
        dataset.load_manifest(tmp_path / "manifest.json")
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(DatasetError, match="corrupt"):
        dataset.load_manifest(tmp_path / "manifest.json")


@pytest.fixture
def generated(tmp_path):
    manifest = dataset.generate(TINY, tmp_path / "photos", workers=1)
    return manifest, tmp_path / "photos"


def test_an_untouched_dataset_verifies(generated):
    dataset.verify_manifest(generated[0])


@pytest.mark.parametrize("change, fragment", [
    (lambda root, first: first.write_bytes(first.read_bytes()[:-1] + b"\x00"), "contents changed"),
    (lambda root, first: first.write_bytes(first.read_bytes() + b"\x00"), "size changed"),
    (lambda root, first: first.unlink(), "missing"),
    (lambda root, first: (first.parent / "extra.jpg").write_bytes(first.read_bytes()), "not in the manifest"),
])
def test_a_changed_dataset_is_reported_not_trained_on(generated, change, fragment):
    manifest, root = generated
    first = sorted(root.rglob("*.jpg"))[0]
    change(root, first)
    with pytest.raises(DatasetError) as info:
        dataset.verify_manifest(manifest)
    message = str(info.value)
    assert fragment in message and "differ from its manifest" in message
    assert f"delete {root}" in message and "\n" not in message


def test_a_touched_user_file_is_reported(tmp_path):
    import os

    root = _user_folder(tmp_path / "mine")
    manifest = dataset.scan_user_folder(root)
    dataset.verify_manifest(manifest)
    target = next(root.rglob("*.JPEG"))
    os.utime(target, ns=(1, 1))
    with pytest.raises(DatasetError, match="modified"):
        dataset.verify_manifest(manifest)


@pytest.mark.parametrize("content, fragment", [
    (lambda good: good[: len(good) // 2], "truncated"),
    (lambda good: b"hello, I am a text file\n" * 10, "not a JPEG"),
    (lambda good: b"\x89PNG\r\n\x1a\n" + good[8:], "not a JPEG"),
    (lambda good: b"", "empty"),
])
def test_a_bad_file_among_good_jpegs_stops_the_scan(tmp_path, content, fragment):
    root = _user_folder(tmp_path / "mine")
    good = (root / "cat" / "x.JPEG").read_bytes()
    (root / "dog" / "bad.jpg").write_bytes(content(good))
    with pytest.raises(DatasetError) as info:
        dataset.scan_user_folder(root)
    message = str(info.value)
    assert "1 of 3 JPEG files" in message and "dog/bad.jpg" in message and fragment in message
    assert "remove or replace" in message and "\n" not in message


def test_files_that_are_not_jpegs_are_left_out(tmp_path):
    root = _user_folder(tmp_path / "mine")
    (root / "cat" / "README.txt").write_text("notes")
    manifest = dataset.scan_user_folder(root)
    assert manifest["num_images"] == 2
    dataset.verify_manifest(manifest)
