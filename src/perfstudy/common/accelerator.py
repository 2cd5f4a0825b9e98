"""What accelerator a run trained on, as environment.json records it: the device's model, how
many there are, the driver and the runtime (CUDA or CANN) and its version, and where each fact
was read. On the CPU every field is there and empty: a reader never guesses whether a fact was
not recorded or does not apply.

NVIDIA: nvidia-ml-py (pynvml, what MLflow's GPU monitor uses) where it imports and finds a
driver, else `nvidia-smi`. Ascend: `npu-smi info` and the CANN toolkit's version file. Neither
has run on an accelerator in this repository (docs/accelerators.md); the parsers are tested on
the tools' recorded output formats.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from perfstudy.common.records import doc


@dataclass(frozen=True)
class DeviceFacts:
    """The accelerator a run trained on (all None on the CPU)."""

    target: str = doc("MindSpore's device_target: CPU | GPU | Ascend")
    model: str | None = doc("the device's model name (the first device's)", default=None)
    count: int | None = doc("devices visible to the run", default=None)
    driver: str | None = doc("the driver's version", default=None)
    runtime: str | None = doc("CUDA | CANN", default=None)
    runtime_version: str | None = doc("the runtime's version", default=None)
    source: str | None = doc("where the facts were read (nvidia-ml-py, nvidia-smi, npu-smi), or "
                             "why none could be", default=None)


def facts(target: str) -> DeviceFacts:
    """The facts of the device `target` names, read where this process runs."""
    if target == "GPU":
        return _nvml() or _nvidia_smi() or DeviceFacts(
            target, runtime="CUDA", source="neither nvidia-ml-py nor nvidia-smi answered")
    if target == "Ascend":
        return _ascend()
    return DeviceFacts(target)


def _nvml() -> DeviceFacts | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - not installed, or no driver: try nvidia-smi
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0)) if count else None
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()  # e.g. 12040
        return DeviceFacts("GPU", model=_text(name), count=count,
                           driver=_text(pynvml.nvmlSystemGetDriverVersion()), runtime="CUDA",
                           runtime_version=f"{cuda // 1000}.{cuda % 1000 // 10}", source="nvidia-ml-py")
    except Exception:  # noqa: BLE001 - a driver that answers init but not the queries
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _run(*args: str) -> str | None:
    if shutil.which(args[0]) is None:
        return None
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _nvidia_smi() -> DeviceFacts | None:
    rows = _run("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader")
    if not rows or not rows.strip():
        return None
    first = [part.strip() for part in rows.strip().splitlines()[0].split(",")]
    header = _run("nvidia-smi") or ""
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", header)
    return DeviceFacts("GPU", model=first[0], count=len(rows.strip().splitlines()),
                       driver=first[1] if len(first) > 1 else None, runtime="CUDA",
                       runtime_version=cuda.group(1) if cuda else None, source="nvidia-smi")


# npu-smi info's table: a row per chip starts "| <NPU id>  <name>  | <health> ..."
_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+([0-9A-Za-z][\w.-]*)\s+\|\s*(OK|Warning|Alarm|Critical)", re.M)


def _ascend() -> DeviceFacts:
    table = _run("npu-smi", "info") or ""
    chips = _NPU_ROW.findall(table)
    driver = re.search(r"Version:\s*([\w.-]+)", table)
    return DeviceFacts("Ascend", model=chips[0][1] if chips else None,
                       count=len(chips) if chips else None,
                       driver=driver.group(1) if driver else None, runtime="CANN",
                       runtime_version=cann_version(),
                       source="npu-smi" if chips else "npu-smi did not answer")


def cann_version(home: str | None = None) -> str | None:
    """The CANN toolkit's version: `version=` in its version.cfg or *install.info, under
    ASCEND_HOME_PATH (the toolkit's set_env.sh exports it) or the default install path."""
    root = Path(home or os.environ.get("ASCEND_HOME_PATH")
                or "/usr/local/Ascend/ascend-toolkit/latest")
    for name in ("version.cfg", "ascend_toolkit_install.info", "*/ascend_toolkit_install.info"):
        for path in sorted(root.glob(name)):
            found = re.search(r"^\s*(?:toolkit_installed_)?version\s*=\s*\[?([\w.-]+)",
                              path.read_text(errors="replace"), re.M | re.I)
            if found:
                return found.group(1)
    return None
