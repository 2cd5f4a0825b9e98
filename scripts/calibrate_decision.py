#!/usr/bin/env python
"""The verification's decision calibrated on this machine: A/A and known injected effects.

A calibration, not a test (it prints a table for a person to read and writes it as JSON): one
training process compiles the arm's graphs once, measures its plain step, then runs
comparisons by the verification's own protocol (perfstudy.run.decision_calibration): `--aa`
of the setting against itself, `--per-effect` with the reference slowed by each `--effects`
share. The comparisons' kinds are shuffled (seeded), so drift of the host falls on all alike.

    python scripts/calibrate_decision.py --size smoke                   # ~10 min on 2 cores
    python scripts/calibrate_decision.py --size cpu_demo --aa 20 --per-effect 10   # hours
    python scripts/calibrate_decision.py --size smoke --aa 2 --per-effect 1  # a minute, to try it
    python scripts/calibrate_decision.py --size smoke --aa 20 --per-effect 0 --window-steps 2,4,8 --tag windows
        # windows of varied length, for scripts/size_windows.py
    python scripts/calibrate_decision.py --size cpu_demo --inject map --aa 0 --effects 0.25,0.10
        # the known effects inside the input-bound baseline's map (its bottleneck)
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from perfstudy.common import config
from perfstudy.common.thresholds import pct
from perfstudy.data import sources
from perfstudy.orchestrate.cli import UserError, main_guard, setup_logging
from perfstudy.present.document import md_table
from perfstudy.run import decision_calibration as bench
from perfstudy.run import pipeline, train, training_data, verify
from perfstudy.run.step import TrainStep, compile_graphs

log = logging.getLogger("calibrate_decision")


def markdown(rows: list[dict], size: str, plain_ms: float) -> str:
    """The calibration table (pandas' to_markdown)."""
    table = pd.DataFrame([{
        f"{size} (plain step {plain_ms:.0f} ms)": "A/A" if r["effect"] == 0
        else f"reference slowed by {pct(r['effect'])}",
        "comparisons": r["comparisons"], "faster": pct(r["faster"]), "slower": pct(r["slower"]),
        "equivalent": pct(r["equivalent"]), "inconclusive": pct(r["inconclusive"]),
        "rounds (median)": f"{r['rounds_median']:.0f}",
        "gain measured (pooled, 95 %)": f"{pct(r['measured_gain'], 1, signed=True)} "
        f"({pct(r['measured_gain_low'], 1)} to {pct(r['measured_gain_high'], 1)})"} for r in rows])
    return md_table(table)


def combined(paths: list[str]) -> str:
    """One table from several invocations' JSON (their trials pooled); refuses a mix of sizes
    or injections (their effects are not the same effect)."""
    outputs = [json.loads(Path(p).read_text()) for p in paths]
    # an A/A comparison is the same whatever --inject said; an injected effect is not
    kinds = {(o["size"], o.get("inject", "thread") if any(t["effect"] for t in o["trials"]) else "")
             for o in outputs}
    if len({k[0] for k in kinds}) > 1 or len({k[1] for k in kinds} - {""}) > 1:
        raise UserError(f"--combine: these outputs differ in size or injection ({sorted(kinds)}); "
                         "combine only runs of one size and one --inject.")
    trials = [bench.Trial(**t) for o in outputs for t in o["trials"]]
    plain = float(np.median([o["plain_step_ms"] for o in outputs]))
    size = outputs[0]["size"]
    return (markdown(bench.table(trials), size, plain)
            + f"\n\n({len(trials)} comparisons from {len(paths)} runs; plain step: the runs' median)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="smoke", help="smoke | cpu_demo")
    parser.add_argument("--experiment", default="baseline")
    parser.add_argument("--aa", type=int, default=20, help="A/A comparisons")
    parser.add_argument("--effects", default="0.25,0.10", help="injected slowdowns of the reference")
    parser.add_argument("--per-effect", type=int, default=10, help="comparisons per effect")
    parser.add_argument("--inject", choices=("thread", "map"), default="thread",
                        help="where the known effect goes: the training's thread after each step, "
                             "or fixed NumPy work inside the article's map (per image)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--window-steps", default="",
                        help="e.g. 2,4,8: each window waits for a count drawn from these (the "
                             "windows' variance split by scripts/size_windows.py)")
    parser.add_argument("--tag", default="", help="appended to the JSON's name (several invocations)")
    parser.add_argument("--results", default="results")
    parser.add_argument("--combine", nargs="+", metavar="JSON",
                        help="print one table from the trials of these earlier outputs (same size "
                             "and injection), run nothing")
    parser.add_argument("overrides", nargs="*", help="more Hydra overrides")
    args = parser.parse_args()
    setup_logging()
    if args.combine:
        print(combined(args.combine))
        return
    effects = [float(e) for e in args.effects.split(",") if e.strip()]
    window_steps = [int(n) for n in args.window_steps.split(",") if n.strip()]
    kinds = [0.0] * args.aa + [e for e in effects for _ in range(args.per_effect)]
    cfg = config.compose_run_config([f"size={args.size}", f"experiment={args.experiment}",
                                     f"paths.results={args.results}", *args.overrides])
    # the optimizer's learning-rate schedule must cover every step the comparisons can take
    longest = bench.with_min_steps(cfg, max(window_steps)) if window_steps else cfg
    most = (len(kinds) * 2 + 3) * verify.total_steps(longest)
    cfg = config.compose_run_config([f"size={args.size}", f"experiment={args.experiment}",
                                     f"paths.results={args.results}", *args.overrides,
                                     f"trainer.steps={most}"])
    train._setup_mindspore(cfg)
    manifest = training_data.load_data(cfg, None)
    source = sources.training_source(manifest)
    step = TrainStep(cfg, training_data.model_classes(cfg, manifest))
    compile_graphs(step, cfg, source, train.run_seed(cfg) + 3)
    plain = bench.plain_step_ms(step, source, cfg)
    log.info("plain step %.0f ms at the run's own setting", plain)
    order = np.random.default_rng(args.seed).permutation(len(kinds))
    references = {}  # effect -> the reference's config, its map slowed (inject=map)
    if args.inject == "map":
        workers = pipeline.resolve_workers(cfg.pipeline.num_parallel_workers,
                                           cfg.pipeline.global_default_workers, quiet=True).effective
        per_pass = bench.fft_pass_ms()  # timed once, so the effects' sizes keep their ratio
        for effect in effects:
            passes = bench.fft_passes(effect * plain * workers / cfg.pipeline.batch_size, per_pass)
            references[effect] = config.compose_run_config([
                f"size={args.size}", f"experiment={args.experiment}", f"paths.results={args.results}",
                *args.overrides, f"trainer.steps={most}",
                "pipeline.decode_map_extra=perfstudy.run.transforms:NumpyFFT",
                f"+pipeline.decode_map_extra_args.passes={passes}", "+pipeline.decode_map_extra_args.size=128"])
            log.info("effect %s: %d FFT passes per image inside the map", pct(effect), passes)
    name = (args.size if args.inject == "thread" else f"{args.size}-map") + (f"-{args.tag}" if args.tag else "")
    out = Path(args.results) / "calibration" / "decision" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    trials: list[bench.Trial] = []
    rows: list[dict] = []
    for number, i in enumerate(order):
        effect = kinds[i]
        found = bench.trial(step, source, cfg, effect,
                            effect * plain / 1e3 if args.inject == "thread" else 0.0,
                            args.seed + 7919 * number, references.get(effect), window_steps)
        log.info("comparison %d/%d (%s): %s, %d rounds, ratio %.3f", number + 1, len(kinds),
                 "A/A" if effect == 0 else f"+{pct(effect)}", found.outcome, found.rounds, found.ratio)
        trials.append(found)
        rows = bench.table(trials)  # written after every comparison: a stopped run keeps its part
        out.write_text(json.dumps({"size": args.size, "experiment": args.experiment, "inject": args.inject,
                                   "plain_step_ms": plain, "planned": len(kinds),
                                   "verify": {k: cfg.verify[k] for k in cfg.verify},
                                   "rows": rows, "trials": [asdict(t) for t in trials]}, indent=2))
    print(markdown(rows, args.size, plain))
    print(f"(written to {out})")


if __name__ == "__main__":
    sys.exit(main_guard(main))
