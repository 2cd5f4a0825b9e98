#!/usr/bin/env python
"""Build the study's report (comparison.csv, figures, report.md, report.html) from its arms.

    python scripts/make_report.py --study seed_case --runs-dir results/runs/seed_case \
        --out results/report/seed_case --arms baseline tuned --claims workflow/claims/seed_case.yaml
"""

import argparse
import logging
import sys
from pathlib import Path

from perfstudy.common import config
from perfstudy.decide import claims, scorecard
from perfstudy.decide.arms import load_arm
from perfstudy.orchestrate.cli import UserError, main_guard, setup_logging
from perfstudy.present import history, mlflow_fields, mlflow_store, report, sentences

log = logging.getLogger("make_report")


def _history(args, spec, arms) -> scorecard.History | None:
    """The study's earlier recorded runs from its tracking store (None: no claims, or
    tracking.history is off); a store that cannot be read is said in the scorecard, not fatal:
    the report needs no tracking server."""
    cfg = config.load_run_config(Path(args.runs_dir) / args.arms[0] / "config.yaml")
    if not spec or not spec.claims or not cfg.tracking.history:
        return None
    uri = mlflow_store.resolve_uri(cfg.tracking.uri, cfg.paths.results)
    ctx = history.context_of_runs(args.study, args.claims, arms)
    stamp = max(mlflow_fields.run_end_ms(a.steps) for a in arms)  # these results' own point
    found = history.read(uri, f"{cfg.tracking.experiment_prefix}/{args.study}", ctx,
                         [c.id for c in spec.claims], exclude_stamp=stamp)
    log.info("history: %s", found.error or f"{len(found.records)} earlier recorded run(s) in {uri}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", required=True)
    parser.add_argument("--runs-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--arms", nargs="+", required=True)
    parser.add_argument("--claims", default="",
                        help="the study's claims file (YAML); none: the report has no scorecard")
    args = parser.parse_args()
    setup_logging()
    spec = claims.load(args.claims) if args.claims else None  # a bad file fails before any work
    arms = []
    for name in args.arms:
        run_dir = Path(args.runs_dir) / name
        arm = load_arm(run_dir, name)
        summary = arm.summary
        run = summary.run
        if summary.study != args.study or run != name:
            raise UserError(f"{run_dir}/summary.json belongs to study {summary.study!r} "
                            f"arm {run!r}, not {args.study!r}/{name!r}; delete "
                            "that folder and run snakemake again.")
        composed = config.config_hash(config.load_run_config(run_dir / "config.yaml"))
        if summary.config_hash != composed:
            raise UserError(f"{run_dir}/summary.json was made with config {summary.config_hash} "
                            f"but {run_dir}/config.yaml is now config {composed}; retrain that arm "
                            "(snakemake --cores all --forcerun train) rather than mixing results of "
                            "two configs in one report.")
        arms.append(arm)
    # decided first (decide/), then drawn (present/): the report renders the scored card
    card = scorecard.make(spec, [a for a in arms if a.summary.repeat == 1], arms,
                            _history(args, spec, arms))
    scorecard.write(args.out, card)
    paths = report.build(args.study, arms, args.out, card)
    for arm in arms:
        log.info(sentences.verdict(arm, arms[0] if arms[0].name == "baseline" else None))
    log.info("scorecard: %s", card.headline)
    log.info("report: %s", paths["html"])


if __name__ == "__main__":
    sys.exit(main_guard(main))
