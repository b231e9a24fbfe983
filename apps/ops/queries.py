"""What the load balancer and the orchestrator ask a server process: is it alive, is it ready."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

REDIS_TIMEOUT_SECONDS = 1.0


@dataclass(frozen=True)
class Readiness:
    checks: dict[str, str] = field(default_factory=dict)  # name -> "ok" or what is wrong

    @property
    def ready(self) -> bool:
        return all(v == "ok" for v in self.checks.values())


def _database() -> tuple[str, str]:
    """The database answers, and no migration is left to apply."""
    try:
        connection = connections[DEFAULT_DB_ALIAS]
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # noqa: BLE001 - any failure to reach the database means not ready
        return f"unreachable: {type(exc).__name__}", "skipped: the database is unreachable"
    if plan:
        return "ok", f"{len(plan)} migration(s) not applied"
    return "ok", "ok"


def _redis() -> str:
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=REDIS_TIMEOUT_SECONDS, socket_timeout=REDIS_TIMEOUT_SECONDS
        )
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any failure to reach Redis means not ready
        return f"unreachable: {type(exc).__name__}"
    return "ok"


def readiness() -> Readiness:
    """
    Check what this process needs to serve traffic: PostgreSQL, Redis (when `REDIS_URL` is set), migrations.

    Never raises: each failure is reported by name.
    """
    database, migrations = _database()
    checks = {"database": database, "migrations": migrations}
    if settings.REDIS_URL:
        checks["redis"] = _redis()
    return Readiness(checks=checks)
