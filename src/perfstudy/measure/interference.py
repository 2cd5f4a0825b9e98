"""What else used the machine while a window was measured: other processes, the hypervisor.

A window's step is only evidence about a setting if the machine was ours while it ran. Linux
says how much it was not: /proc/stat's CPU time (busy, and `steal`: time a virtual CPU was ready
but the hypervisor ran someone else), our own process tree's CPU time (psutil: this process, its
reaped and its live children: the pipeline's worker processes), and, where the kernel has PSI,
/proc/pressure/cpu (time some task waited for a CPU). Other processes' CPU = the machine's busy
time less our tree's.

A window is *disturbed* when other processes and steal together took more than
`limit` (verify.max_interference: 10 % by default, the gain that matters) of all CPUs' time
over it: on a machine whose cores the pipeline and the network already fill, a tenth of the
CPU time going elsewhere can move a step by about as much as the effects being decided.
CPU pressure is recorded but never decides: our own workers and network compete for the
cores, so it is high on an undisturbed input-bound run too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from perfstudy.common.records import doc
from perfstudy.common.thresholds import pct

PRESSURE = Path("/proc/pressure/cpu")
STAT = Path("/proc/stat")


@dataclass(frozen=True)
class Load:
    """Counters at one instant (seconds, summed over all CPUs)."""

    wall_s: float
    total_s: float  # all CPU time, idle included
    busy_s: float  # user, nice, system, irq, softirq
    steal_s: float
    own_s: float  # this process tree's CPU time
    pressure_s: float | None  # /proc/pressure/cpu 'some' total (None where absent)


@dataclass(frozen=True)
class Interference:
    """What the machine did besides our training during one window."""

    wall_s: float = doc("the window's wall time")
    others: float = doc("other processes' CPU time, as a share of all CPUs' time")
    steal: float = doc("CPU time stolen by the hypervisor, as a share of all CPUs' time")
    pressure: float | None = doc("share of the wall time some task waited for a CPU "
                                 "(/proc/pressure/cpu; recorded, never decides)", default=None)

    def reason(self, limit: float) -> str | None:
        """Why the window is disturbed at `limit`, in words (None: it is not)."""
        if self.others + self.steal <= limit:
            return None
        parts = [f"other processes {pct(self.others)}" if self.others >= 0.005 else "",
                 f"steal {pct(self.steal)}" if self.steal >= 0.005 else ""]
        return (f"{' and '.join(p for p in parts if p)} of the CPU time "
                f"(over the {pct(limit)} a window may lose)")


def _tree_cpu_s() -> float:
    me = psutil.Process()
    t = me.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in me.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.Error:  # gone between listing and reading: its time is in children_*
            continue
    return total


def _pressure_s() -> float | None:
    try:
        for line in PRESSURE.read_text().splitlines():
            if line.startswith("some"):
                return int(line.rsplit("total=", 1)[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return None
    return None


def snapshot() -> Load:
    """The counters now."""
    fields = [int(v) for v in STAT.read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    hz = os.sysconf("SC_CLK_TCK")
    return Load(time.monotonic(), sum(fields) / hz, (user + nice + system + irq + softirq) / hz,
                steal / hz, _tree_cpu_s(), _pressure_s())


def between(before: Load, after: Load) -> Interference:
    """What the machine did besides us from `before` to `after`."""
    total = max(after.total_s - before.total_s, 1e-9)
    wall = after.wall_s - before.wall_s
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    pressure = None
    if before.pressure_s is not None and after.pressure_s is not None and wall > 0:
        pressure = min(1.0, (after.pressure_s - before.pressure_s) / wall)
    return Interference(wall, max(0.0, others / total),
                        max(0.0, (after.steal_s - before.steal_s) / total), pressure)
