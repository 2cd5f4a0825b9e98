#!/usr/bin/env python
"""How many counted steps a verification window should wait for, from runs already made.

Reads every summary.json under the given folders (a study's results/runs/<study>/...), takes
the rounds each run measured (its verification, its sweep, its remedy against the source),
splits the rounds' variance into the windows' own and their steps' (perfstudy.measure.window_size)
and prints, per size, the counted steps that make a decision cheapest against verify.min_steps
as it was set, with what a decision costs at each.

    python scripts/size_windows.py results/runs/seed_case
    python scripts/size_windows.py results/calibration/decision/smoke.json --json /tmp/windows.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict
from pathlib import Path

import yaml

from perfstudy.measure import window_size
from perfstudy.measure.window_size import Components, components
from perfstudy.orchestrate.cli import UserError, main_guard, setup_logging
from perfstudy.run.summary import read_summary


def from_runs(folder: Path) -> dict[str, tuple[list, list, set[int]]]:
    """Per size: every run's paired rounds, window costs and the min_steps they used."""
    out: dict[str, tuple[list, list, set[int]]] = {}
    for path in sorted(folder.rglob("summary.json")):
        summary = read_summary(path.parent)
        found = [r for r in (summary.verification.rounds if summary.verification else None,
                             summary.sweep.rounds if summary.sweep else None,
                             summary.against_source.rounds if summary.against_source else None) if r]
        pairs, costs, steps = out.setdefault(summary.size, ([], [], set()))
        for index, rounds in enumerate(found):
            p, c = window_size.from_rounds(rounds, f"{path.parent}/{index}")
            pairs.extend(p)
            costs.extend(c)
        config = path.parent / "config.yaml"
        if found and config.exists():
            steps.add(int((yaml.safe_load(config.read_text()) or {}).get("verify", {}).get("min_steps", 0)))
    return out


def from_calibration(path: Path) -> dict[str, tuple[list, list, set[int]]]:
    """A calibration's comparisons (scripts/calibrate_decision.py records every window)."""
    recorded = json.loads(path.read_text())
    pairs, costs = [], []
    for index, trial in enumerate(recorded.get("trials", [])):
        windows = {(w["setting"], w["round"]): w for w in trial.get("windows", [])
                   if w["step_ms"] and w["counted"]}
        for r in sorted({key[1] for key in windows}):
            a, b = windows.get((0, r)), windows.get((1, r))
            if a and b:
                pairs.append(window_size.PairedRound(f"{path.name}/{index}", math.log(b["step_ms"] / a["step_ms"]),
                                                     a["counted"], b["counted"]))
        costs.extend(window_size.WindowCost(w["wall_s"], w["step_ms"], w["counted"]) for w in windows.values())
    return {recorded["size"]: (pairs, costs, {int(recorded["verify"]["min_steps"])})}


def line(size: str, found: Components, min_steps: set[int]) -> str:
    best = found.best_steps
    now = found.counted_steps
    caveat = (f" CONFOUNDED: {100 * (1 - found.length_within_share):.0f} % of the windows' length "
              "variation lies between comparisons, whose own noise differs: do not size the windows "
              "from this split (at cpu_demo it said 'shorter'; 2 counted steps made the two-worker "
              "windows noisier, docs/measurement.md)." if found.confounded else "")
    text = (f"{size}: {found.pairs} paired rounds; a window's variance {found.between_log_var:.4f} "
            f"(log) of its own + {found.within_log_var:.4f} / its counted steps; a window costs "
            f"{found.overhead_s:.1f} s + {found.step_s:.2f} s per step, {now:.1f} counted steps now "
            f"(verify.min_steps {', '.join(str(s) for s in sorted(min_steps))}). ")
    if math.isinf(best):
        return text + "The windows add no variance of their own: longer windows are cheaper." + caveat
    ratio = found.cost_per_precision(max(best, 1.0)) / found.cost_per_precision(now)
    return text + (f"Cheapest at {best:.1f} counted steps: a decision would cost {ratio:.2f}x what it "
                   f"costs at {now:.1f}.") + caveat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", help="folders holding runs' summary.json, or "
                        "calibrations' JSON (scripts/calibrate_decision.py)")
    parser.add_argument("--json", help="write the components per size here")
    args = parser.parse_args()
    setup_logging()
    out = {}
    by_size: dict[str, tuple[list, list, set[int]]] = {}
    for given in args.folders:
        path = Path(given)
        if path.is_dir():
            found_here = from_runs(path)
        elif path.suffix == ".json" and path.exists():
            found_here = from_calibration(path)
        else:
            raise UserError(f"{given} is neither a folder of runs nor a calibration's JSON; pass a "
                            "study's results/runs/<study> folder or results/calibration/decision/*.json.")
        for size, (pairs, costs, steps) in found_here.items():
            into = by_size.setdefault(size, ([], [], set()))
            into[0].extend(pairs)
            into[1].extend(costs)
            into[2].update(steps)
    for size, (pairs, costs, min_steps) in by_size.items():
        found = components(pairs, costs)
        if found is None:
            print(f"{size}: too few paired rounds, or windows all of one length, to split their variance")
            continue
        print(line(size, found, min_steps))
        out[size] = {**asdict(found), "best_steps": found.best_steps, "min_steps": sorted(min_steps)}
    if not by_size:
        raise UserError("no run with measured rounds under " + ", ".join(args.folders) + ".")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main_guard(main))
