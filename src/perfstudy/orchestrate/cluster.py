"""What became of a study's SLURM jobs, in one sentence each (the Snakefile's onerror prints them).

Snakemake's SLURM executor keeps a failed job's log under .snakemake/slurm_logs/rule_<rule>/
<wildcards>/<job id>.log; SLURM writes there why it ended the job ("*** JOB 5 ON node1
CANCELLED AT ... DUE TO TIME LIMIT ***"). A job cancelled by scancel or cut at its time limit
left no "error:" line of ours behind, so without this the user would only read "job failed".
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

SLURM_LOGS = Path(".snakemake") / "slurm_logs"
ENDED = re.compile(r"\*\*\* (?:JOB|STEP) (\d+)(?:\.\S+)? ON (\S+) CANCELLED AT (\S+)"
                   r"(?P<why> DUE TO [A-Z ]+?)?(?: \*\*\*|$)")


def _time_limit(job_id: str) -> str | None:
    """The job's time limit as SLURM prints it (while SLURM still knows the job)."""
    try:
        answer = subprocess.run(["squeue", "-h", "-t", "all", "-j", job_id, "-o", "%l"],
                                capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    limit = answer.stdout.strip()
    return limit if answer.returncode == 0 and limit else None


def describe(log: Path, logs_root: Path = SLURM_LOGS) -> str | None:
    """One sentence for a job log SLURM ended (cancelled, or at its time limit), else None."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    found = ENDED.search(text)
    if not found:
        return None
    job_id, node, when = found.group(1), found.group(2), found.group(3)
    parts = log.relative_to(logs_root).parts if log.is_relative_to(logs_root) else log.parts[-3:]
    rule = parts[0].removeprefix("rule_") if parts else "?"
    what = f"rule {rule}" + (f", {parts[1]}" if len(parts) > 2 else "")
    why = (found.group("why") or "").strip()
    if "TIME LIMIT" in why:
        limit = _time_limit(job_id)
        return (f"SLURM job {job_id} ({what}) on {node} was stopped at its time limit"
                f"{f' ({limit})' if limit else ''}: raise the rule's runtime in minutes "
                f"(set-resources: {rule}: runtime in workflow/profiles/slurm/config.yaml, or "
                f"--set-resources {rule}:runtime=<minutes>), then run again; finished jobs are kept.")
    return (f"SLURM job {job_id} ({what}) on {node} was cancelled at {when}"
            f"{' ' + why.lower() if why else ' (scancel, or the cluster)'}: run the workflow again "
            "to redo it; finished jobs are kept and MLflow keeps one run per arm.")


def ended_jobs(since: float, logs_root: Path = SLURM_LOGS) -> list[str]:
    """Sentences for every job log written since `since` (epoch s) that SLURM ended."""
    if not logs_root.is_dir():
        return []
    out = []
    for log in sorted(logs_root.rglob("*.log")):
        try:
            recent = log.stat().st_mtime >= since
        except OSError:
            continue
        sentence = describe(log, logs_root) if recent else None
        if sentence:
            out.append(sentence)
    return out
