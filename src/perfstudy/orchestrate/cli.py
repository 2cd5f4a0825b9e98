"""Shared plumbing of the scripts/ programs: logging and turning user errors into one line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perfstudy.common.config import ConfigError
from perfstudy.common.io import OutputError
from perfstudy.common.records import RecordError
from perfstudy.data.dataset import DatasetError

USER_ERRORS: tuple[type[BaseException], ...] = (ConfigError, DatasetError, FloatingPointError,
                                                 OutputError, RecordError)


class UserError(Exception):
    """A problem the user can fix; its message is one sentence that says how."""


def setup_logging(log_file: str | None = None) -> None:
    """Log to stderr (Snakemake sends it to the rule's log) and optionally to a file."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def main_guard(func: Callable[[], Any],
               extra_errors: tuple[type[BaseException], ...] = ()) -> int:
    """Run func; a user error prints one sentence to stderr and exits 2."""
    try:
        func()
    except (UserError, *USER_ERRORS, *extra_errors) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def errors_in_logs(folder: str | Path, since: float) -> list[str]:
    """The one-sentence errors ("error: ...") that jobs wrote to their logs since `since`.

    Snakemake only names a failed job's log; the workflow prints these at the end so the
    user reads the problem and the fix without opening a log file.
    """
    found = []
    for log in sorted(Path(folder).rglob("*.log")):
        try:
            if log.stat().st_mtime < since:
                continue
            lines = log.read_text(errors="replace").splitlines()
        except OSError:
            continue
        found += [f"{log.relative_to(folder)}: {line}" for line in lines if line.startswith("error: ")]
    return found
