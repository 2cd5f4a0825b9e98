"""Bad input met by the running study (snakemake, the user's entry point): one sentence that
names the problem and the fix, a non-zero exit, nothing half-written, no MLflow run left
RUNNING. (Bad settings caught before anything runs: test_workflow.py; the README has the
whole table.)"""

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, SNAKEMAKE, env_without_mlflow
from PIL import Image

pytestmark = pytest.mark.slow


def _jpeg(path: Path, seed: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (96, 72), (seed * 40 % 256, 90, 160)).save(path, "JPEG")
    return path


def _image_folder(root: Path) -> Path:
    for label in ("cat", "dog"):
        for index in range(4):
            _jpeg(root / label / f"{index}.jpg", index)
    return root


def _study(out: Path, *overrides: str, until: str | None = None) -> subprocess.CompletedProcess:
    out.mkdir(exist_ok=True)
    return subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2",
         "--config", f"results={out}",
         f"overrides=[size=smoke,model=tiny_cnn,verify.candidates=0,{','.join(overrides)}]",
         "arms=[baseline,tuned]",
         *(["--until", until] if until else [])],
        cwd=out, capture_output=True, text=True, timeout=600, env=env_without_mlflow())


def _assert_clean_failure(result: subprocess.CompletedProcess, out: Path, fragment: str,
                          damaged: Path | None = None) -> str:
    """Non-zero exit; each failed job's one sentence printed at the end (the workflow profile
    keeps going, so every arm that reads the bad input says it: the same sentence); every output
    whole (but the file the test damaged on purpose)."""
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if ": error: " in line]
    sentences = {line.split(": error: ", 1)[1] for line in errors}
    assert len(sentences) == 1, result.stderr[-3000:]  # one sentence, no traceback
    sentence = sentences.pop()
    assert fragment in sentence and sentence.endswith(".") and "Traceback" not in sentence
    assert not list(out.rglob("*.tmp")), "a half-written file was left behind"
    for path in out.rglob("*.json"):
        if path != damaged:
            json.loads(path.read_text())  # every JSON whole
    for path in out.rglob("*.csv"):
        pd.read_csv(path)
    assert not list(out.glob("runs/*/*/steps.csv"))  # nothing trained on bad input
    store = out / "mlflow" / "mlflow.db"
    if store.exists():
        from mlflow.tracking import MlflowClient

        client = MlflowClient(f"sqlite:///{store}")
        experiments = [e.experiment_id for e in client.search_experiments()]
        assert not client.search_runs(experiments, "attributes.status = 'RUNNING'")
    return sentence


def _corrupt(root: Path) -> str:
    data = _image_folder(root)
    bad = data / "dog" / "bad.jpg"
    bad.write_bytes(_jpeg(data / "dog" / "0.jpg").read_bytes()[:300])  # truncated
    return "are not readable JPEGs (first: dog/bad.jpg: truncated"


def _missing(root: Path) -> str:
    return f"Data path {root} does not exist"


# Through the whole study, one fault of each kind: the folder (before any file is read) and a
# file in it. Every message of both kinds, folder and file, is checked on the scan itself in
# tests/unit/data/test_data.py (the other four ran here too until 2026-12-07: 18 s of make test
# each, for the same plumbing).
@pytest.mark.parametrize("make", [_missing, _corrupt])
def test_a_bad_data_folder_stops_the_study_in_one_sentence(tmp_path, make):
    fragment = make(tmp_path / "mydata")
    out = tmp_path / "out"
    result = _study(out, f"data.path={tmp_path / 'mydata'}")
    _assert_clean_failure(result, out, fragment)
    assert not list(out.glob("data/*/manifest.json"))


def test_other_files_in_a_class_folder_are_left_out(tmp_path):
    data = _image_folder(tmp_path / "mydata")
    (data / "cat" / "README.txt").write_text("notes")
    out = tmp_path / "out"
    result = _study(out, f"data.path={data}", until="make_dataset")
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads(next(out.glob("data/*/manifest.json")).read_text())
    assert sorted(f["path"] for f in manifest["files"]) == sorted(
        f"{label}/{i}.jpg" for label in ("cat", "dog") for i in range(4))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The smoke dataset made by the workflow itself (copied per test)."""
    out = tmp_path_factory.mktemp("generated")
    result = _study(out, until="make_dataset")
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def _copy(generated: Path, out: Path) -> Path:
    subprocess.run(["cp", "-a", str(generated), str(out)], check=True)
    return next(out.glob("data/*/manifest.json"))


def test_a_changed_dataset_file_is_reported_not_used(tmp_path, generated):
    manifest = _copy(generated, tmp_path / "out")
    victim = sorted(manifest.parent.rglob("*.jpg"))[0]
    victim.write_bytes(victim.read_bytes()[:-10] + b"0123456789")
    result = _study(tmp_path / "out")
    sentence = _assert_clean_failure(result, tmp_path / "out", "differ from its manifest")
    assert "contents changed" in sentence and victim.name in sentence


def test_a_corrupt_manifest_is_one_sentence(tmp_path, generated):
    manifest = _copy(generated, tmp_path / "out")
    manifest.write_text(manifest.read_text()[:50])
    result = _study(tmp_path / "out")
    _assert_clean_failure(result, tmp_path / "out", f"Dataset manifest {manifest} is corrupt",
                          damaged=manifest)


def test_an_unreachable_tracking_server_is_one_sentence(tmp_path):
    out = tmp_path / "out"
    result = _study(out, "tracking.uri=http://127.0.0.1:9", until="track_init")
    _assert_clean_failure(result, out, "The MLflow tracking server http://127.0.0.1:9 cannot be reached")
