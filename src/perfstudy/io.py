"""Small file helpers: every output is written whole or not at all."""

from __future__ import annotations

import json
import os
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


def write_csv(path: str | Path, frame: pd.DataFrame) -> Path:
    """Atomically write a CSV without the index."""
    return write_text_atomic(path, frame.to_csv(index=False))
