"""The diagnosis benchmark's score (study `scenarios`): each diagnosed run against its sweep.

Per scenario: the profiled run's answer (decision.decide: culprit, setting, predicted step)
set against the scenario's ground truth, one run that measured every setting of the swept key
in interleaved rounds (perfstudy.run.sweep), each setting placed within 10 % of the best or not
(perfstudy.measure.nearbest: holds / does not hold / undecided, from paired intervals):
* culprit right: where the sweep moves the step (some setting decidedly 10 % slower than
  another), the culprit must be the swept operator; where every setting is within 10 % of the
  best, the answer must not claim a worker change helps; otherwise undecided;
* the recommended setting's place in the sweep (target: holds). An answer the verification
  left inconclusive decides no setting: it keeps the run's own until more rounds decide, so it
  is counted apart (an abstention, not a pick), with the place of what it kept and of its open
  candidate (the setting its rounds were still measuring);
* a wrong "no setting helps": said while the run's own setting decidedly does not hold;
* the model's predicted step at every swept setting against its measured median (target 15 %),
  and whether its error band (perfstudy.decide.prediction_band) holds that median;
* whether the answer was verified (perfstudy.decide.verify), the step it promises (the
  measured one when verified) against the sweep's at that setting, and the model's own
  prediction there (its error, apart from the pick);
* held-out scenarios (kept out of any fitting of the model) are marked;
* MindSpore's own analyzer on the same profile and AutoTune's settled setting, placed the same
  way (prefetch_size is not swept: unscored, said so).

`score` makes the records (booleans and `Near` places, None where undecided);
perfstudy.present.scenarios renders and counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfstudy.common.thresholds import GAIN_THAT_MATTERS, PREDICTION_TARGET
from perfstudy.decide.decision import Recommendation
from perfstudy.decide.peers import Reading
from perfstudy.decide.whatif import predict
from perfstudy.measure.intervals import MedianInterval
from perfstudy.measure.nearbest import Near, Placed
from perfstudy.run.settings import MP
from perfstudy.run.summary import ScenarioPlace
from perfstudy.run.sweep_record import Sweep, label

UNSCORED_PREFETCH = "unscored (prefetch_size is not swept)"


@dataclass(frozen=True)
class PeerScore:
    """A peer tool on the same scenario, placed in the same sweep."""

    culprit: str  # the operator it names ("not run", "did not run")
    right: bool | None  # its culprit right (None: unscored or undecided)
    advice: str
    near: Near | str  # its advised setting's place in the sweep, or why it is unscored
    step_ms: float | None = None  # AutoTune: its own run's step


@dataclass(frozen=True)
class ScenarioScore:
    """One diagnosed scenario against its sweep."""

    scenario: str
    held_out: bool
    swept: str  # the swept config key
    rounds: int  # the sweep's rounds
    stopped: str  # why the sweep stopped: decided | max_rounds | budget
    verdict: str  # the diagnosis' bound
    culprit_named: str
    moves: bool | None  # the sweep moves the step by the margin (None: undecided)
    culprit_right: bool | None
    recommended: str
    pick: Placed | None  # the recommended setting in the sweep (None: not swept)
    fastest: str  # the sweep's fastest setting by its median
    fastest_ms: float
    verified: bool
    promised_ms: float | None
    promise_vs_sweep: float | None  # promised / the pick's measured median - 1
    model_vs_sweep: float | None  # the model's step at the pick / its measured median - 1
    wrong_no_help: bool | None
    worst_prediction_error: float
    analyzer: PeerScore | None
    autotune: PeerScore | None
    # the verification could not decide: the setting is kept until more rounds do (not a pick)
    inconclusive: bool = False
    open_candidate: str | None = None  # the candidate its rounds left open (inconclusive only)
    open_place: Placed | None = None  # that candidate's place in the sweep (None: not swept)

    @property
    def pick_near(self) -> Near:
        return self.pick.near if self.pick else Near.NOT_SWEPT

    @property
    def open_near(self) -> Near:
        return self.open_place.near if self.open_place else Near.NOT_SWEPT

    @property
    def predictions_within(self) -> bool:
        return self.worst_prediction_error <= PREDICTION_TARGET


@dataclass(frozen=True)
class PredictionPoint:
    """The model's step at one swept setting against its measurement."""

    scenario: str
    setting: str
    measured: MedianInterval
    predicted_ms: float
    low_ms: float | None = None  # the model's band around it (None: no band, or open)
    high_ms: float | None = None

    @property
    def covered(self) -> bool | None:
        """Does the band hold the measured median (None: no band)?"""
        if self.low_ms is None or self.high_ms is None:
            return None
        return self.low_ms <= self.measured.median <= self.high_ms

    @property
    def error(self) -> float:
        return (self.predicted_ms - self.measured.median) / self.measured.median


def _role(arm, role: str, name: str) -> bool:
    """Is this arm the scenario `name`'s run in `role`?"""
    place = arm.summary.scenario
    return place is not None and place.role == role and place.name == name


def _setting_of(settings: dict, key: str) -> tuple[int, bool]:
    """The swept key's (workers, in processes) in a settings dict (1 thread where unset)."""
    return int(settings.get(key, 1)), bool(settings.get(key + MP, False))


def _placed_at(sweep: Sweep, placed: list[Placed], setting: tuple[int, bool]) -> Placed | None:
    index = sweep.index(*setting)
    return None if index is None else placed[index]


def moves(placed: list[Placed]) -> bool | None:
    """Does the swept key move the step by the margin? Yes when some setting decidedly does
    not hold, no when every one holds, else undecided."""
    if any(p.near is Near.FAILS for p in placed):
        return True
    if placed and all(p.near is Near.HOLDS for p in placed):
        return False
    return None


def score(runs: list) -> tuple[list[ScenarioScore], list[PredictionPoint]]:
    """(one record per diagnosed scenario with a measured sweep, one per swept setting)."""
    arms = [r for r in runs if r.summary.repeat == 1]
    scores, points = [], []
    for diagnosed in [a for a in arms if a.summary.scenario
                      and a.summary.scenario.role == ScenarioPlace.DIAGNOSED]:
        truth = next((a for a in arms if _role(a, ScenarioPlace.TRUTH, diagnosed.summary.scenario.truth)
                      and a.summary.sweep), None)
        answer = diagnosed.diagnosis.recommendation if diagnosed.diagnosis else None
        advice = diagnosed.diagnosis.advisor if diagnosed.diagnosis else None
        if truth is None or answer is None or advice is None:
            continue
        sweep = truth.summary.sweep
        found, more = _score(diagnosed, sweep, answer, advice, arms)
        scores.append(found)
        points.extend(more)
    return scores, points


def _score(diagnosed, sweep: Sweep, answer: Recommendation, advice, arms
           ) -> tuple[ScenarioScore, list[PredictionPoint]]:
    spec, key = diagnosed.summary.scenario, sweep.key
    placed = sweep.placed(GAIN_THAT_MATTERS)
    steady = [(p, pl) for p, pl in zip(sweep.points, placed, strict=True) if pl.step]
    fastest_point, fastest = min(steady, key=lambda pair: pair[1].step.median)
    moved = moves(placed)
    action = answer.action
    claims_change = action == "set_workers" and key in {k.removesuffix(MP) for k in answer.changes}
    right = None if moved is None else (answer.culprit_key == key if moved else not claims_change)
    rec = answer.settings or {}
    picked = _setting_of(rec, key)
    own = _setting_of(diagnosed.summary.operator_settings or {}, key)
    pick, own_place = _placed_at(sweep, placed, picked), _placed_at(sweep, placed, own)
    pick_ms = pick.step.median if pick and pick.step else None
    points = []
    for point, pl in steady:
        predicted = predict(advice, point.settings).step_ms
        points.append(PredictionPoint(spec.name, f"{key}={point.label}", pl.step, predicted,
                                      *advice.interval(predicted)))
    if action != "cannot_help":
        wrong_no_help = False
    else:
        wrong_no_help = None if own_place is None or not own_place.near.decided \
            else own_place.near is Near.FAILS
    promised = _promise(answer)
    model_at_pick = predict(advice, rec).step_ms if rec else None
    inconclusive = action == "inconclusive"
    left_open = answer.verification.open_candidate() if inconclusive and answer.verification else None
    opened = None if left_open is None else _setting_of(left_open.settings, key)
    kept = f"keep ({label(*own)})"
    found = ScenarioScore(
        scenario=spec.name, held_out=spec.held_out, swept=key,
        rounds=len(sweep.rounds.orders), stopped=sweep.rounds.stopped,
        verdict=diagnosed.diagnosis.bound, culprit_named=answer.culprit_label or "none",
        moves=moved, culprit_right=right,
        recommended=label(*picked) if action == "set_workers"
        else f"inconclusive: {kept} until decided" if inconclusive else kept,
        pick=pick, fastest=fastest_point.label, fastest_ms=fastest.step.median,
        verified=bool(answer.verified), promised_ms=promised,
        promise_vs_sweep=None if promised is None or pick_ms is None else promised / pick_ms - 1,
        model_vs_sweep=None if model_at_pick is None or pick_ms is None else model_at_pick / pick_ms - 1,
        wrong_no_help=wrong_no_help,
        worst_prediction_error=max(abs(p.error) for p in points),
        analyzer=analyzer_score(diagnosed.diagnosis.peers.msanalyzer if diagnosed.diagnosis.peers
                                else None, sweep, placed, moved),
        autotune=autotune_score(next((a for a in arms if _role(a, ScenarioPlace.PEER, spec.name)),
                                     None), sweep, placed),
        inconclusive=inconclusive, open_candidate=None if opened is None else label(*opened),
        open_place=None if opened is None else _placed_at(sweep, placed, opened))
    return found, points


def analyzer_score(reading: Reading | None, sweep: Sweep, placed: list[Placed],
                   moved: bool | None) -> PeerScore:
    """MindSpore's analyzer scored like ours: its culprit (right when it names the swept
    operator where the sweep moves the step; where it does not, right unless it sends the user
    to that operator), and its advice followed, placed in the sweep where it was swept."""
    if reading is None:
        return PeerScore("not run", None, "", "")
    if reading.error:
        return PeerScore("did not run", None, reading.error, "unscored")
    key = sweep.key
    names_key = reading.key == key
    right = None if moved is None else names_key if moved else not (names_key and reading.knob)
    near: Near | str = UNSCORED_PREFETCH if reading.knob == "prefetch_size" else "unscored"
    settings = reading.settings or {}
    if names_key and key in settings:
        at = _placed_at(sweep, placed, (int(settings[key]), False))
        near = Near.NOT_SWEPT if at is None else at.near
    return PeerScore(reading.operator or "none", right, reading.advice, near)


def autotune_score(arm, sweep: Sweep, placed: list[Placed]) -> PeerScore | None:
    """The scenario run with MindSpore's AutoTune (study `autotune: true`): the setting it
    settled on, placed in the sweep where it was swept, and its own run's step."""
    if arm is None:
        return None
    reading = arm.diagnosis.peers.autotune if arm.diagnosis and arm.diagnosis.peers else None
    settled = ((reading.settings if reading else None) or {}).get(sweep.key)
    at = None if settled is None else _placed_at(sweep, placed, (int(settled), False))
    return PeerScore((reading.operator if reading else None) or "", None,
                     (reading.advice if reading else None) or "no setting saved",
                     Near.NOT_SWEPT if at is None else at.near, arm.summary.steady_step_ms)


def _promise(answer: Recommendation) -> float | None:
    """The step the answer promises: for a change, the verified (measured) one, else the model's;
    for keeping the setting, its step measured in the verification's rounds (else the run's own
    window)."""
    if answer.action != "set_workers":
        return answer.verified_now_ms or answer.measured_step_ms
    return answer.verified_step_ms if answer.verified else answer.predicted_step_ms
