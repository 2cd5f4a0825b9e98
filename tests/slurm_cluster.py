"""A real one-node SLURM cluster for the tests: munge, slurmctld and slurmd (Debian's 22.05
packages, which `make test` installs when missing), started without systemd in a temporary
folder and torn down by PID. No accounting: the workflow's status queries use squeue.

The SLURM daemons listen on the fixed ports 6817/6818: one such cluster per machine at a time.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PORTS = (6817, 6818)  # slurmctld, slurmd (slurm.conf below)
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scancel")


def missing_binaries() -> list[str]:
    """The cluster's programs that are not installed."""
    return [name for name in DAEMONS
            if not (shutil.which(name) or Path("/usr/sbin", name).exists())]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _memory_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 4096


class SlurmCluster:
    """munged + slurmctld + slurmd on this host as one node `<hostname>` in partition `cpu`."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="perfstudy-slurm-"))
        self.dir.chmod(0o755)  # munge's socket folder and its parents must be searchable by all
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.dir / "slurm.conf"
        self.bin = self.dir / "bin"
        self.processes: list[subprocess.Popen] = []

    # -- the environment a client (snakemake, sbatch, and the jobs) needs -----------------
    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """SLURM_CONF for the clients, and first on PATH an `srun` that sets it again: the
        plugin's job step strips every SLURM_* variable before it calls srun."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf)
        env["PATH"] = f"{self.bin}:{env.get('PATH', '')}"
        return env

    def _write_config(self) -> None:
        munge = self.dir / "munge"
        state = self.dir / "state"
        for folder in (munge, state, state / "ctld", state / "d", self.bin):
            folder.mkdir(parents=True, exist_ok=True)
        munge.chmod(0o755)
        cpus = os.cpu_count() or 1
        memory = max(1024, _memory_mib() - 2048)  # a margin for the daemons and the OS
        self.conf.write_text("\n".join([
            "ClusterName=perfstudy",
            f"SlurmctldHost={self.host}",
            "SlurmUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={munge / 'munge.socket'}",
            "CredType=cred/munge",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2",
            "MailProg=/bin/true",
            "MinJobAge=3600",  # squeue keeps every job of the module (it lasts minutes, more when slowed)
            "InactiveLimit=0",
            "KillWait=5",
            "OverTimeLimit=0",
            f"StateSaveLocation={state / 'ctld'}",
            f"SlurmdSpoolDir={state / 'd'}",
            f"SlurmctldPidFile={self.dir / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.dir / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.dir / 'slurmctld.log'}",
            f"SlurmdLogFile={self.dir / 'slurmd.log'}",
            "JobCompType=jobcomp/none",
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN",
            f"PartitionName=cpu Nodes={self.host} Default=YES MaxTime=INFINITE State=UP",
            ""]))
        wrapper = self.bin / "srun"
        wrapper.write_text(f"#!/bin/sh\nexport SLURM_CONF={self.conf}\nexec {shutil.which('srun')} \"$@\"\n")
        wrapper.chmod(0o755)

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.dir / f"{name}.out", "ab")  # noqa: SIM115 - closed with the process
        self.processes.append(subprocess.Popen([_binary(name), *args], stdout=log, stderr=log,
                                               start_new_session=True, env=self.env()))

    def start(self, timeout: float = 60) -> SlurmCluster:
        missing = missing_binaries()
        if missing:
            raise RuntimeError(f"SLURM is not installed ({', '.join(missing)} missing); run `make "
                               "test` (it installs Debian's slurm-wlm and munge) or apt-get install "
                               "slurm-wlm slurmctld slurmd slurm-client munge.")
        self._free_ports(timeout)
        self._write_config()
        keys = self.dir / "munge-key"
        keys.mkdir(mode=0o700)
        key = keys / "munge.key"
        subprocess.run([_binary("mungekey"), "--create", f"--keyfile={key}"], check=True,
                       capture_output=True, timeout=30)
        munge = self.dir / "munge"
        self._spawn("munged", "-F", f"--key-file={key}", f"--socket={munge / 'munge.socket'}",
                    f"--pid-file={munge / 'munged.pid'}", f"--log-file={munge / 'munged.log'}",
                    f"--seed-file={munge / 'munged.seed'}")
        self._wait(lambda: (munge / "munge.socket").exists(), timeout, "munged")
        self._spawn("slurmctld", "-D", "-i", "-f", str(self.conf))
        self._spawn("slurmd", "-D", "-f", str(self.conf))
        self._wait(lambda: self.node_state() == "idle", timeout, "slurmctld/slurmd")
        return self

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            if any(p.poll() is not None for p in self.processes):
                break
            time.sleep(0.3)
        logs = {p.name: p.read_text()[-800:] for p in self.dir.glob("*.log")}
        self.stop()
        raise RuntimeError(f"{what} did not come up within {timeout:.0f} s; logs: {logs}")

    def node_state(self) -> str:
        result = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True,
                                env=self.env(), timeout=20)
        return result.stdout.strip()

    def jobs(self) -> list[dict[str, str]]:
        """Jobs SLURM knows (running, and finished within MinJobAge, an hour): id, name, state."""
        result = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%j|%T|%k"],
                                capture_output=True, text=True, env=self.env(), timeout=20)
        rows = [line.split("|", 3) for line in result.stdout.splitlines() if line.strip()]
        return [{"id": r[0], "name": r[1], "state": r[2], "comment": r[3]} for r in rows]

    def cancel(self, job_id: str) -> None:
        subprocess.run(["scancel", job_id], check=True, capture_output=True, env=self.env(),
                       timeout=20)

    def stop(self) -> None:
        """Cancel every job (a failed test may leave one running), SIGTERM every daemon, SIGKILL
        what is left after a few seconds, remove the folder."""
        if self.processes and all(p.poll() is None for p in self.processes):
            live = [j["id"] for j in self.jobs() if j["state"] in ("RUNNING", "PENDING", "COMPLETING")]
            if live:
                subprocess.run(["scancel", *live], capture_output=True, env=self.env(), timeout=20)
                deadline = time.time() + 20
                while time.time() < deadline and any(
                        j["state"] in ("RUNNING", "COMPLETING") for j in self.jobs()):
                    time.sleep(0.5)
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.time() + 8
        for process in reversed(self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # slurmd ignores SIGTERM without slurmctld
                process.wait(timeout=10)
        self.processes.clear()
        for pid in _holders(PORTS):  # a job step left behind may still hold slurmd's socket
            _kill_slurm(pid)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _free_ports(self, timeout: float) -> None:
        """Wait for 6817/6818 to be free (a cluster stopped just before may still be letting
        go); a SLURM daemon or job step still listening on them is killed, anything else named."""
        deadline = time.time() + timeout
        while (pids := _holders(PORTS)) and time.time() < deadline:
            for pid in pids:
                _kill_slurm(pid)
            time.sleep(0.5)
        if pids:
            raise RuntimeError(f"SLURM's ports {PORTS} are held by process(es) {sorted(pids)} "
                               f"({', '.join(_command_of(p) for p in pids)}); stop them, then run "
                               "the SLURM tests again.")


def _listening_inodes(ports: tuple[int, ...]) -> set[str]:
    """Socket inodes listening (state 0A) on the ports, from /proc/net/tcp and tcp6."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) in ports:
                inodes.add(fields[9])
    return inodes


def _holders(ports: tuple[int, ...]) -> set[int]:
    """PIDs that hold a socket listening on one of the ports (those /proc lets us read)."""
    inodes = _listening_inodes(ports)
    if not inodes:
        return set()
    pids = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    pids.add(int(fd_dir.parent.name))
                    break
        except OSError:
            continue
    return pids


def _kill_slurm(pid: int) -> None:
    """SIGKILL a left-over slurmctld, slurmd or slurmstepd; leave any other program alone."""
    if not _command_of(pid).startswith(("slurm", "/usr/sbin/slurm")):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"
