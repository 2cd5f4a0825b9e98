"""Every threshold a verdict, a score or a sentence states, named once, and the one way a number
is written with its unit (`pct`: a share as a percentage; `fmt`: any number by its unit). A
sentence, a column title or a test that states a bound formats it from here
(`pct(GAIN_THAT_MATTERS)` -> "10 %"), so changing a bound changes every place that says it."""

from __future__ import annotations

# A gain (or a swing of the step) this large matters: a setting is recommended only when its
# measured gain clears it, an operator whose own setting moves the predicted step this much
# sets the step, a sweep that moves the step this much has a culprit, and a pick within it of
# the sweep's best is right. One run's noise on these machines is about this size.
GAIN_THAT_MATTERS = 0.10
# The model's "as good as the best": the cheapest setting predicted within this of the best
# predicted step is its pick; below this predicted gain at every setting, "no setting helps".
WITHIN_BEST = 0.05
# The model's predicted step at a swept setting should be within this of the measured one.
PREDICTION_TARGET = 0.15
# Input-bound bands of the gap share (the TensorFlow profiler's): highly, moderately, not.
HIGHLY_INPUT_BOUND = 0.20
MODERATELY_INPUT_BOUND = 0.05
# A steady step within this factor of the CPU floor is "near the CPU floor".
NEAR_CPU_FLOOR = 1.15
# A steady step below this share of the pipeline-alone floor cannot be a steady state.
NOT_STEADY = 0.92


def pct(share: float | None, digits: int = 0, signed: bool = False) -> str:
    """A share as a percentage the way every sentence writes it: 0.1 -> '10 %', signed:
    '+10 %'; None or NaN -> '-'."""
    if share is None or share != share:
        return "-"
    return f"{100 * share:{'+' if signed else ''}.{digits}f} %"


def fmt(value, unit: str) -> str:
    """A value as every table and scorecard writes it, by its unit: 'percent' (a share: 0.1 ->
    '10.0 %'), 'times' (a ratio: '1.30x'), 'number' (3 significant places: '0.52', '12.3',
    '481'), 'text' (as it is); None or NaN -> '-'."""
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if unit == "percent":
        return pct(value, 1)
    if unit == "times":
        return f"{value:.2f}x"
    if unit == "number":
        return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"
    return str(value)
