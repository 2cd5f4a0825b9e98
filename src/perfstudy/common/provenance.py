"""What a run was made with: code version, software, machine."""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
import sys
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from perfstudy.common import accelerator

REPO_ROOT = Path(__file__).resolve().parents[3]
KEY_PACKAGES = ("mindspore", "snakemake", "mlflow", "pandas", "hydra-core", "numpy", "pillow")


def cpu_count() -> int:
    """CPUs this process may use (respects affinity masks, e.g. under Snakemake/SLURM)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def git_state(repo: Path = REPO_ROOT) -> dict[str, object]:
    """Commit sha of the code and whether the work tree had uncommitted changes."""
    def _git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              check=True, timeout=20).stdout.strip()
    try:
        sha = _git("rev-parse", "HEAD")
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return {"git_sha": "unknown", "git_dirty": None}
    return {"git_sha": sha, "git_dirty": dirty}


def git_origin(repo: Path = REPO_ROOT) -> dict[str, str]:
    """The checkout's branch and its origin's URL (each left out when git cannot say)."""
    found = {}
    for key, args in (("branch", ("rev-parse", "--abbrev-ref", "HEAD")),
                      ("repo_url", ("config", "--get", "remote.origin.url"))):
        try:
            value = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                                   timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if value and value != "HEAD":
            found[key] = value
    return found


def _proc_value(name: str, prefix: str) -> str | None:
    """The value after the colon of the first line of /proc/<name> that starts with prefix."""
    try:
        for line in Path("/proc", name).read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (platform's guess elsewhere)."""
    return _proc_value("cpuinfo", "model name") or platform.processor() or "unknown"


def mindspore_build() -> dict[str, object]:
    """MindSpore's version and the commit it was built from (its package's .commit_id)."""
    try:
        import mindspore
    except ImportError:
        return {"version": None, "commit": None}
    commit_file = Path(mindspore.__file__).parent / ".commit_id"
    commit = None
    if commit_file.is_file():
        text = commit_file.read_text().strip()  # __commit_id__ = '[sha1]:2d550373,[branch]:(...)'
        found = re.search(r"\[sha1\]:([0-9a-fA-F]+)", text)
        commit = found.group(1) if found else text
    return {"version": mindspore.__version__, "commit": commit,
            "package": str(Path(mindspore.__file__).parent)}


def pip_freeze() -> list[str]:
    """Every installed distribution as name==version, sorted (pip freeze without pip)."""
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[name.lower()] = f"{name}=={dist.version}"
    return [found[key] for key in sorted(found)]


def cpu_flags() -> list[str]:
    """The SIMD extensions the CPU reports (oneDNN's kernel choice depends on them)."""
    flags = (_proc_value("cpuinfo", "flags") or "").split()
    return sorted(f for f in flags if f.startswith(("avx", "sse4", "amx", "fma")))


def memory_gib() -> float | None:
    total = _proc_value("meminfo", "MemTotal:")  # "24576000 kB"
    return round(int(total.split()[0]) / 2**20, 1) if total else None


def full_environment(device_target: str = "CPU") -> dict[str, object]:
    """environment.json of a run: the short facts plus every package, MindSpore's build,
    the CPU's SIMD flags, memory and the interpreter (an artifact of every MLflow run)."""
    uname = platform.uname()
    return {
        **environment(device_target),
        "mindspore_build": mindspore_build(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "python_prefix": sys.prefix,
        "kernel": f"{uname.system} {uname.release} {uname.machine}",
        "libc": " ".join(platform.libc_ver()),
        "cpu_flags": cpu_flags(),
        "memory_gib": memory_gib(),
        "pip_freeze": pip_freeze(),
    }


def scheduler() -> dict[str, object] | None:
    """The batch job this process runs in (SLURM's variables), or None outside one."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return None
    return {"name": "slurm", "job_id": job, "cluster": os.environ.get("SLURM_CLUSTER_NAME"),
            "partition": os.environ.get("SLURM_JOB_PARTITION"),
            "node": os.environ.get("SLURMD_NODENAME"),
            "cpus_on_node": os.environ.get("SLURM_CPUS_ON_NODE")}


def environment(device_target: str = "CPU") -> dict[str, object]:
    """Machine and software facts recorded with every run (summary.json); `device`: the
    accelerator's model, count, driver and runtime (perfstudy.common.accelerator; every
    field named and empty on the CPU)."""
    versions = {}
    for name in KEY_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "os": platform.platform(),
        "host": socket.gethostname(),
        "scheduler": scheduler(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": cpu_count(),
        "packages": versions,
        # oneDNN's ISA cap changes CPU kernel speed ~100x on some Intel machines (README).
        "onednn_max_cpu_isa": os.environ.get("ONEDNN_MAX_CPU_ISA"),
        "device": asdict(accelerator.facts(device_target)),
    }
