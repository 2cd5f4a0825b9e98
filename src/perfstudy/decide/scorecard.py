"""The study's scorecard: its claims scored (perfstudy.decide.claims), with each claim's line
across the study's recorded runs; written once, before the report is drawn."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from perfstudy.decide.claim_result import ClaimHistory, ClaimResult, Scorecard, write_scorecard
from perfstudy.decide.claims import METRICS, score


def make(spec: dict[str, Any] | None, arms: list, runs: list | None = None,
         history: dict[str, Any] | None = None) -> Scorecard:
    """The study's scorecard, decided before any report is drawn.

    Args:
        spec: the claims file (claims_file.load); None: nothing is scored, and the card says so.
        arms: the study's arms (first repeat); runs: every repeat (None: the arms only).
        history: the study's earlier recorded runs (perfstudy.present.history.read), or None.

    Returns:
        The Scorecard: headline, title, each claim's result, and its history.
    """
    card = score(spec or {"claims": []}, arms, runs)
    if history is not None and card.claims:
        card = with_history(card, spec, history, history["machine"])
    return card


def write(out_dir: str | Path, card: Scorecard) -> Path:
    """scorecard.json in the report folder (the output contract's path)."""
    return write_scorecard(out_dir, card)


def with_history(card: Scorecard, spec: dict[str, Any], history: dict[str, Any],
                 machine: str) -> Scorecard:
    """Each claim's line across the study's recorded runs (perfstudy.present.history.read):
    how often it held on this machine kind, this run included, and whether it is fragile: its
    verdict changed across the runs, or its margin to the bound is inside the spread of its
    values across them (a single run can be marked so, from the store's earlier runs)."""
    records = history.get("records") or []
    mine = [r for r in records if r["machine"] == machine]
    others = len(records) - len(mine)
    by_id = {c["id"]: c for c in spec["claims"]}
    claims = [entry if entry.result == "not scored" else
              replace(entry, history=_line(entry, by_id[entry.id], mine, others))
              for entry in card.claims]
    fragile = [c.id for c in claims if c.history is not None and c.history.fragile]
    text = card.headline
    if fragile:
        text += (f" Fragile across the {len(mine) + 1} recorded runs on this machine "
                 f"kind: {', '.join(fragile)}.")
    return replace(card, claims=claims, fragile=fragile, headline=text,
                   history={"runs": len(mine) + 1, "machine": machine, "other_machines": others,
                            "error": history.get("error")})


def _line(entry: ClaimResult, claim: dict[str, Any], mine: list[dict[str, Any]],
          others: int) -> ClaimHistory:
    """One claim's line across the recorded runs of this machine kind (and this one)."""
    past = [r["claims"][entry.id] for r in mine if r["claims"].get(entry.id, {}).get("result")]
    results = [p["result"] for p in past] + [entry.result]
    held, runs = results.count("holds"), len(results)
    text = (f"held in {held} of {runs} runs on this machine kind" if runs > 1
            else "the first recorded run on this machine kind")
    if others:
        text += f" ({others} run(s) on other machine kinds not counted)"
    numeric = isinstance(entry.measured, (int, float)) and not isinstance(entry.measured, bool)
    fields: dict[str, Any] = {}
    why = None
    if runs > 1 and len(set(results)) > 1:
        why = f"its verdict changed across the runs ({', '.join(results)})"
    elif numeric:
        values = [p["value"] for p in past if p.get("value") is not None] + [float(entry.measured)]
        low, high = entry.interval or (entry.measured, entry.measured)
        spread = max(max(values) - min(values), high - low)
        margin = _margin(claim, float(entry.measured))
        fields = {"values": values, "spread": spread, "margin": margin}
        if len(values) > 1 and margin < spread:
            kind = METRICS[entry.metric][1]
            why = (f"its margin to the bound ({_delta(margin, kind)}) is inside the spread "
                   f"across the runs ({_delta(spread, kind)})")
    if why:
        text += f"; fragile: {why}"
    return ClaimHistory(runs=runs, held=held, text=text, fragile=why is not None, why=why, **fields)


def _margin(claim: dict[str, Any], value: float) -> float:
    """How far a value sits from the nearest numeric bound (inf without one)."""
    return min((abs(value - claim[b]) for b in ("at_least", "at_most") if b in claim),
               default=float("inf"))


def _delta(value: float, kind: str) -> str:
    return f"{100 * value:.1f} points" if kind == "percent" else f"{value:.2f}" + ("x" if kind == "times" else "")

