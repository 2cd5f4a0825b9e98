"""Shared fixtures. Tests run on 2 cores: anything that trains is marked slow."""

import inspect
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SNAKEMAKE = str(Path(PYTHON).with_name("snakemake"))
RUFF = str(Path(PYTHON).with_name("ruff"))


def pytest_configure(config):
    """Under `--dist loadgroup` xdist marks a grouped test by rewriting its node id
    (`item._nodeid += "@slurm"`); a pytest whose `nodeid` no longer reads `_nodeid` (9.2) loses
    the groups silently, and the two SLURM tests (fixed ports) start two clusters at once."""
    from _pytest.nodes import Node

    if os.environ.get("PYTEST_XDIST_WORKER") or config.getvalue("dist") != "loadgroup":
        return
    if "_nodeid" not in inspect.getsource(Node.nodeid.fget):
        raise pytest.UsageError(f"pytest {pytest.__version__} ignores pytest-xdist's test groups "
                                "(xdist_group): run `make setup` to install the pinned pytest "
                                "from requirements.lock.")


def pytest_collection_modifyitems(config, items):
    """`make test SYSTEM=0` (PERFSTUDY_SYSTEM=0): the tests that need Debian's PostgreSQL, SLURM
    or chromium are skipped, each with the reason (nothing installed with sudo)."""
    if os.environ.get("PERFSTUDY_SYSTEM", "1") != "0":
        return
    skip = pytest.mark.skip(reason="SYSTEM=0: needs PostgreSQL, SLURM or chromium, which make test "
                                   "installs with sudo apt-get (run make test without SYSTEM=0)")
    for item in items:
        if item.get_closest_marker("system"):
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_inherited_tracking(monkeypatch):
    """Each test decides its tracking store; a user's MLFLOW_* settings must not leak in."""
    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(key, raising=False)


@pytest.fixture
def mlflow_study(tmp_path):
    """A SQLite MLflow store under tmp_path holding study `s`'s experiment and its parent run
    (instance `i1`), as track_init makes them: (uri, client, experiment id, parent run id)."""
    from perfstudy.present import mlflow_store

    uri = mlflow_store.default_uri(tmp_path)
    client = mlflow_store.client_for(uri)
    exp = mlflow_store.ensure_experiment(client, "perfstudy/s", uri)
    return uri, client, exp, mlflow_store.ensure_study_run(client, exp, "s", "i1", {})


@pytest.fixture(scope="session")
def smoke_dataset(tmp_path_factory):
    """A tiny generated ImageFolder (16 JPEGs, 2 classes) shared by the tests."""
    from perfstudy.common.config import compose_run_config
    from perfstudy.data import dataset

    root = tmp_path_factory.mktemp("data")
    cfg = compose_run_config(["size=smoke", f"paths.results={root}"])
    manifest = dataset.prepare_dataset(cfg.data, cfg.paths.data_root, workers=1)
    return Path(manifest)


def env_without_mlflow():
    """The environment for a subprocess, without inherited MLflow settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}


def gate_overrides(path: Path, after: int = 16) -> list[str]:
    """Hydra overrides that hold every training at a known step until `path` exists
    (perfstudy.run.transforms.Gate after `after` images; at smoke size, batch 4, the step with index
    after/4 waits): a test forces a kill, a cancellation or a time limit with it, whatever the
    CPU's speed, instead of racing the clock."""
    return ["pipeline.extra_transform=perfstudy.run.transforms:Gate",
            f"+pipeline.extra_transform_args.path={path}", f"+pipeline.extra_transform_args.after={after}"]


@pytest.fixture(scope="session")
def analysed(tmp_path_factory):
    """The real cpu_demo baseline and tuned runs (tests/fixtures/cpu_demo), analysed once;
    read-only for the tests that share them."""
    from perfstudy.orchestrate.analyze import analyze_run

    out = tmp_path_factory.mktemp("cpu_demo")
    for arm in ("baseline", "tuned"):
        shutil.copytree(REPO / "tests" / "fixtures" / "cpu_demo" / arm, out / arm)
        analyze_run(out / arm)
    return out


@pytest.fixture(scope="session")
def study(tmp_path_factory):
    """The seed case's DAG at smoke size (every arm, real MindSpore, a real MLflow store), run
    once and shared by the end-to-end and browser tests."""
    out = tmp_path_factory.mktemp("study")
    result = subprocess.run(
        [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(out), "--cores", "2", "--config",
         f"results={out}", "overrides=[size=smoke]"], cwd=out, capture_output=True, text=True,
        timeout=1200, env=env_without_mlflow())
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out
