"""The body of scripts/train.py, a Hydra app (`@hydra.main` on conf/): one training of one arm.

Hydra owns the command line (`--cfg job`, `--help`, tab completion, `-m` multirun); this module
types and checks the composed config (perfstudy.common.config.checked), opens the arm's live
MLflow run (perfstudy.present.live) and trains (perfstudy.run.train). User errors are one
sentence and exit 2. The run folder is the Hydra job's output folder: `paths.run_dir` for a
single run (conf/config.yaml sets hydra.run.dir to it), `<results>/multirun/<time>/<job>` for
each job of a multirun. A multirun job trains in a fresh process (as each of the workflow's
trainings does): MindSpore's device, profiler and dataset engine are set once per process.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from perfstudy.common import config
from perfstudy.common.io import check_writable, write_text_atomic
from perfstudy.orchestrate.cli import main_guard, setup_logging

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "train.py"


OTHER_PRIMARY = ("--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd")


def precheck(argv: list[str]) -> None:
    """Compose the command line's overrides on conf/ before Hydra does, so a wrong key, value or
    group option is one sentence (exit 2), not Hydra's multi-line report. Overrides are read
    with Hydra's own parser; sweeps (`-m a=1,2`) and Hydra's own keys are left to Hydra, and so
    is another primary config (the DAG's --config-path: composed and checked already)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if any(arg.split("=")[0] in OTHER_PRIMARY for arg in argv):
        return
    given = [arg for arg in argv if "=" in arg and not arg.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(given)
    except Exception:  # noqa: BLE001 - Hydra's parser says it better, in its own run
        return
    plain = [text for text, o in zip(given, parsed, strict=True)
             if not o.is_sweep_override() and not o.key_or_group.startswith("hydra")]
    def _compose_and_probe() -> None:  # Hydra makes the run folder first: probe it here
        check_writable(config.compose_run_config(plain).paths.run_dir, "paths.results")

    code = main_guard(_compose_and_probe)
    if code:
        sys.exit(code)


def train_job(cfg: DictConfig) -> None:
    """Hydra's task function: exits 2 with one sentence on a user error."""
    code = main_guard(lambda: _train(cfg), extra_errors=_extra_errors())
    if code:
        sys.exit(code)


def _extra_errors() -> tuple[type[BaseException], ...]:
    from perfstudy.measure.profiling import ProfilerError
    from perfstudy.present.mlflow_store import TrackingError
    from perfstudy.run.train import DeviceError

    return DeviceError, ProfilerError, TrackingError


def _job_folder() -> tuple[Path, bool]:
    """The Hydra job's output folder and whether it is one job of a multirun."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra = HydraConfig.get()
    return Path(hydra.runtime.output_dir), hydra.mode == RunMode.MULTIRUN


def _prediction_bounds(cfg: DictConfig) -> tuple[float, ...]:
    """A prepared run whose rounds against its source decide a claim on the source's prediction
    of its step (paths.source_run, verify.against_source_prediction_bound): the gains at which
    that claim turns, decided by the rounds beside verify.against_source_bounds (as a claim's
    "5x" is). The config is not changed: what the run computed is what config.yaml says."""
    if not cfg.paths.source_run or cfg.verify.against_source_prediction_bound <= 0:
        return ()
    import logging

    from perfstudy.decide.remedy_proof import prediction_bounds

    found = prediction_bounds(cfg.paths.source_run, cfg.verify.against_source_prediction_bound)
    logging.getLogger(__name__).info(
        "the rounds against the source also decide the gains %s (%s's prediction within %g)",
        ", ".join(f"{b:.2f}x" for b in found) or "(none: no prediction)", cfg.paths.source_run,
        cfg.verify.against_source_prediction_bound)
    return tuple(found)


def _train(cfg: DictConfig) -> None:
    setup_logging()
    folder, multirun = _job_folder()
    cfg = config.checked(cfg)
    cfg.paths.run_dir = str(folder)
    if multirun:  # its own process, on the job's resolved config (kept in its folder)
        write_text_atomic(folder / "config.yaml", OmegaConf.to_yaml(cfg))
        done = subprocess.run([sys.executable, str(SCRIPT), "--config-path", str(folder.resolve()),
                               "--config-name", "config", f"hydra.run.dir={folder.resolve()}",
                               "hydra.output_subdir=null", "hydra/job_logging=none",
                               "hydra/hydra_logging=none"], check=False)
        if done.returncode:
            sys.exit(done.returncode)
        return
    from perfstudy.orchestrate.analyze import propose
    from perfstudy.present import live
    from perfstudy.run import train

    # a claim on the source's prediction of this prepared run's step: the gains where it turns
    remedy_bounds = _prediction_bounds(cfg)
    # the pairs earlier runs' rounds settled are not measured again (verify.reuse_from)
    propose = functools.partial(propose, reused=list(cfg.paths.reused), max_rounds=cfg.verify.max_rounds)
    # the arm's MLflow run, opened now and fed as the steps happen (None: no tracker to attach to)
    opened = live.open_live(cfg, cfg.paths.run_dir)
    if opened is None:  # the model (decide/) proposes the settings the training then measures
        train.run(cfg, manifest_path=cfg.paths.manifest, propose=propose,
                  remedy_bounds=remedy_bounds)
        return
    live.end_on_signal(opened)
    try:
        train.run(cfg, manifest_path=cfg.paths.manifest, propose=propose, on_step=opened.on_step,
                  remedy_bounds=remedy_bounds)
    except BaseException as exc:
        opened.end(live.status_of(exc))
        raise
    opened.end(live.status_of(None))
