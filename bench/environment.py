"""
Where a bench run happens: this process configured on the bench's database, the Daphne processes it
starts, a PostgreSQL cluster of its own for the sections that read the server's CPU, and the machine
facts RESULTS.md opens with.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
from pathlib import Path

from bench.proc import cluster_cpu
from bench.report import Report
from devservers.processes import DaphneServer, OwnPostgres, ServerDatabase

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


def prepare(database: ServerDatabase) -> None:
    """Configure Django in this process on the bench database, turns running inline."""
    os.environ.update(database.env)
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "WAYPOINT_RUNNER": "inline",
        "REDIS_URL": REDIS,
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        "WAYPOINT_RATE_LIMIT_PER_IP": "0",
        "WAYPOINT_RATE_LIMIT_PER_CREDENTIAL": "0",
        "LOG_LEVEL": "WARNING",
    })
    import django

    django.setup()


def serve(database: ServerDatabase, env: dict | None = None) -> DaphneServer:
    """Start one Daphne process of Waypoint on `database`; a loaded machine may take a while to import it."""
    server = DaphneServer(database, env={**server_env(), **(env or {})}).start(wait=False)
    try:
        server.wait_ready(timeout=120)
    except BaseException:
        server.stop()
        raise
    return server


def server_env() -> dict[str, str]:
    return {"REDIS_URL": REDIS, "WAYPOINT_RATE_LIMIT_PER_IP": "0", "WAYPOINT_RATE_LIMIT_PER_CREDENTIAL": "0",
            "LOG_LEVEL": "WARNING", "WAYPOINT_LEASE_SECONDS": "5", "WAYPOINT_RECOVERY_INTERVAL_SECONDS": "1"}


def quote_failures(report: Report, section: str, servers: list[DaphneServer]) -> None:
    """The last lines of each server's own account of a failure, so a 500 is explained in the notes."""
    for s in servers:
        raised = [line for line in s.output().splitlines() if re.match(r"^[A-Za-z_.]+(Error|Exception)\b", line)]
        for line in sorted(set(raised))[:5]:
            report.notes.append(f"{section}: Daphne on port {s.port} logged: {line[:300]}")


def machine(report: Report) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
        cursor.execute("SHOW synchronous_commit")
        sync = cursor.fetchone()[0]
    import redis

    client = redis.Redis.from_url(REDIS)
    redis_version = client.info("server")["redis_version"]
    client.close()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    load = os.getloadavg()
    report.facts = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{os.cpu_count()} × {cpu} (nproc {len(os.sched_getaffinity(0))})",
        "memory": f"{memory_kb / 1024 / 1024:.1f} GiB",
        "os": platform.platform(),
        "python": platform.python_version(),
        "postgresql": f"{pg} (synchronous_commit={sync}, on this machine, loopback TCP)",
        "redis": redis_version,
        "load average at start": f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    }


class BenchCluster:
    """
    A PostgreSQL cluster of this run's own, on a free port, durable (fsync on) as a production one.

    The server-side figures are read from it: its CPU from /proc (nothing else runs on it), the
    sessions each database opened (`log_connections`) and when each transaction committed
    (`track_commit_timestamp`).
    """

    def __init__(self) -> None:
        self.server = OwnPostgres(durable=True, settings=("log_connections=on", "track_commit_timestamp=on",
                                                          "max_connections=200"))
        self.url = self.server.url

    @property
    def postmaster(self) -> int:
        return int((self.server.data / "postmaster.pid").read_text().split()[0])

    def cpu(self) -> float:
        return cluster_cpu(self.postmaster)

    def sessions(self, database: str) -> int:
        """Sessions opened on `database` so far (each logs `connection authorized`)."""
        found = re.compile(rf"connection authorized: .*database={re.escape(database)}(\s|$)")
        return sum(1 for line in (self.server.dir / "log").read_text(errors="replace").splitlines() if found.search(line))

    def close(self) -> None:
        self.server.close()
