"""Is the measured window a steady state? (`Validity`, diagnosis.json's
recommendation.validity, made by `validity`.)

A steady step clearly below the input floor (the pipeline alone) cannot be a steady state: the
window was served from batches buffered before it. Then no verdict is issued
(perfstudy.decide.decision), and the answer says how many steps would drain the buffer
(buffered batches / the deficit per step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfstudy.common.records import doc
from perfstudy.common.thresholds import NOT_STEADY
from perfstudy.run.summary import RunSummary


@dataclass(frozen=True)
class Validity:
    """Is the measured window a steady state (`validity`)?"""

    steady: bool = doc("a verdict may be issued on this window")
    steady_vs_floor: float | None = doc("the steady step / the floor it is judged by", default=None)
    floor: str | None = doc("the floor judged by: input (the pipeline alone)", default=None)
    floor_ms: float | None = doc("that floor (not steady only)", default=None)
    floor_suspect: bool = doc("steady, and the pipeline-alone reading is the one off", default=False)
    buffered_batches: float | None = doc("batches buffered before the window", default=None)
    buffered_basis: str | None = doc("how that was estimated", default=None)
    drain_steps: int | None = doc("steps that drain them", default=None)
    steps_needed: int | None = doc("trainer.steps a steady window needs", default=None)
    sentence: str | None = doc("the judgement in words", default=None)


def buffered_at_window(summary: RunSummary, floor_ms: float) -> tuple[float, str]:
    """Batches buffered when the measured window began, and how that was estimated.

    The slowest stage completes a batch every `floor_ms` (the pipeline alone) from the
    pipeline's launch; the steps before the window took `before_window_ms` and consumed one
    batch each, so the rest waited in the queues. It is an upper bound (the queues may have
    filled first; the training slows the stage a little): the advice it gives errs on more
    steps. The queues' declared capacity is no bound at all (MindSpore's workers hold more
    than their queues: docs/lab-notes.md#queue-capacity), so it is not used."""
    before, first = summary.before_window_ms, summary.first_measured_step
    if floor_ms <= 0:
        return 0.0, "no pipeline-alone reading"
    return max(0.0, before / floor_ms - first), (
        f"{before:.0f} ms of {first} steps before the window at {floor_ms:.0f} ms per batch, "
        f"less the {first} batches they consumed")


def validity(summary: RunSummary, compute_ms: float) -> Validity:
    """Is the measured window a steady state? If not, how many steps would be.

    Judged against the input floor (the pipeline alone, timed over several batches). The
    compute floor is not used: the measured steps time the network themselves, and a few
    network-alone steps are too noisy to judge by (docs/lab-notes.md#calibration-noise).
    Steps to a steady window: the batches buffered at the window's start drain at
    1 - compute/floor of a batch per step; the drain rule (perfstudy.measure.steptrace) then needs the
    drained steps to be at most half of the run, and at least 10 steady steps after them. A run
    that already had those steps is steady whatever the ratio: its floor reading is the one off
    (docs/lab-notes.md#window-outlasts-buffer).
    """
    floors = {"input": summary.input_floor_ms}
    floors = {k: v for k, v in floors.items() if v}
    if not floors:
        return Validity(steady=True)
    which = max(floors, key=floors.get)
    ratio = summary.steady_step_ms / floors[which]
    if ratio >= NOT_STEADY:
        return Validity(steady=True, steady_vs_floor=ratio, floor=which)
    buffered, basis = buffered_at_window(summary, floors[which])
    deficit = floors[which] - compute_ms  # what each step takes out of the buffer, in ms
    # nothing buffered drains in 0 steps (not "unknown"): then only the window's length decides,
    # and a long enough one is steady whatever a pipeline-alone reading taken beside other work says
    drain = math.ceil(buffered * floors[which] / deficit) if deficit > 0 else None
    first = summary.first_measured_step
    steps = None if drain is None else max(2 * (first + drain), first + drain + 10)
    if steps is not None and steps <= first + summary.steps_measured:
        # the run already had the steps a steady window needs: no buffer can have served the
        # window, so the pipeline-alone reading (a few batches) is the one off, not the window
        return Validity(steady=True, steady_vs_floor=ratio, floor=which, floor_suspect=True,
                        sentence=(f"The measured step ({summary.steady_step_ms:.0f} ms) is {ratio:.2f}x "
                             f"the pipeline alone ({floors[which]:.0f} ms), but at most {buffered:.1f} "
                             f"batches were buffered before the window ({basis}), which ~{drain} steps "
                             f"drain, and the run measured {summary.steps_measured} steps after "
                             f"{first}: the window is steady and the pipeline-alone reading is the one off"))
    sentence = (f"Not a steady state: the measured step ({summary.steady_step_ms:.0f} ms) is "
                f"{ratio:.2f}x the {which} floor ({floors[which]:.0f} ms, the "
                + ("pipeline" if which == "input" else "network") + " alone), so the "
                f"{summary.steps_measured} measured steps were served from batches buffered "
                "before them")
    if steps is not None:
        sentence += (f"; about {buffered:.1f} batches were buffered ({basis}) and each step drains "
                     f"{deficit:.0f} ms of the {floors[which]:.0f} ms a batch takes, so the buffer "
                     f"lasts ~{drain} steps: run trainer.steps >= {steps} for a steady window")
    else:
        sentence += "; run more trainer.steps for a steady window"
    return Validity(steady=False, steady_vs_floor=ratio, floor=which, floor_ms=floors[which],
                    buffered_batches=buffered, buffered_basis=basis, drain_steps=drain,
                    steps_needed=steps, sentence=sentence + "; no verdict is issued on this window.")
