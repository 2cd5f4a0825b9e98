"""Custom transforms for pipeline.extra_transform (a map after the case study's).

`Sleep` stands in for an expensive transform of a user's own (a Python augmentation, a
slow decoder): it passes the image through after waiting, so a test can check that the
diagnosis names it as the slow operator. Any "module:Callable" that maps a numpy image
to a numpy image works the same way.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np


class Sleep:
    """Return the image unchanged after `milliseconds` of waiting (a slow I/O-like step)."""

    def __init__(self, milliseconds: float = 50.0) -> None:
        self.milliseconds = float(milliseconds)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        time.sleep(self.milliseconds / 1e3)
        return image


def load_transform(spec: str, args: dict[str, Any] | None = None) -> Callable:
    """Import "module:Callable"; a class is instantiated with `args`, a function returned as is."""
    module_name, _, attr = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"pipeline.extra_transform {spec!r} cannot be imported ({exc}); "
                         "give 'module:Callable' importable from this environment.") from None
    if isinstance(target, type):
        return target(**(args or {}))
    if args:
        raise ValueError(f"pipeline.extra_transform {spec!r} is a function, so "
                         "pipeline.extra_transform_args must be empty.")
    return target
