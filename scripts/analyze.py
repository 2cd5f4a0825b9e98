"""Analyse one arm's run folder: tidy tables, Chrome trace, diagnosis.json (rule analyze).

    python scripts/analyze.py --run-dir results/runs/seed_case/baseline
"""

import argparse
import sys

from perfstudy.measure.minddata import ProfileFormatError
from perfstudy.orchestrate.analyze import analyze_run
from perfstudy.orchestrate.cli import main_guard, setup_logging


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", required=True, help="a run folder written by scripts/train.py")
    args = parser.parse_args()
    setup_logging()
    analyze_run(args.run_dir)


if __name__ == "__main__":
    sys.exit(main_guard(main, extra_errors=(ProfileFormatError,)))
