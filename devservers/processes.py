"""
Real server processes for crash, multi-process and browser tests and for the bench: a fresh database,
Daphne on a free port, a PostgreSQL cluster or a Redis server of one's own.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_database_url() -> str:
    return os.environ.get("DATABASE_URL", "")


def is_postgres() -> bool:
    return base_database_url().startswith(("postgres://", "postgresql://"))


class ServerDatabase:
    """A database of its own for server processes, created empty and migrated, dropped at the end."""

    def __init__(self, label: str, *, cluster: str | None = None, settings: str = "config.settings"):
        """
        `cluster`: the URL of another PostgreSQL cluster to make it in (an `OwnPostgres`), else the suite's.

        `settings`: the Django settings module whose migrations make its tables (bench/floor has its own).
        """
        self.label = f"wp_{label}_{uuid.uuid4().hex[:8]}"
        self.tmp = tempfile.TemporaryDirectory(prefix="waypoint-")
        self.cluster = cluster or base_database_url()
        template = _migrated(self.cluster, settings)
        if is_postgres():
            base = self.cluster.rsplit("/", 1)[0]
            self.url = f"{base}/{self.label}"
            self._admin(f'CREATE DATABASE "{self.label}" TEMPLATE "{template}"')
        else:
            self.url = f"sqlite:///{self.tmp.name}/db.sqlite3"
            shutil.copyfile(template, f"{self.tmp.name}/db.sqlite3")
        self.env = _server_env(self.url, self.tmp.name, settings)

    def _admin(self, sql: str) -> None:
        _admin(self.cluster, sql)

    def set(self, name: str, value: str) -> None:
        """A PostgreSQL setting for every session that connects to this database from now on."""
        self._admin(f'ALTER DATABASE "{self.label}" SET {name} = {value}')

    def manage(self, *args: str, env: dict | None = None) -> str:
        return _manage(args, {**self.env, **(env or {})})

    def drop(self) -> None:
        if is_postgres():
            self._admin(f'DROP DATABASE IF EXISTS "{self.label}" WITH (FORCE)')
        self.tmp.cleanup()


def _server_env(url: str, data_dir: str, settings: str) -> dict[str, str]:
    return {
        "DATABASE_URL": url,
        "WAYPOINT_DATA_DIR": data_dir,
        "DJANGO_SECRET_KEY": "test-" + uuid.uuid4().hex,
        "WAYPOINT_SIGNING_KEY": "",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_COOKIES": "0",
        "SECURE_HSTS_SECONDS": "0",
        "WAYPOINT_WEBHOOK_ALLOW_PRIVATE": "1",
        "WAYPOINT_RUNNER": "thread",
        "WAYPOINT_LEASE_SECONDS": "3",
        "WAYPOINT_RECOVERY_INTERVAL_SECONDS": "0.5",
        "WAYPOINT_HOUSEKEEPING_INTERVAL_SECONDS": "0.5",
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": settings,
    }


def _manage(args: tuple[str, ...], env: dict[str, str]) -> str:
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def _admin(cluster: str, sql: str) -> None:
    import psycopg

    base = cluster.rsplit("/", 1)[0]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(sql)


# Migrating a database takes a Django start and every migration (seconds); copying a migrated one
# takes a fraction of that. One template per cluster and settings module, made by the first server
# database of this process and dropped when it exits. Its name starts with the run's test database
# name, so tests/run.sh drops it too if this process is killed.
_template_numbers = itertools.count()
_template_dir = tempfile.TemporaryDirectory(prefix="waypoint-template-")


@functools.cache
def _migrated(cluster: str, settings: str) -> str:
    """The migrated template for server databases on `cluster` with `settings`: a database name, or a SQLite file."""
    n = next(_template_numbers)
    run = os.environ.get("WAYPOINT_TEST_DATABASE") or f"wp_{os.getpid()}"
    run += os.environ.get("PYTEST_XDIST_WORKER", "")  # each worker of a parallel run its own
    if cluster.startswith(("postgres://", "postgresql://")):
        name = f"{run}_tmpl{n}"[:63]
        url = f"{cluster.rsplit('/', 1)[0]}/{name}"
        _admin(cluster, f'DROP DATABASE IF EXISTS "{name}"')
        _admin(cluster, f'CREATE DATABASE "{name}"')
        atexit.register(_drop_template, cluster, name)
    else:
        name = f"{_template_dir.name}/tmpl{n}.sqlite3"
        url = f"sqlite:///{name}"
    data = tempfile.mkdtemp(dir=_template_dir.name)
    _manage(("migrate", "--noinput", "-v0"), _server_env(url, data, settings))
    return name


def _drop_template(cluster: str, name: str) -> None:
    # A cluster of a test's own (OwnPostgres) is gone by now, and its template with it.
    with contextlib.suppress(Exception):
        _admin(cluster, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class OwnPostgres:
    """
    A PostgreSQL cluster of a test's own, on a free port, to restart or stop without touching the shared one.

    Made with the server binaries of the machine's PostgreSQL; run as the `postgres` user when the
    tests run as root (PostgreSQL refuses to run as root).
    """

    def __init__(self, *, durable: bool = False, settings: tuple[str, ...] = ()) -> None:
        """
        `durable`: fsync on, as a production server (off by default: tests restart it, they do not time it).

        `settings`: further `name=value` server settings.
        """
        import pwd

        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        if not found:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql")
        self.bin = found[-1].parent
        self.dir = Path(tempfile.mkdtemp(prefix="waypoint-pg-"))
        self.data, self.port = self.dir / "data", free_port()
        self.options = ["listen_addresses=127.0.0.1", *([] if durable else ["fsync=off"]), *settings]
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self.as_user, str(self.bin / tool), *args], check=True, capture_output=True, timeout=120)

    def _ctl(self, action: str, *args: str) -> None:
        options = f"-p {self.port} -k {self.dir} " + " ".join(f"-c {o}" for o in self.options)
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-o", options, "-w", *args, action)

    def start(self) -> None:
        self._ctl("start")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every connection is dropped, the server is back a moment later."""
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        self._ctl("stop", "-m", "immediate")

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        subprocess.run(["rm", "-rf", str(self.dir)], check=False)


class OwnRedis:
    """A Redis server of a test's own, on a free port, to stop and start again without touching the shared one."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.05)
        raise TimeoutError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


class DaphneServer:
    """One real Daphne process serving Waypoint; `kill()` is a SIGKILL, nothing is cleaned up."""

    def __init__(self, database: ServerDatabase, *, env: dict | None = None, port: int | None = None,
                 app: str = "config.asgi:application"):
        self.database = database
        self.app = app
        self.port = port or free_port()
        self.extra_env = env or {}
        self.proc: subprocess.Popen | None = None
        self.log_path = Path(database.tmp.name) / f"daphne-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, env: dict | None = None, wait: bool = True) -> DaphneServer:
        environment = {**os.environ, **self.database.env, **self.extra_env, **(env or {})}
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), self.app],
            cwd=ROOT, env=environment, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                # The caller never gets a server to stop: a process left behind would serve no one and
                # hold its port, its database connections and a share of the CPU.
                self.kill()
                raise
        return self

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc and self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited with {self.proc.returncode}:\n{self.output()}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"daphne did not answer on {self.url}:\n{self.output()}")

    def wait_exit(self, timeout: float = 30) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
