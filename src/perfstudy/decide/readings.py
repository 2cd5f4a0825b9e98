"""The peer tools' readings of one run, in our terms (made by perfstudy.decide.peers; kept in
diagnosis.json's `peers`): each tool's operator, the config key sizing it, its knob, its advice
in words and, where it is a worker count of a keyed operator, the settings a sweep can score."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfstudy.common.records import doc
from perfstudy.run.settings import Settings


@dataclass(frozen=True)
class Reading:
    """One tool's answer on a run."""

    tool: str = doc("the tool: perfstudy, MindSpore's MindData analyzer, Dataset AutoTune")
    operator: str | None = doc("the operator it names, as the report labels it (None: none)",
                               default=None)
    key: str | None = doc("the config key sizing that operator (None: no key does)", default=None)
    knob: str | None = doc("workers | prefetch_size | None", default=None)
    advice: str = doc("its advice in words", default="")
    settings: Settings | None = doc("its advice as settings a sweep can place (worker counts "
                                    "of keyed operators only)", default=None)
    error: str | None = doc("why the tool could not run (None: it ran)", default=None)
    raw: dict[str, Any] | None = doc("the tool's own output as it gave it (MindSpore's "
                                     "analyzer: its warning, suggestion and parsed fields)",
                                     default=None)
    operators: list[str] = doc("AutoTune: every operator's settled workers and prefetch",
                               default_factory=list)
    step_ms: float | None = doc("AutoTune: the step its arm measured", default=None)
    speedup: float | None = doc("AutoTune: the baseline's step over its", default=None)


@dataclass(frozen=True)
class Readings:
    """Ours beside the tools users have, on the same run."""

    ours: Reading = doc("our recommendation as a reading")
    msanalyzer: Reading | None = doc("MindSpore's analyzer on the run's dataset profile (None: "
                                     "no profile)", default=None)
    autotune: Reading | None = doc("what AutoTune settled on (None: not an AutoTune arm)",
                                   default=None)
