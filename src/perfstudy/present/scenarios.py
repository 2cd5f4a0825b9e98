"""The diagnosis benchmark's score as the report shows it: one row per scenario (the records of
perfstudy.decide.scenarios in words), the predicted-vs-measured points, and the one sentence
that counts them (from the records' booleans and places, never from these words)."""

from __future__ import annotations

import pandas as pd

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, PREDICTION_TARGET, pct
from perfstudy.decide.scenarios import PredictionPoint, ScenarioScore
from perfstudy.measure.intervals import RatioInterval
from perfstudy.measure.nearbest import Near

WRONG_NO_HELP = "wrong 'no setting helps'"
# MindSpore's own analyzer on the same profile (perfstudy.decide.peers), scored like ours
ANALYZER_CULPRIT = "MindSpore analyzer: culprit"
ANALYZER_RIGHT = "its culprit right"
ANALYZER_ADVICE = "its advice"
ANALYZER_WITHIN = f"its advice within {pct(GAIN_THAT_MATTERS)}"
PICK_WITHIN = f"pick within {pct(GAIN_THAT_MATTERS)}"
PREDICTIONS_WITHIN = f"predictions within {pct(PREDICTION_TARGET)}"
AUTOTUNE_WITHIN = f"AutoTune within {pct(GAIN_THAT_MATTERS)}"
OPEN = f"inconclusive: its open candidate within {pct(GAIN_THAT_MATTERS)}"


def _yes(value: bool | None) -> str:
    return "undecided" if value is None else "yes" if value else "NO"


def _interval(found: RatioInterval | None) -> str:
    return "" if found is None else found.words()


def _open(s: ScenarioScore) -> str:
    """An inconclusive answer's open candidate and its place ('' for a decided answer)."""
    if not s.inconclusive:
        return ""
    return f"{s.open_candidate}: {s.open_near.value}" if s.open_candidate else "none"


def table(scores: list[ScenarioScore]) -> pd.DataFrame:
    """The report's table: one row per scenario, each score as the words a reader reads."""
    rows = []
    for s in scores:
        row = {
            "scenario": s.scenario, "held out": "yes" if s.held_out else "no", "swept": s.swept,
            "sweep rounds": f"{s.rounds} ({s.stopped})", "verdict": s.verdict,
            "culprit named": s.culprit_named, "culprit right": _yes(s.culprit_right),
            "recommended": s.recommended,
            "its measured step (ms)": "" if s.pick is None or s.pick.step is None
            else s.pick.step.words(of="rounds"),
            "sweep's fastest (ms)": f"{round(s.fastest_ms)} at {s.fastest}",
            "pick vs fastest": "" if s.pick is None else _interval(s.pick.vs_fastest),
            PICK_WITHIN: s.pick_near.value,
            OPEN: _open(s),
            "verified": "yes" if s.verified else "no",
            "promised (ms)": "" if s.promised_ms is None else round(s.promised_ms),
            "promise vs sweep": "" if s.promise_vs_sweep is None else pct(s.promise_vs_sweep, 1, signed=True),
            "model at pick vs sweep": "" if s.model_vs_sweep is None else pct(s.model_vs_sweep, 1, signed=True),
            WRONG_NO_HELP: "undecided" if s.wrong_no_help is None else "WRONG" if s.wrong_no_help else "no",
            "worst prediction error": pct(s.worst_prediction_error, 1),
            PREDICTIONS_WITHIN: _yes(s.predictions_within)}
        if s.analyzer is not None:
            row.update({ANALYZER_CULPRIT: s.analyzer.culprit,
                        ANALYZER_RIGHT: "" if s.analyzer.culprit in ("not run", "did not run")
                        else _yes(s.analyzer.right),
                        ANALYZER_ADVICE: s.analyzer.advice, ANALYZER_WITHIN: str(s.analyzer.near)})
        if s.autotune is not None:
            row.update({"AutoTune settled on": s.autotune.advice,
                        "AutoTune step (ms)": "" if s.autotune.step_ms is None else round(s.autotune.step_ms),
                        AUTOTUNE_WITHIN: str(s.autotune.near)})
        rows.append(row)
    return pd.DataFrame(rows)


def points_table(points: list[PredictionPoint]) -> pd.DataFrame:
    """Every swept setting's measured median (with its interval) beside the model's step."""
    return pd.DataFrame([{
        "scenario": p.scenario, "setting": p.setting, "measured step (ms)": round(p.measured.median),
        "measured": p.measured.words(" ms", "rounds"), "predicted step (ms)": round(p.predicted_ms),
        "error": pct(p.error, 1, signed=True),
        "model's band (ms)": "" if p.covered is None else f"{p.low_ms:.0f}-{p.high_ms:.0f}",
        "band holds it": "" if p.covered is None else "yes" if p.covered else "NO"} for p in points])


def _count(scores: list, value) -> str:
    """'3 of 4 decided, 1 undecided' (None: undecided)."""
    decided = [v for v in scores if v is not None]
    undecided = len(scores) - len(decided)
    return (f"{sum(1 for v in decided if v is value)} of {len(decided)} decided"
            + (f", {undecided} undecided" if undecided else ""))


def _places(near: list[Near]) -> str:
    """'holds in 2, does not hold in 0, undecided in 1' (and 'not swept in k' where any)."""
    return (f"holds in {near.count(Near.HOLDS)}, does not hold in {near.count(Near.FAILS)}, "
            f"undecided in {near.count(Near.UNDECIDED)}"
            + (f", not swept in {near.count(Near.NOT_SWEPT)}" if Near.NOT_SWEPT in near else ""))


def summary_line(scores: list[ScenarioScore]) -> str:
    """One sentence: how many scenarios met each goal, counted from the records."""
    if not scores:
        return ""
    n = len(scores)
    decided = [s for s in scores if not s.inconclusive]
    abstained = [s for s in scores if s.inconclusive]
    out = (f"{n} scenario(s): culprit right in {_count([s.culprit_right for s in scores], True)}; "
           f"the setting a decided answer recommends ({len(decided)}) within "
           f"{pct(GAIN_THAT_MATTERS)} of the sweep's best: {_places([s.pick_near for s in decided])}")
    if abstained:
        out += (f"; inconclusive answers, the setting kept until more rounds decide ({len(abstained)}): "
                f"what they keep {_places([s.pick_near for s in abstained])}, their open candidate "
                f"{_places([s.open_near for s in abstained])}")
    out += (f"; a wrong 'no setting helps' in {sum(1 for s in scores if s.wrong_no_help)}"
            f"; the answer verified by measurement in {sum(1 for s in scores if s.verified)}"
            f"; every prediction within {pct(PREDICTION_TARGET)} in "
            f"{sum(1 for s in scores if s.predictions_within)}")
    analyzed = [s.analyzer.right for s in scores if s.analyzer and s.analyzer.culprit not in ("not run", "did not run")]
    if analyzed:
        out += f"; MindSpore's own analyzer named the right culprit in {_count(analyzed, True)}"
    tuned = [s.autotune.near for s in scores if s.autotune]
    if tuned:
        out += (f"; AutoTune's setting within {pct(GAIN_THAT_MATTERS)} of the sweep's best: holds "
                f"in {tuned.count(Near.HOLDS)} of {len(tuned)}")
    return out + "."
