"""A real tracking server for the tests: PostgreSQL (Debian's binaries) behind `mlflow server`.

`make test` installs PostgreSQL when its binaries are missing (see the Makefile); the tests
start both servers on free loopback ports in temporary folders and stop them afterwards.
PostgreSQL refuses to run as root, so as root its commands run as an unprivileged user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PG_USER = "perfstudy"  # the database role (not a system account)
PG_DATABASE = "mlflow"


def pg_bin_dir() -> Path | None:
    """Folder of initdb/pg_ctl: on PATH, else Debian's newest /usr/lib/postgresql/<v>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    return candidates[-1].parent if candidates else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _system_user() -> str | None:
    """As root: an unprivileged account to run PostgreSQL as (postgres, else nobody)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("PostgreSQL cannot run as root and neither a postgres nor a nobody "
                       "account exists; create one (useradd postgres) and run the tests again.")


class Postgres:
    """A throwaway PostgreSQL cluster on 127.0.0.1 with trust authentication."""

    def __init__(self) -> None:
        bin_dir = pg_bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL's initdb was not found; run `make test` (it installs "
                               "Debian's postgresql) or apt-get install postgresql.")
        self.bin = bin_dir
        self.port = free_port()
        self.user = _system_user()
        self.dir = Path(tempfile.mkdtemp(prefix="perfstudy-pg-"))
        self.data = self.dir / "data"

    def _run(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", self.user, "--"] if self.user else []
        subprocess.run(prefix + list(cmd), check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> Postgres:
        if self.user:
            shutil.chown(self.dir, user=self.user)
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", PG_USER,
                  "--auth=trust", "-E", "UTF8")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "postgres.log"),
                  "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1", "-w", "start")
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", PG_USER, PG_DATABASE)
        return self

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://{PG_USER}@127.0.0.1:{self.port}/{PG_DATABASE}"

    def stop(self) -> None:
        try:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class MlflowServer:
    """`mlflow server` with a database backend, serving artifacts from a local folder."""

    def __init__(self, backend_uri: str, artifacts: Path, log: Path) -> None:
        self.backend_uri = backend_uri
        self.artifacts = artifacts
        self.log = log
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 180) -> MlflowServer:
        mlflow = str(Path(sys.executable).with_name("mlflow"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [mlflow, "server", "--backend-store-uri", self.backend_uri,
                 "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited ({self.process.returncode}); see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"mlflow server did not answer within {timeout:.0f} s; see {self.log}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        # the port must refuse connections before the caller relies on "server down"
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                time.sleep(0.2)
            except OSError:
                return


@contextmanager
def mlflow_on_postgres(folder: Path, start: bool = True) -> Iterator[MlflowServer]:
    """A throwaway PostgreSQL cluster behind an `mlflow server` (artifacts and log under
    `folder`), started unless `start` is False (the test starts and stops it), both stopped
    after."""
    database = Postgres().start()
    server = MlflowServer(database.url, folder / "artifacts", folder / "server.log")
    try:
        yield server.start() if start else server
    finally:
        server.stop()
        database.stop()
