"""Whether this machine's MindSpore can run a configured device, asked before any work.

device=gpu or device=ascend trains on an accelerator (the article's kind); on a CPU-only install
the study refuses when it starts (the Snakefile's onstart; scripts/train.py before its data), in
one sentence, before any data is built."""

from __future__ import annotations

import contextlib
import os
import sys

from perfstudy.common.config import ConfigError

CPU = "CPU"


def available(target: str) -> bool:
    """Whether MindSpore's build here has `target` (mindspore.hal.is_available); CPU always."""
    if target == CPU:
        return True
    with _quiet():  # the loader prints each accelerator library it cannot open
        from mindspore import hal
        return bool(hal.is_available(target))


def check(name: str, target: str, where: str, set_by: str | None = None) -> None:
    """ConfigError in one sentence when device `name` (its MindSpore `target`) cannot run here
    (`where`: the arm or run; `set_by`: what chose it, where not the user's overrides)."""
    if available(target):
        return
    origin = f" (set by {set_by})" if set_by else ""
    raise ConfigError(
        f"{where}: device={name}{origin} trains on {target}, which this MindSpore install cannot "
        f"run (its build has no {target}); add device=cpu to the overrides to run on the CPU, or "
        f"install MindSpore's {target} build on a machine with the device.")


@contextlib.contextmanager
def _quiet():
    """Silence file descriptors 1 and 2 (C++ prints go past sys.stdout)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)
