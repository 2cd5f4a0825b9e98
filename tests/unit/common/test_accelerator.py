"""environment.json's device fields: named and empty on the CPU, read from the vendor's tools on
an accelerator (fake nvidia-smi / npu-smi on PATH, with the tools' output formats)."""

import os
import stat
import sys

import pytest

from perfstudy.common import accelerator, provenance

FIELDS = {"target", "model", "count", "driver", "runtime", "runtime_version", "source"}

NVIDIA_SMI = """#!/bin/sh
if [ "$1" = "--query-gpu=name,driver_version" ]; then
  echo "NVIDIA H100 80GB HBM3, 550.54.15"
  echo "NVIDIA H100 80GB HBM3, 550.54.15"
  exit 0
fi
cat <<'T'
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
+-----------------------------------------------------------------------------------------+
T
"""

NPU_SMI = """#!/bin/sh
cat <<'T'
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.6                   Version: 23.0.6                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.6        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 90.1        41                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
T
"""


def _tool(folder, name, text):
    path = folder / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_on_the_cpu_every_device_field_is_named_and_empty():
    env = provenance.environment("CPU")
    assert set(env["device"]) == FIELDS
    assert env["device"]["target"] == "CPU"
    assert all(env["device"][k] is None for k in FIELDS - {"target"})
    assert provenance.full_environment("CPU")["device"] == env["device"]


def test_a_gpu_is_read_from_nvidia_smi_where_nvidia_ml_py_has_no_driver(tmp_path, monkeypatch):
    _tool(tmp_path, "nvidia-smi", NVIDIA_SMI)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not importable: the tool answers
    found = accelerator.facts("GPU")
    assert (found.model, found.count, found.driver, found.runtime, found.runtime_version,
            found.source) == ("NVIDIA H100 80GB HBM3", 2, "550.54.15", "CUDA", "12.4", "nvidia-smi")


def test_a_gpu_that_nothing_answers_for_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    monkeypatch.setitem(sys.modules, "pynvml", None)
    found = accelerator.facts("GPU")
    assert found.model is None and found.runtime == "CUDA"
    assert found.source == "neither nvidia-ml-py nor nvidia-smi answered"


def test_an_ascend_is_read_from_npu_smi_and_the_cann_version_file(tmp_path, monkeypatch):
    tools, cann = tmp_path / "bin", tmp_path / "cann"
    tools.mkdir()
    (cann / "aarch64-linux").mkdir(parents=True)
    (cann / "aarch64-linux" / "ascend_toolkit_install.info").write_text(
        "package_name=Ascend-cann-toolkit\nversion=8.0.RC2\ninnerversion=V100R001C18\n")
    _tool(tools, "npu-smi", NPU_SMI)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(cann))
    found = accelerator.facts("Ascend")
    assert (found.model, found.count, found.driver, found.runtime, found.runtime_version,
            found.source) == ("910B3", 2, "23.0.6", "CANN", "8.0.RC2", "npu-smi")


@pytest.mark.parametrize("text, version", [("version=7.0.0\n", "7.0.0"),
                                           ("Version=8.1.RC1\n", "8.1.RC1"), ("nothing\n", None)])
def test_the_cann_version_file(tmp_path, text, version):
    (tmp_path / "version.cfg").write_text(text)
    assert accelerator.cann_version(str(tmp_path)) == version
