"""Every shell command that README.md and docs/*.md show in a ```bash block, run as written.

Each command is run in a sandbox (the repository's files linked into a temporary folder, so
results/ and outputs/ land there), the commands of one block in order (an `export` carries to
the lines after it). A command too long for the suite runs as itself with one addition, named
in RULES: `-n` (Snakemake's dry run) for a whole study, `size=smoke` (and no candidates'
rounds) for a training that names no size. A command no rule knows fails the suite: a new one
must say how it is checked."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINKED = ["Snakefile", "conf", "workflow", "scripts", "src", "docs", "profiles", "Makefile",
          "pyproject.toml", "requirements.lock", ".venv"]
DRY_RUN = "This was a dry-run"


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str  # continuation lines joined, its comment dropped
    comment: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def commands(pages: list[Path] = PAGES) -> list[Command]:
    """The commands of every ```bash block, in page order."""
    found = []
    for page in pages:
        lines = page.read_text().splitlines()
        inside = False
        pending: list[str] = []
        start = 0
        for number, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):  # a fence, indented in a list too
                inside = line.strip() == "```bash"
                continue
            if not inside or (not pending and (not line.strip() or line.lstrip().startswith("#"))):
                continue
            if not pending:
                start = number
            pending.append(line.rstrip("\\").strip())
            if not line.rstrip().endswith("\\"):
                text, _, comment = " ".join(pending).partition(" # ")
                found.append(Command(str(page.relative_to(REPO)), start, " ".join(text.split()),
                                     comment.strip()))
                pending = []
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Sandbox:
    root: Path
    env: dict[str, str]

    def run(self, text: str, timeout: int = 900) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-ec", text], cwd=self.root, env=self.env, text=True,
                              capture_output=True, timeout=timeout)


def _export(box: Sandbox, cmd: Command) -> None:
    """`export NAME=value`: carried to the block's later commands (bash expands the value)."""
    name = cmd.text.split()[1].split("=", 1)[0]
    done = box.run(f"{cmd.text}; printf %s \"${name}\"")
    assert done.returncode == 0, f"{cmd} failed:\n{done.stderr[-2000:]}"
    box.env[name] = done.stdout


def _dry_snakemake(box: Sandbox, cmd: Command) -> None:
    """A whole study: its DAG built and every arm composed (Snakemake's dry run, -n). An
    accelerator this MindSpore lacks is refused in the one sentence the docs promise."""
    from perfstudy.common import device

    text = cmd.text.replace("make run", "make run SNAKEMAKE_ARGS=-n", 1) if cmd.text == "make run" \
        else re.sub(r'SNAKEMAKE_ARGS="([^"]*)"', r'SNAKEMAKE_ARGS="\1 -n"', cmd.text) \
        if cmd.text.startswith("make ") else f"{cmd.text} -n"
    done = box.run(text)
    out = done.stdout + done.stderr
    if "device=gpu" in cmd.text and not device.available("GPU"):
        # planned like any study (its jobs may run on a cluster's GPU nodes); run as written
        # here, it stops when it starts, in one sentence, before any data is built
        assert done.returncode == 0 and DRY_RUN in out, f"{cmd} (as `{text}`) failed:\n{out[-3000:]}"
        done = box.run(cmd.text)
        out = done.stdout + done.stderr
        assert done.returncode != 0, f"{cmd}: device=gpu ran on a CPU-only MindSpore"
        assert "device=gpu trains on GPU" in out and "add device=cpu to the overrides" in out, out[-2000:]
        assert not list(box.root.glob("results/data/*/manifest.json")), "data was built"
        return
    assert done.returncode == 0 and DRY_RUN in out, f"{cmd} (as `{text}`) failed:\n{out[-3000:]}"


def _train_smoke(box: Sandbox, cmd: Command) -> None:
    """A training: run as written at smoke size. Where it names no size, `size=smoke` is added,
    and `verify.candidates=0` unless it names a verify key: the candidates' rounds are
    tests/unit/run/test_verify.py's, test_own_training's (a pipeline of one's own) and the smoke
    study's, and here they were half of each training's time. A command that names its size
    runs as written, rounds and all."""
    text = cmd.text
    if "size=" not in cmd.text:
        text += " size=smoke" + ("" if "verify." in cmd.text else " verify.candidates=0")
    done = box.run(text)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"{cmd} (as `{text}`) failed:\n{out[-3000:]}"
    if "--cfg job" in text:  # Hydra prints the composed config and stops
        assert "trainer:" in done.stdout, out[-2000:]
    else:
        assert list(box.root.rglob("summary.json")), f"{cmd}: no summary.json"  # a multirun: its own folders


def _ui(box: Sandbox, cmd: Command) -> None:
    """The MLflow UI on the study's store: it answers over HTTP (on a free port)."""
    (box.root / "results" / "mlflow").mkdir(parents=True, exist_ok=True)
    port = _free_port()
    text = re.sub(r"--port \d+", f"--port {port}", cmd.text)
    ui = subprocess.Popen(["bash", "-ec", f"exec {text}"], cwd=box.root, env=box.env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True)
    try:
        deadline, answered = time.time() + 120, None
        while time.time() < deadline and ui.poll() is None and answered is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as page:
                    answered = page.status
            except OSError:
                time.sleep(0.5)
        assert answered == 200, f"{cmd}: no answer on port {port}"
    finally:
        os.killpg(ui.pid, 15)
        output = ui.communicate(timeout=30)[0]
    assert (box.root / "results" / "mlflow" / "mlflow.db").exists(), output[-2000:]


def _covered(test: str, *fragments: str) -> Callable[[Sandbox, Command], None]:
    """A command that needs a system service (PostgreSQL refuses root; `make run` against a
    server is a whole study): the named test runs it, checked here to still say `fragments`."""
    def check(box: Sandbox, cmd: Command) -> None:
        source = (REPO / test).read_text()
        missing = [f for f in fragments if f not in source]
        assert not missing, f"{cmd}: {test} no longer says {missing} (does it still run it?)"
    return check


def _prediction_check(box: Sandbox, cmd: Command) -> None:
    """The model against the recorded sweeps, its table and band written into the sandbox: the
    same table as the one committed (docs/benchmarks/prediction-check.md), and with
    --write-band, the band the package ships."""
    out, band = box.root / "check", box.root / "band.json"
    done = subprocess.run(["bash", "-ec", f"{cmd.text} --out {out} --band {band}"], cwd=box.root,
                          env=box.env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{cmd}: failed\n{done.stderr[-3000:]}"
    committed = REPO / "docs" / "benchmarks" / "prediction-check.md"
    assert out.with_suffix(".md").read_text() == committed.read_text(), \
        f"{cmd}: the committed table is stale (run it again and commit {committed.name})"
    if "--write-band" in cmd.text:
        shipped = REPO / "src" / "perfstudy" / "decide" / "prediction_band.json"
        assert band.read_text() == shipped.read_text(), f"{cmd}: the shipped band is stale"


def _suite(box: Sandbox, cmd: Command) -> None:
    """`make test` is the suite this test is part of."""


# (pattern of the command as written, how it is checked); the first that matches
RULES: list[tuple[str, Callable[[Sandbox, Command], None]]] = [
    (r"^export \w+=", _export),
    (r"^make test$", _suite),
    (r"^make run\b", _dry_snakemake),
    (r"^scripts/device_check\.sh (gpu|ascend) \S+$",
     _covered("tests/workflow/test_workflow.py", "device_check.sh", '"gpu", str(tmp_path / "gpu")')),
    (r"^make compare A=\S+ B=\S+$", _covered("tests/e2e/test_concurrency.py", '"compare"', "A={folders[0]}")),
    (r"^\.venv/bin/snakemake ", _dry_snakemake),
    (r"^\.venv/bin/python scripts/prediction_check\.py( --write-band)?$", _prediction_check),
    (r"^(\w+=\S+ )*\.venv/bin/python scripts/train\.py ", _train_smoke),
    (r"^\.venv/bin/mlflow ui ", _ui),
    (r"^initdb ", _covered("tests/servers.py", '"initdb"', '"pg_ctl"')),
    (r"^createdb ", _covered("tests/servers.py", '"createdb"')),
    (r"^\.venv/bin/mlflow server --backend-store-uri postgresql\+psycopg2://",
     _covered("tests/servers.py", "postgresql+psycopg2://", "--artifacts-destination")),
    (r"^MLFLOW_TRACKING_URI=http://127\.0\.0\.1:5000 make run$",
     _covered("tests/e2e/test_tracking_server.py", '"MLFLOW_TRACKING_URI": server.uri')),
]


def rule_for(cmd: Command) -> Callable[[Sandbox, Command], None] | None:
    return next((check for pattern, check in RULES if re.search(pattern, cmd.text)), None)


def test_every_documented_command_has_a_rule_and_the_pages_have_commands():
    found = commands()
    assert len(found) >= 15 and {c.page for c in found} >= {"README.md", "docs/configuration.md"}
    unknown = [str(c) for c in found if rule_for(c) is None]
    assert not unknown, "a documented command no rule checks (add one to RULES):\n" + "\n".join(unknown)
    assert all(shlex.split(c.text) for c in found)  # each parses as a shell line


def test_a_broken_command_fails_its_rule(tmp_path):
    """The rules can fail: a training that names a key the config lacks, and a study whose
    override is wrong, are each refused (the test would catch a page that documents them)."""
    box = _sandbox(tmp_path)
    broken = Command("x.md", 1, ".venv/bin/python scripts/train.py trainer.stepz=3", "")
    with pytest.raises(AssertionError, match="failed"):
        _train_smoke(box, broken)
    with pytest.raises(AssertionError, match="failed"):
        _dry_snakemake(box, Command("x.md", 2, ".venv/bin/snakemake --cores all --config "
                                    "overrides='[size=huge]'", ""))


def _sandbox(root: Path) -> Sandbox:
    for name in LINKED:
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PYTHONPATH"))}
    return Sandbox(root, env)


def _cases() -> list[tuple[Command, list[Command]]]:
    """Each distinct command once (the first page that shows it), with the exports before it on
    its page (they carry to it, as in a shell that ran the page's commands in order)."""
    cases, seen, exports = [], set(), {}
    for cmd in commands():
        if rule_for(cmd) is _export:
            exports.setdefault(cmd.page, []).append(cmd)
        elif cmd.text not in seen:
            seen.add(cmd.text)
            cases.append((cmd, list(exports.get(cmd.page, []))))
    return cases


@pytest.mark.parametrize("cmd, exports", [pytest.param(c, e, id=f"{c.page}:{c.line}")
                                          for c, e in _cases()])
def test_each_documented_command_runs_as_written(cmd, exports, tmp_path):
    box = _sandbox(tmp_path)
    for export in exports:
        _export(box, export)
    check = rule_for(cmd)
    assert check is not None, f"no rule for {cmd}"
    check(box, cmd)
