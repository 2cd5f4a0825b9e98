"""What a run reads, for any manifest: a generated or user ImageFolder (perfstudy.data.dataset)
or a prepared MindRecord (perfstudy.data.prepare). The one place that knows both, so neither
imports the other's reader."""

from __future__ import annotations

from typing import Any

from perfstudy.data import dataset, prepare


def verify(manifest: dict[str, Any]) -> None:
    """Check the dataset is still what its manifest lists (DatasetError names the difference)."""
    if manifest.get("source") == "prepared":
        prepare.verify(manifest)
    else:
        dataset.verify_manifest(manifest)


def training_source(manifest: dict[str, Any]) -> str:
    """What the pipeline reads: the ImageFolder, or a prepared dataset's MindRecord file."""
    if manifest.get("source") == "prepared":
        return prepare.record_path(manifest)
    return str(manifest["root"])
