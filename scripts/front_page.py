#!/usr/bin/env python
"""README's measured section, from a run's results (never typed): reads the study's report
and runs, keeps what it read in docs/benchmarks/front-page.json, copies the step breakdown
to docs/img/ and rewrites README between its markers. --check: README says what the record
holds (the test suite runs it).

    .venv/bin/python scripts/front_page.py --results results      # after make run
    .venv/bin/python scripts/front_page.py --check
"""

import argparse
import shutil
import sys
from pathlib import Path

from perfstudy.orchestrate.cli import UserError, main_guard
from perfstudy.present import front_page

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", type=Path, help="the results folder of a finished make run")
    parser.add_argument("--study", default="seed_case")
    parser.add_argument("--check", action="store_true", help="README matches the record; writes nothing")
    args = parser.parse_args()
    readme_path = ROOT / "README.md"
    readme = readme_path.read_text()
    if args.check:
        if not (ROOT / front_page.RECORD).is_file():
            raise UserError(f"{front_page.RECORD} is missing: write it with scripts/front_page.py "
                            "--results <a run's results>.")
        block = front_page.render(front_page.read(ROOT))
        if front_page.block_of(readme) != block:
            raise UserError("README.md's measured section is not what docs/benchmarks/"
                            "front-page.json holds: write it with scripts/front_page.py "
                            "--results <a run's results>, never by hand.")
        print("README.md's measured section matches docs/benchmarks/front-page.json")
        return
    if args.results is None:
        raise UserError("Name the results of a finished run (--results results), or use --check.")
    report = args.results / "report" / args.study
    if not (report / "scorecard.json").is_file():
        raise UserError(f"{report} has no scorecard.json: run the study to its report first "
                        "(make run), then write the front page from its results.")
    page = front_page.from_results(args.results, args.study)
    shutil.copyfile(report / "figures" / "step_breakdown.png", ROOT / front_page.FIGURE)
    front_page.write(page, ROOT)
    readme_path.write_text(front_page.replace_block(readme, front_page.render(page)))
    print(f"README.md's measured section written from {args.results} ({page.commit}, {page.date})")


if __name__ == "__main__":
    sys.exit(main_guard(main))
