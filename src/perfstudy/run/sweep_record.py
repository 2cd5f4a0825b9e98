"""A sweep measured in interleaved rounds, as a record (summary.json's `sweep`). Light: read by
every later stage without importing MindSpore. Measured by perfstudy.run.sweep; each setting's
place against the best decided by perfstudy.measure.nearbest.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfstudy.common.records import doc
from perfstudy.common.thresholds import GAIN_THAT_MATTERS
from perfstudy.measure import nearbest
from perfstudy.measure.nearbest import Placed
from perfstudy.measure.rounds import Rounds
from perfstudy.run.settings import MP, Settings


def label(workers: int, processes: bool) -> str:
    """A swept setting as a user reads it: 2, or 2 (processes)."""
    return f"{workers}{' (processes)' if processes else ''}"


@dataclass(frozen=True)
class SweepPoint:
    """One swept setting: the run's operator settings with the swept key set."""

    settings: Settings = doc("every sized operator's workers (and processes), the swept key set")
    label: str = doc("the swept key's value as a user types it: 2, or 2 (processes)")
    workers: int = doc("the swept key's workers")
    processes: bool = doc("the swept operator's Python in worker processes")


@dataclass(frozen=True)
class Sweep:
    """Every setting of one operator measured in interleaved rounds (summary.json `sweep`)."""

    key: str = doc("the settings key swept")
    points: list[SweepPoint] = doc("the settings, in the rounds' indices")
    rounds: Rounds = doc("every round and window")
    training_wall_s: float = doc("the training's wall time before the sweep")
    budget_share: float = doc("sweep.budget_share: the rounds' budget as a share of it")

    def placed(self, margin: float = GAIN_THAT_MATTERS) -> list[Placed]:
        """Each point within `margin` of the best or not, decided (perfstudy.measure.nearbest)."""
        return nearbest.place(self.rounds, margin)

    def index(self, workers: int, processes: bool) -> int | None:
        """The point at these workers (threads or processes); None: not swept."""
        return next((i for i, p in enumerate(self.points)
                     if p.workers == workers and p.processes == processes), None)


def points(key: str, values: list[int], processes: bool, own: Settings) -> list[SweepPoint]:
    """The sweep's settings: each value in threads (and in processes when asked), the run's
    other operators as they are."""
    out = []
    for value in values:
        for in_processes in ([False, True] if processes else [False]):
            settings = {k: v for k, v in own.items() if k != key + MP}
            settings[key] = int(value)
            if in_processes:
                settings[key + MP] = True
            out.append(SweepPoint(settings, label(int(value), in_processes), int(value), in_processes))
    return out
