"""What the operator probe measured (perfstudy.run.opprobe; summary.json's
`calibration.operators`): each Python operator alone at every setting, and its GIL point."""

from __future__ import annotations

from dataclasses import dataclass

from perfstudy.common.records import doc


@dataclass(frozen=True)
class ProbeReading:
    """The operator alone at one setting: its wall and CPU ms per batch, or why it failed."""

    workers: int = doc("its workers")
    multiprocessing: bool = doc("in worker processes (else threads)")
    wall_ms_per_batch: float | None = doc("wall ms per batch (None: the setting failed)",
                                          default=None)
    cpu_ms_per_batch: float | None = doc("process CPU ms per batch", default=None)
    error: str | None = doc("why the setting could not run (e.g. a transform that cannot be "
                            "pickled for processes)", default=None)
    parent_cpu_ms_per_batch: float | None = doc(
        "of cpu_ms_per_batch, the probing process's own (its worker processes' left out): in "
        "processes, the hand-off of rows to and from them, which in training runs in the "
        "training process (None: not recorded, older runs)", default=None)

    @property
    def ran(self) -> bool:
        return self.wall_ms_per_batch is not None and self.cpu_ms_per_batch is not None


@dataclass(frozen=True)
class GilPoint:
    """The operator at 1 thread worker alone and beside a GIL holder, median of its rounds."""

    wall_ms_per_batch_alone: float = doc("alone (ms per batch)")
    wall_ms_per_batch_beside: float = doc("beside the holder (ms per batch)")
    free: float = doc("share of the time the holder left the GIL free, as measured")
    gil_ms_per_batch: float = doc("time per batch that needed the GIL (opprobe.gil_ms)")
    rounds: int = doc("rounds of (alone, beside) measured")
    gil_ms_per_batch_each: list[float] = doc("every round's reading", default_factory=list)


@dataclass(frozen=True)
class PreparedProbe:
    """The same operator alone on its captured rows prepared at the bounded resolution (the
    decode remedy, perfstudy.data.prepare applied to each row's image bytes): what a decoding
    map that also runs Python costs on the prepared source, measured, not scaled by pixels."""

    megapixels_before: float = doc("mean megapixels of the captured rows' images")
    megapixels_after: float = doc("... once prepared")
    rows: int = doc("captured rows prepared (cycled to a batch)")
    points: list[ProbeReading] = doc("every setting measured on the prepared rows")
    gil: GilPoint | None = doc("its GIL point on the prepared rows", default=None)

    def measured(self) -> list[ProbeReading]:
        return [p for p in self.points if p.ran]


@dataclass(frozen=True)
class ProbedOperator:
    """One Python operator of the pipeline, probed alone."""

    config_key: str = doc("the config key that sizes it")
    operation: str = doc("what it runs, as the user wrote it (an address and its operations)")
    per_batch: bool = doc("a per-batch map (rows are batches)")
    workers_now: int | None = doc("its workers in the run")
    multiprocessing_now: bool = doc("in processes in the run")
    points: list[ProbeReading] = doc("every setting measured")
    gil: GilPoint | None = doc("its GIL point (None: a reader, no setting ran, or it waits: "
                                  "under opprobe.WAITS_BELOW of a core at 1 thread)", default=None)
    prepared: PreparedProbe | None = doc("a decoding map probed again on its rows prepared at "
                                         "the bounded resolution (None: it decodes nothing, or "
                                         "its source is within the bound)", default=None)

    def measured(self) -> list[ProbeReading]:
        return [p for p in self.points if p.ran]
