"""The data one training reads, before it trains: its factories checked, its dataset's manifest
made or found and checked against the files, the facts the summary records of it, and the
model's class count (a user folder may have more classes than model.num_classes)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from perfstudy.common.config import ConfigError
from perfstudy.data import dataset as data_mod
from perfstudy.data import prepare, sources
from perfstudy.data.prepared_record import PreparedFacts
from perfstudy.run import pipeline
from perfstudy.run.factories import load_target
from perfstudy.run.summary import DatasetFacts

log = logging.getLogger(__name__)


def model_classes(cfg, manifest: dict[str, Any]) -> int:
    """The model's class count: model.num_classes, raised to a user folder's class count (its
    labels are 0..classes-1: fewer outputs would train on out-of-range labels)."""
    folder = int(manifest.get("num_classes") or 0)
    if cfg.data.path and folder > cfg.model.num_classes:
        log.warning("%s has %d classes but model.num_classes is %d: building the model with %d "
                    "outputs (set model.num_classes=%d to silence this).", cfg.data.path, folder,
                    cfg.model.num_classes, folder, folder)
        return folder
    return cfg.model.num_classes


def remedy_settings(cfg) -> prepare.Settings | None:
    """The decode remedy's settings the probe prepares a decoding map's rows with (None when the
    run reads a prepared source already: the remedy is what it measures)."""
    return None if cfg.data.prepared else prepare.Settings.from_config(cfg)


def dataset_facts(cfg, manifest: dict[str, Any]) -> DatasetFacts:
    """What the summary records of the dataset: size, megapixels, and the megapixels it would
    have prepared at this config's bound (the decode remedy's prediction); a prepared one's
    source and preparation."""
    settings = prepare.Settings.from_config(cfg)
    prepared = (PreparedFacts.from_manifest(manifest) if manifest.get("source") == "prepared"
                else None)
    return DatasetFacts(
        source=manifest.get("source"), root=manifest.get("root"),
        num_images=manifest.get("num_images"), num_classes=manifest.get("num_classes"),
        total_bytes=manifest.get("total_bytes"), mean_megapixels=data_mod.mean_megapixels(manifest),
        bounded_megapixels=prepare.bounded_megapixels(data_mod.image_sizes(manifest), settings),
        bound_rule=settings.rule(), prepared=prepared)


def check_factories(cfg) -> None:
    """A factory that does not import, or a prepared source it cannot read, fails before any
    data work."""
    for key in ("model", "loss", "optimizer", "pipeline"):
        load_target(key, cfg[key]._target_)
    if (cfg.data.prepared and cfg.data.prepared_format == "mindrecord"
            and cfg.pipeline._target_ != pipeline.BUILTIN):
        raise ConfigError(f"data.prepared_format=mindrecord gives a MindRecord, which only the "
                          f"case study's pipeline reads, not {cfg.pipeline._target_}; drop "
                          "data.prepared_format (an ImageFolder copy is handed to your factory).")


def load_data(cfg, manifest_path: str | Path | None) -> dict[str, Any]:
    """The dataset's manifest: the given one, or the dataset the config names, made (and
    prepared) when missing; its files checked against it."""
    if manifest_path is None:
        manifest_path = data_mod.prepare_dataset(cfg.data, cfg.paths.data_root,
                                                 workers=pipeline.cpu_count())
        if cfg.data.prepared:
            settings = prepare.Settings.from_config(cfg)
            manifest_path = prepare.prepare(
                manifest_path, settings, prepare.prepared_dir(cfg.data, settings, cfg.paths.data_root),
                workers=pipeline.cpu_count())
    manifest = data_mod.load_manifest(manifest_path)
    if bool(cfg.data.prepared) != (manifest.get("source") == "prepared"):
        raise data_mod.DatasetError(
            f"data.prepared is {cfg.data.prepared} but {manifest_path} describes "
            f"{'a prepared' if manifest.get('source') == 'prepared' else 'a source'} dataset; "
            "pass the manifest of the dataset the config names (the DAG does).")
    sources.verify(manifest)  # a changed file is reported, never trained on silently
    return manifest
