#!/usr/bin/env python
"""Two studies, or two runs of one study, side by side: each claim's verdict and value in
both, each arm's steady step in both with their ratio, and what differs in their machines and
configs (perfstudy.present.side_by_side). Reads the results folders as the workflow left them.

    .venv/bin/python scripts/compare_runs.py results /tmp/run2
    make compare A=results B=/tmp/run2          # the same (STUDY=seed_case by default)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from perfstudy.orchestrate.cli import main_guard
from perfstudy.present import side_by_side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", type=Path, help="the first results folder (e.g. results)")
    parser.add_argument("b", type=Path, help="the second results folder")
    parser.add_argument("--study", default="seed_case", help="the study in both (seed_case)")
    parser.add_argument("--labels", nargs=2, metavar=("A", "B"),
                        help="names for the two (default: the folders' paths)")
    parser.add_argument("--out", type=Path, help="also write the comparison (Markdown) there")
    args = parser.parse_args()
    labels = args.labels or [str(args.a), str(args.b)]
    if labels[0] == labels[1]:
        labels = [f"A ({labels[0]})", f"B ({labels[1]})"]
    a = side_by_side.read_side(args.a, args.study, labels[0])
    b = side_by_side.read_side(args.b, args.study, labels[1])
    text = side_by_side.render(a, b)
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    sys.exit(main_guard(main, (side_by_side.CompareError,)))
