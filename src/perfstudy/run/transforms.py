"""Custom transforms for pipeline.extra_transform (a map after the case study's).

`Sleep` stands in for a transform that waits (I/O, a remote service), `PythonBurn` for one
that computes in Python (holding the GIL), `BatchBlur` for a vectorised per-batch one. Two inject
conditions a test needs, whatever the CPU's speed: `Gate` holds a training at a known step
until a file appears (a job that must overrun its time limit, or be killed or cancelled
mid-run), `HoldFirst` holds the first batch so the queues behind it fill (a window served
from buffered batches, as during the article's compile). Each
passes the data through unchanged in shape, so the diagnosis benchmark (study `scenarios`)
can check that the diagnosis names the right operator and setting. Any "module:Callable" that maps a numpy image
to a numpy image works the same way.
"""

from __future__ import annotations

import importlib
import os
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


class PythonBurn:
    """Return the image unchanged after `milliseconds` of CPU work in pure Python.

    It holds the GIL while it works (a Python loop, like a hand-written augmentation), so
    MindSpore's thread workers cannot run two of it at once; worker processes can.
    """

    def __init__(self, milliseconds: float = 20.0) -> None:
        self.milliseconds = float(milliseconds)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        deadline = time.thread_time() + self.milliseconds / 1e3  # CPU time of this thread
        count = 0
        while time.thread_time() < deadline:
            count += 1
        return image


class Gate:
    """Pass `after` images through, then hold every further one until `path` exists.

    The training then blocks at a known step (the one whose batch needs image `after` + 1,
    less the batches already queued) for as long as the file is missing: a test that needs a
    job killed, cancelled or cut by its time limit mid-run forces it with this instead of
    racing the clock. Run it with one thread worker (the default), so the count is exact.
    """

    def __init__(self, path: str, after: int = 0, poll_ms: float = 100.0) -> None:
        self.path, self.after, self.poll_s = str(path), int(after), float(poll_ms) / 1e3
        self.passed = 0

    def __call__(self, image: np.ndarray) -> np.ndarray:
        self.passed += 1
        while self.passed > self.after and not os.path.exists(self.path):
            time.sleep(self.poll_s)
        return image


class HoldFirst:
    """A per-batch map that holds the first batch of this process for `seconds`, then passes
    every batch through unchanged: the operators before it keep working and fill their queues,
    as they do while a graph compiles, so the steps after it are served from buffered batches."""

    _held = False  # once per process: the calibration and probe pipelines are not held

    def __init__(self, seconds: float = 10.0) -> None:
        self.seconds = float(seconds)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        if not HoldFirst._held:
            HoldFirst._held = True
            time.sleep(self.seconds)
        return batch


class BatchBlur:
    """A per-batch augmentation in NumPy: `passes` 3x3 box blurs of the whole batch (NCHW).

    Vectorised: NumPy releases the GIL inside each array operation, so it sits between a
    pure-Python transform and a C++ one; how it scales with workers is measured, not assumed.
    """

    def __init__(self, passes: int = 8) -> None:
        self.passes = int(passes)

    def __call__(self, batch: np.ndarray) -> np.ndarray:
        out = batch.astype(np.float32, copy=True)
        for _ in range(self.passes):
            padded = np.pad(out, ((0, 0), (0, 0), (1, 1), (1, 1)), mode="edge")
            out = sum(padded[:, :, dy:dy + out.shape[2], dx:dx + out.shape[3]]
                      for dy in range(3) for dx in range(3)) / 9.0
        return out.astype(batch.dtype, copy=False)


# The held-out benchmark transforms: kinds of Python work the study's own three (Sleep,
# PythonBurn, BatchBlur) are not, each a fixed amount of work (not a deadline, so a faster CPU
# runs it faster, as a user's would). Two of them (PillowFilter, MixedCost) are kept out of any
# fitting of the advisor's model: their scenarios check it (README, "Held-out transforms").

def _loop(iterations: int) -> int:
    """`iterations` of pure-Python arithmetic (holds the GIL throughout)."""
    total = 0
    for i in range(iterations):
        total = (total + i * i) % 1_000_003
    return total


class PythonLoop:
    """Return the input unchanged after a fixed pure-Python loop of `iterations` (per image, or
    per batch as a batch_transform): a hand-written augmentation that holds the GIL."""

    def __init__(self, iterations: int = 200_000) -> None:
        self.iterations = int(iterations)

    def __call__(self, data: np.ndarray) -> np.ndarray:
        _loop(self.iterations)
        return data


class NumpyFFT:
    """`passes` forward and inverse 2-D FFTs of the image upsampled to `size` px: NumPy work
    that releases the GIL inside each call. Returns the image unchanged."""

    def __init__(self, passes: int = 4, size: int = 256) -> None:
        self.passes, self.size = int(passes), int(size)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        plane = np.resize(image.astype(np.float32), (self.size, self.size))
        for _ in range(self.passes):
            plane = np.fft.ifft2(np.fft.fft2(plane)).real.astype(np.float32)
        return image


class PillowFilter:
    """A Pillow Gaussian blur (radius `radius`) of the image upsampled to `size` px, then the
    input returned: C code behind a Python call, as most PIL-based augmentations. Held out."""

    def __init__(self, radius: float = 4.0, size: int = 384, passes: int = 1) -> None:
        self.radius, self.size, self.passes = float(radius), int(size), int(passes)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        from PIL import Image, ImageFilter

        plane = image[0] if image.ndim == 3 and image.shape[0] <= 4 else image[..., 0]
        pixels = np.clip(plane * 32 + 128, 0, 255).astype(np.uint8)
        picture = Image.fromarray(pixels).resize((self.size, self.size))
        for _ in range(self.passes):
            picture = picture.filter(ImageFilter.GaussianBlur(self.radius))
        return image


class MixedCost:
    """A per-call cost that varies (uniform within +-`jitter` of its mean, drawn from `seed`
    and the call count) and is half waiting (`wait_ms`) and half computing (a pure-Python
    loop of `iterations`), both scaled by the same draw: a remote lookup plus a decode. Held out."""

    def __init__(self, wait_ms: float = 10.0, iterations: int = 100_000, jitter: float = 0.5,
                 seed: int = 0) -> None:
        self.wait_ms, self.iterations, self.jitter = float(wait_ms), int(iterations), float(jitter)
        self.rng = np.random.default_rng(seed)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        scale = 1 + self.jitter * (2 * float(self.rng.random()) - 1)
        time.sleep(self.wait_ms * scale / 1e3)
        _loop(int(self.iterations * scale))
        return image


def load_transform(spec: str, args: dict[str, Any] | None = None,
                   key: str = "pipeline.extra_transform") -> Callable:
    """Import "module:Callable"; a class is instantiated with `args`, a function returned as is."""
    module_name, _, attr = spec.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{key} {spec!r} cannot be imported ({exc}); "
                         "give 'module:Callable' importable from this environment.") from None
    if isinstance(target, type):
        return target(**(args or {}))
    if args:
        raise ValueError(f"{key} {spec!r} is a function, so {key}_args must be empty.")
    return target
