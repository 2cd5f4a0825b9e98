#!/usr/bin/env python
"""Profiler overhead: one arm trained with profiler=off, light and full; steady-step ratios.

A benchmark, not a test: it prints figures (and writes a CSV) for a person to read. Runs
alternate between the settings round by round, so slow drift of a shared machine spreads
over all of them; compare the ratios within one invocation. Two figures per setting:
the measured (unprofiled) steps, which the study reports, and the profiled steps that
follow them (profiler.placement=after), whose cost is the profiler's own.

    python scripts/bench_profiler.py                       # tuned arm, cpu_demo, 1 round (~8 min)
    python scripts/bench_profiler.py --rounds 3 --arm baseline
    python scripts/bench_profiler.py --overrides size=smoke  # seconds, to try the script
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd

from perfstudy.run.summary import read_summary

REPO = Path(__file__).resolve().parents[1]
SETTINGS = ("off", "light", "full")


def train_once(arm: str, profiler: str, round_index: int, results: Path, data_root: Path,
               overrides: list[str]) -> dict:
    """Train one arm in a fresh process; returns the summary's timing figures."""
    run_name = f"{profiler}_r{round_index}"
    command = [sys.executable, str(REPO / "scripts" / "train.py"), f"experiment={arm}",
               f"profiler={profiler}", "study=bench_profiler", f"arm={run_name}",
               f"paths.results={results}", f"paths.data_root={data_root}", *overrides]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"training with profiler={profiler} failed:\n{done.stderr[-2000:]}")
    summary = read_summary(results / "runs" / "bench_profiler" / run_name)
    window = summary.profiled_window
    return {"profiler": profiler, "round": round_index, "steady_step_ms": summary.steady_step_ms,
            "gap_share": summary.gap_share, "fwd_bwd_ms_mean": summary.fwd_bwd_ms.mean,
            "train_wall_s": summary.train_wall_s,
            "analyse_s": summary.profile.analyse_s or 0.0,
            "profiled_step_ms": window.steady_step_ms if window else None,
            "profiled_gap_share": window.gap_share if window else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arm", default="tuned", help="experiment to train (baseline | tuned)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of off/light/full")
    parser.add_argument("--results", default=str(REPO / "results" / "bench"),
                        help="where the benchmark's runs go")
    parser.add_argument("--data-root", default=str(REPO / "results" / "data"),
                        help="dataset folder (reused when it matches; generated otherwise)")
    parser.add_argument("--overrides", nargs="*", default=[], help="extra Hydra overrides")
    args = parser.parse_args()
    rows = []
    for round_index in range(args.rounds):
        order = SETTINGS if round_index % 2 == 0 else tuple(reversed(SETTINGS))
        for profiler in order:
            row = train_once(args.arm, profiler, round_index, Path(args.results), Path(args.data_root),
                             args.overrides)
            profiled = ("" if row["profiled_step_ms"] is None else
                        f"  | profiled steps {row['profiled_step_ms']:7.0f} ms"
                        f"  gap {100 * row['profiled_gap_share']:4.1f} %")
            print(f"round {round_index} profiler={profiler:5s} measured steps {row['steady_step_ms']:7.0f} ms"
                  f"  gap {100 * row['gap_share']:4.1f} %{profiled}", flush=True)
            rows.append(row)
    frame = pd.DataFrame(rows)
    off = statistics.median(frame[frame["profiler"] == "off"]["steady_step_ms"])
    print(f"\nProfiler overhead, arm {args.arm}, {args.rounds} round(s) "
          "(median steady step; ratio to profiler=off's measured steps):")
    for profiler in SETTINGS:
        part = frame[frame["profiler"] == profiler]
        median = statistics.median(part["steady_step_ms"])
        line = (f"  {profiler:5s} measured {median:7.0f} ms x{median / off:.3f} gap "
                f"{100 * part['gap_share'].median():4.1f} %")
        if part["profiled_step_ms"].notna().any():
            prof = statistics.median(part["profiled_step_ms"].dropna())
            line += (f" | profiled {prof:7.0f} ms x{prof / off:.3f} gap "
                     f"{100 * part['profiled_gap_share'].dropna().median():4.1f} %")
        print(line + f" | analysis after training {part['analyse_s'].median():.1f} s")
    out = Path(args.results) / "profiler_overhead.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out, index=False)
    print(f"\nper-run figures: {out}")


if __name__ == "__main__":
    main()
