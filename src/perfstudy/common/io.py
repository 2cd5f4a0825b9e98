"""Small file helpers: every output is written whole or not at all."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write via a temporary file and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def write_json(path: str | Path, data: Any) -> Path:
    """Atomically write pretty JSON."""
    return write_text_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def read_json(path: str | Path) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text())


def read_table(path: str | Path) -> pd.DataFrame | None:
    """A CSV as a frame, or None when the file is missing or has no rows (e.g. profiler off)."""
    path = Path(path)
    frame = pd.read_csv(path) if path.is_file() else None
    return frame if frame is not None and len(frame) else None


def write_csv(path: str | Path, frame: pd.DataFrame) -> Path:
    """Atomically write a CSV without the index."""
    return write_text_atomic(path, frame.to_csv(index=False))


class OutputError(ValueError):
    """An output folder cannot be written; the message names it and the fix."""


def check_writable(folder: str | Path, setting: str) -> None:
    """Fail early, in one sentence, when `folder` cannot be created or written.

    Probes the nearest existing ancestor with a temporary folder (removed at once), so
    nothing is left behind and the check also holds for root, for whom permission bits
    alone say nothing (e.g. on /proc).
    """
    path = Path(folder).expanduser().absolute()
    ancestor = path
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    fix = f"set {setting} to a folder you can write, e.g. {setting}=/tmp/perfstudy-results"
    if not ancestor.is_dir():
        raise OutputError(f"The output folder {folder} cannot be created: {ancestor} is a file; {fix}.")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".perfstudy-probe-", dir=ancestor))
    except OSError as exc:
        raise OutputError(f"The output folder {folder} cannot be written ({exc.strerror} in "
                          f"{ancestor}); {fix}.") from None
