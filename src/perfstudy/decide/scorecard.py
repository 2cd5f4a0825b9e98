"""The study's scorecard: its claims scored (perfstudy.decide.claims), with each claim's line
across the study's recorded runs; written once, before the report is drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfstudy.common.io import write_json
from perfstudy.decide.claims import METRICS, score


def make(spec: dict[str, Any] | None, arms: list, runs: list | None = None,
              history: dict[str, Any] | None = None) -> dict[str, Any]:
    """The study's scorecard, decided before any report is drawn.

    Args:
        spec: the claims file (load); None: nothing is scored, and the card says so.
        arms: the study's arms (first repeat); runs: every repeat (None: the arms only).
        history: the study's earlier recorded runs (perfstudy.present.history.read), or None.

    Returns:
        The card: headline, title, each claim's result (score), and its history.
    """
    card = score(spec or {"claims": []}, arms, runs)
    if history is not None and card["claims"]:
        card = with_history(card, spec, history, history["machine"])
    return card


def write(out_dir: str | Path, card: dict[str, Any]) -> Path:
    """scorecard.json in the report folder (the output contract's path)."""
    return write_json(Path(out_dir) / "scorecard.json", card)


def with_history(card: dict[str, Any], spec: dict[str, Any], history: dict[str, Any],
                 machine: str) -> dict[str, Any]:
    """Each claim's line across the study's recorded runs (perfstudy.present.history.read):
    how often it held on this machine kind, this run included, and whether it is fragile: its
    verdict changed across the runs, or its margin to the bound is inside the spread of its
    values across them (a single run can be marked so, from the store's earlier runs)."""
    records = history.get("records") or []
    mine = [r for r in records if r["machine"] == machine]
    others = len(records) - len(mine)
    by_id = {c["id"]: c for c in spec["claims"]}
    card = {**card, "history": {"runs": len(mine) + 1, "machine": machine, "other_machines": others,
                                "error": history.get("error")}}
    fragile = []
    for entry in card["claims"]:
        if entry["result"] == "not scored":
            continue
        past = [r["claims"][entry["id"]] for r in mine if r["claims"].get(entry["id"], {}).get("result")]
        results = [p["result"] for p in past] + [entry["result"]]
        held, runs = results.count("holds"), len(results)
        text = (f"held in {held} of {runs} runs on this machine kind" if runs > 1
                else "the first recorded run on this machine kind")
        if others:
            text += f" ({others} run(s) on other machine kinds not counted)"
        line = {"runs": runs, "held": held, "text": text, "fragile": False}
        numeric = isinstance(entry.get("measured"), (int, float)) and not isinstance(entry["measured"], bool)
        if runs > 1 and len(set(results)) > 1:
            line.update(fragile=True, why=f"its verdict changed across the runs ({', '.join(results)})")
        elif numeric:
            values = [p["value"] for p in past if p.get("value") is not None] + [float(entry["measured"])]
            low, high = entry.get("interval") or (entry["measured"], entry["measured"])
            spread = max(max(values) - min(values), high - low)
            margin = _margin(by_id[entry["id"]], float(entry["measured"]))
            line.update(values=values, spread=spread, margin=margin)
            if len(values) > 1 and margin < spread:
                kind = METRICS[entry["metric"]][1]
                line.update(fragile=True, why=(f"its margin to the bound ({_delta(margin, kind)}) is "
                                               f"inside the spread across the runs ({_delta(spread, kind)})"))
        if line["fragile"]:
            line["text"] += f"; fragile: {line['why']}"
            fragile.append(entry["id"])
        entry["history"] = line
    card["fragile"] = fragile
    if fragile:
        card["headline"] += (f" Fragile across the {len(mine) + 1} recorded runs on this machine "
                             f"kind: {', '.join(fragile)}.")
    return card


def _margin(claim: dict[str, Any], value: float) -> float:
    """How far a value sits from the nearest numeric bound (inf without one)."""
    return min((abs(value - claim[b]) for b in ("at_least", "at_most") if b in claim),
               default=float("inf"))


def _delta(value: float, kind: str) -> str:
    return f"{100 * value:.1f} points" if kind == "percent" else f"{value:.2f}" + ("x" if kind == "times" else "")


def markdown(card: dict[str, Any]) -> str:
    """The scorecard as a Markdown table (the parent MLflow run's description)."""
    rows = ["| claim | published | measured | check | result | across runs |",
            "|---|---|---|---|---|---|"]
    for r in card["claims"]:
        rows.append(f"| {r['claim']} ({r['arm']}) | {r['published_text']} | {r['measured_text']} | "
                    f"{r['check']} | {r['result']} | {(r.get('history') or {}).get('text', '-')} |")
    return f"**{card['headline']}**\n\n" + "\n".join(rows)
