"""How long a verification window should be: its variance split into components, its cost.

A round's log ratio varies for two reasons: the steps inside each window (their mean over n
counted steps varies as sigma_w^2 / n, sigma_w^2 the steps' long-run variance, their
autocorrelation included: a slow step lets the queue fill and the next ones are fast) and the
windows themselves (a fresh pipeline's start, the host's state: sigma_b^2, whatever n is).
Over the paired rounds of a verification (perfstudy.measure.rounds):

    Var(round's log ratio) = 2 sigma_b^2 + sigma_w,ref^2 / n_ref + sigma_w,cand^2 / n_cand

(the round's drift, shared by both windows, cancels). Each window costs c0 (start-up, drain:
its wall time beyond its counted steps) + c1 n (c1: a step). The variance of a decision per
unit of cost, (sigma_b^2 + sigma_w^2 / n) (c0 + c1 n), is least at
n* = sqrt(c0 sigma_w^2 / (c1 sigma_b^2)) (the classic two-stage sampling optimum, Cochran
1977, 10.6): a window longer than n* buys within-window precision that the between-window
noise swamps; shorter, it pays the start-up too often. `verify.min_steps` is the counted
stretch a window waits for, so n* is what to set it to (scripts/size_windows.py reads the
runs' rounds and prints it).

Both are estimated from the windows' means alone, whatever the estimator inside a window (the
cycle rule's regenerative estimate is not a mean of independent steps): the cycle rule lets the
counted steps n vary from window to window, and over a comparison's rounds the squared
deviation of a round's log ratio from the comparison's mean, scaled by N / (N - 1), has
expectation 2 sigma_b^2 + sigma_w^2 (1 / n_ref + 1 / n_cand): a least-squares line through
those points over many comparisons gives both (method of moments; each kept >= 0). The
window's cost: c1 its step, c0 its wall time beyond its counted steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfstudy.common.records import doc
from perfstudy.measure.rounds import Rounds


@dataclass(frozen=True)
class Components:
    """One verification's (or several pooled) variance components and window costs."""

    pairs: int = doc("paired rounds behind the estimate (candidate against reference)")
    within_log_var: float = doc("sigma_w^2: a window's variance x its counted steps (log terms)")
    between_log_var: float = doc("sigma_b^2: a window's own variance beyond its steps (log terms)")
    counted_steps: float = doc("the windows' mean counted steps (n now)")
    overhead_s: float = doc("c0: a window's wall time beyond its counted steps (start-up, drain)")
    step_s: float = doc("c1: one step's wall time")
    length_within_share: float = doc(
        "how much of the windows' length variation lies within comparisons (1: all; near 0: the "
        "lengths differ between comparisons, whose noise differs too: the split is confounded)",
        default=1.0)

    @property
    def confounded(self) -> bool:
        """The lengths vary mostly between comparisons: the split may read one comparison's own
        noise as the windows' length (seen at cpu_demo: quiet one-worker windows of 4 steps,
        noisy two-worker ones of 8 read as 'no variance per step')."""
        return self.length_within_share < 0.5

    @property
    def best_steps(self) -> float:
        """n*: the counted steps per window that make a decision cheapest (inf: the windows
        add no variance of their own, so longer is always better)."""
        if self.between_log_var <= 0:
            return math.inf
        return math.sqrt(self.overhead_s * self.within_log_var / (self.step_s * self.between_log_var))

    def cost_per_precision(self, steps: float) -> float:
        """(sigma_b^2 + sigma_w^2 / n) x (c0 + c1 n): what a given precision costs at n steps."""
        return (self.between_log_var + self.within_log_var / steps) * (self.overhead_s + self.step_s * steps)


@dataclass(frozen=True)
class PairedRound:
    """One round of one comparison: its log ratio and both windows' counted steps."""

    comparison: str
    log_ratio: float
    counted_reference: int
    counted_candidate: int


@dataclass(frozen=True)
class WindowCost:
    """One window's cost: its wall time, its step and its counted steps."""

    wall_s: float
    step_ms: float
    counted: int


def from_rounds(rounds: Rounds, name: str, reference: int = 0) -> tuple[list[PairedRound], list[WindowCost]]:
    """A run's rounds (verification, sweep, remedy) as paired rounds against `reference`."""
    kept = {(v.setting, v.round): v.window for v in rounds.kept()
            if v.window.step_ms and v.window.steps_counted}
    pairs = [PairedRound(f"{name}/{candidate}", math.log(b.step_ms / a.step_ms), a.steps_counted,
                         b.steps_counted)
             for candidate in range(rounds.settings) if candidate != reference
             for r in range(len(rounds.orders))
             if (a := kept.get((reference, r))) and (b := kept.get((candidate, r)))]
    costs = [WindowCost(w.wall_s, w.step_ms, w.steps_counted) for w in kept.values()]
    return pairs, costs


def components(pairs: Sequence[PairedRound], costs: Sequence[WindowCost],
               min_rounds: int = 3) -> Components | None:
    """The components from paired rounds (comparisons of fewer than `min_rounds` left out);
    None without enough rounds, or without windows of different lengths to tell the two apart."""
    groups: dict[str, list[PairedRound]] = {}
    for p in pairs:
        groups.setdefault(p.comparison, []).append(p)
    ys, hs, within = [], [], 0.0
    for group in groups.values():
        if len(group) < min_rounds:
            continue
        logs = np.array([p.log_ratio for p in group])
        scale = len(group) / (len(group) - 1)
        ys.extend(((logs - logs.mean()) ** 2 * scale).tolist())
        h_group = np.array([1 / p.counted_reference + 1 / p.counted_candidate for p in group])
        hs.extend(h_group.tolist())
        within += float(np.sum((h_group - h_group.mean()) ** 2))
    if len(ys) < 6 or not costs or float(np.ptp(hs)) <= 0:
        return None
    h, y = np.asarray(hs), np.asarray(ys)
    slope, intercept = np.polyfit(h, y, 1)
    if slope < 0:  # no within part the data can see: all of it the windows' own
        slope, intercept = 0.0, float(y.mean())
    elif intercept < 0:  # none of the windows' own: all of it their steps'
        slope, intercept = float(np.sum(h * y) / np.sum(h * h)), 0.0
    overhead = [max(c.wall_s - c.step_ms / 1e3 * c.counted, 0.0) for c in costs]
    total = float(np.sum((h - h.mean()) ** 2))
    return Components(len(ys), float(slope), float(intercept) / 2,
                      float(np.mean([c.counted for c in costs])), float(np.mean(overhead)),
                      float(np.mean([c.step_ms for c in costs])) / 1e3,
                      length_within_share=within / total if total > 0 else 1.0)
