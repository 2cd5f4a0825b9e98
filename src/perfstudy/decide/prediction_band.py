"""How far the what-if model (perfstudy.decide.whatif) is from what is measured: its error band.

The model's step at a setting is a number; what a user needs is where the measured step will
fall. The band is read off the model's own record, not assumed: recorded cases (a diagnosed run
and the sweep that measured its operator's settings in interleaved rounds, another process;
docs/benchmarks/predictions/) give, at every swept setting, the error
    e = log(measured step / predicted step)
and, against the run's own setting, the error of the predicted gain
    g = log(measured step / measured own step) - log(predicted step / predicted own step).
Two ways to turn n errors into a 90 % band, both general (nothing in them knows a transform):
* `student`: the normal-theory prediction interval of the next error,
  mean +- t(0.95, n - 1) x sd x sqrt(1 + 1/n) (a new error's spread, plus the mean's own);
  it bounds both ends from 3 errors, and leans on the errors being roughly normal in log;
* `conformal`: the split-conformal interval (Vovk; Lei et al. 2018): with n errors sorted, the
  floor((n + 1) x 0.05)-th and the ceil((n + 1) x 0.95)-th; distribution-free, but an end is
  open (None) below 19 errors, and at 19-39 it is the most extreme error recorded.
The shipped band (`auto`) is the conformal one wherever it is bounded and the Student one
below that: on the recorded cases the log errors have heavier tails than a normal's (left out in
turn, the Student band covered 83 % of 30 settings at a nominal 90 %; the conformal one 93 %).
Either covers a new case's error at the stated level only where the new case is like the
recorded ones: the validation (perfstudy.decide.prediction_cases) checks it by leaving one
scenario out at a time, and on transforms never recorded into any band (held out).

The band ships with the package (prediction_band.json, written by scripts/prediction_check.py
from the recorded cases); a test recomputes it from the cases under the current model, so a
change to the model that moves its errors cannot keep an old band.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from scipy import stats

from perfstudy.common.records import doc, read_record, write_record

BAND_LEVEL = 0.90
BAND_FILE = "prediction_band.json"
STUDENT, CONFORMAL, AUTO = "student", "conformal", "auto"
METHODS = (AUTO, STUDENT, CONFORMAL)


@dataclass(frozen=True)
class Ends:
    """An interval of measured / predicted (a ratio: 1 is no error); None: open on that side."""

    low: float | None = doc("the lower end (None: too few errors to bound it)")
    high: float | None = doc("the upper end (None: too few errors to bound it)")

    def around(self, value: float) -> tuple[float | None, float | None]:
        """(low, high) for a predicted `value`."""
        return (None if self.low is None else value * self.low,
                None if self.high is None else value * self.high)

    def half_width(self) -> float | None:
        """Half the interval's width as a share of the prediction (None: open)."""
        return None if self.low is None or self.high is None else (self.high - self.low) / 2


@dataclass(frozen=True)
class ErrorBand:
    """The model's error band (shipped as prediction_band.json; diagnosis.json's
    advisor.band)."""

    SCHEMA_VERSION = 1
    KIND = "what-if model error band"
    RERUN = "make it again with scripts/prediction_check.py --write-band"

    level: float = doc("the band's coverage")
    method: str = doc("student (normal-theory prediction interval) | conformal (split-conformal) "
                      "| auto (conformal where bounded, else student; each of step and gain)")
    step: Ends = doc("measured / predicted step, at any setting")
    gain: Ends = doc("measured / predicted step ratio to the run's own setting (the gain's error)")
    points: int = doc("swept settings whose errors the band is read from")
    gain_points: int = doc("of them, settings other than the run's own (the gain's errors)")
    scenarios: list[str] = doc("the recorded scenarios it is read from (none held out)")

    def step_interval(self, step_ms: float) -> tuple[float | None, float | None]:
        return self.step.around(step_ms)

    def words(self, step_ms: float) -> str:
        """'1956 ms (90 %: 1700-2250)' (an open end reads '?')."""
        low, high = self.step_interval(step_ms)
        ends = "-".join("?" if v is None else f"{v:.0f}" for v in (low, high))
        return f"{step_ms:.0f} ms ({100 * self.level:.0f} %: {ends})"


def conformal_ends(errors: list[float], level: float = BAND_LEVEL) -> Ends:
    """The split-conformal interval of log errors as ratios: with n errors sorted, the
    floor((n + 1) a/2)-th and the ceil((n + 1)(1 - a/2))-th (1-based, a = 1 - level); an end
    whose rank falls outside 1..n is open (None)."""
    values = sorted(errors)
    n = len(values)
    alpha = 1 - level
    # rounded first: (1 - 0.9) / 2 x 20 is 0.999... in floating point, not 1
    lo_rank = math.floor(round((n + 1) * alpha / 2, 9))
    hi_rank = math.ceil(round((n + 1) * (1 - alpha / 2), 9))
    low = math.exp(values[lo_rank - 1]) if 1 <= lo_rank <= n else None
    high = math.exp(values[hi_rank - 1]) if 1 <= hi_rank <= n else None
    return Ends(low, high)


def student_ends(errors: list[float], level: float = BAND_LEVEL) -> Ends:
    """The normal-theory prediction interval of the next log error: mean +- t x sd x
    sqrt(1 + 1/n), as ratios; open (None) with fewer than 3 errors."""
    n = len(errors)
    if n < 3:
        return Ends(None, None)
    mean, sd = statistics.fmean(errors), statistics.stdev(errors)
    half = float(stats.t.ppf(1 - (1 - level) / 2, n - 1)) * sd * math.sqrt(1 + 1 / n)
    return Ends(math.exp(mean - half), math.exp(mean + half))


def auto_ends(errors: list[float], level: float = BAND_LEVEL) -> Ends:
    """The conformal ends where both are bounded (19 errors or more at 90 %), else Student's."""
    ends = conformal_ends(errors, level)
    return ends if ends.low is not None and ends.high is not None else student_ends(errors, level)


ENDS = {STUDENT: student_ends, CONFORMAL: conformal_ends, AUTO: auto_ends}


def band_from(step_errors: list[float], gain_errors: list[float], scenarios: list[str],
              level: float = BAND_LEVEL, method: str = AUTO) -> ErrorBand:
    """The band of these log errors (step: every setting; gain: settings other than the own)."""
    ends = ENDS[method]
    return ErrorBand(level, method, ends(step_errors, level), ends(gain_errors, level),
                     len(step_errors), len(gain_errors), sorted(set(scenarios)))


def shipped_path() -> Path:
    return Path(str(resources.files("perfstudy.decide").joinpath(BAND_FILE)))


def shipped_band() -> ErrorBand | None:
    """The band the package ships (None: not written yet)."""
    path = shipped_path()
    return read_record(path, ErrorBand) if path.exists() else None


def write_band(band: ErrorBand, path: Path | None = None) -> Path:
    return write_record(path or shipped_path(), band)
