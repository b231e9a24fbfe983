"""
floor: Waypoint's customer page path against the floor app (bench/floor), the same page load
(bench/load.py, page=True) on 2 Daphne processes each, with the CPU and PostgreSQL sessions per turn
read from the run's own cluster.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bench.conversations import assistant_in
from bench.environment import BenchCluster, quote_failures, server_env
from bench.proc import process_cpu
from bench.report import Report, Row, Target
from devservers.processes import DaphneServer, ServerDatabase

TARGET_FLOOR = "Waypoint end to end ≥ 0.5× the floor's turns/s on the same load, in one run"
TARGET_DAPHNE_CPU = "Daphne CPU per end-to-end turn ≤ 2× the floor's"


@dataclass
class Spent:
    daphne: float  # CPU seconds, every Daphne process together
    postgres: float  # CPU seconds of the whole cluster
    sessions: int


def spent(cluster: BenchCluster, servers: list[DaphneServer], database: ServerDatabase) -> Spent:
    return Spent(sum(process_cpu(s.proc.pid) for s in servers), cluster.cpu(), cluster.sessions(database.label))


@dataclass
class PageRun:
    label: str
    result: object  # bench.load.LoadReport
    cost: Spent

    def per_turn(self, what: str) -> float:
        return getattr(self.cost, what) / max(1, self.result.turns)


def page_load(report: Report, cluster: BenchCluster, database: ServerDatabase, label: str, *, app: str, env: dict,
              assistant: str, customers: int, turns: int) -> PageRun:
    """Run the page-path load on 2 Daphne processes of `app` serving `database`; what it cost."""
    from bench.load import run_load

    servers = [DaphneServer(database, env={**server_env(), **env}, app=app) for _ in range(2)]
    for s in servers:
        s.start(wait=False)
    try:
        for s in servers:
            s.wait_ready(timeout=120)
        urls = [s.url for s in servers]

        def load(n: int, turns: int):
            return asyncio.run(run_load(servers=urls, database_url=database.url, assistant_id=assistant,
                                        customers=n, turns=turns, page=True))

        load(4, 2)  # warm: imports, templates, the pool's first connections
        before = spent(cluster, servers, database)
        result = load(customers, turns)
        after = spent(cluster, servers, database)
    finally:
        for s in servers:
            s.stop()
    quote_failures(report, "end to end", servers)
    return PageRun(label, result, Spent(after.daphne - before.daphne, after.postgres - before.postgres,
                                        after.sessions - before.sessions))


def section_floor(report: Report, cluster: BenchCluster, *, quick: bool) -> None:
    customers, turns = (40, 3) if quick else (100, 3)
    floor_db = ServerDatabase("floor", cluster=cluster.url, settings="bench.floor.settings")
    try:
        runs = [page_load(report, cluster, floor_db, "floor (bench/floor: one transaction for both messages, a push of the new <li>s)",
                          app="bench.floor.asgi:application", env={}, assistant="", customers=customers, turns=turns)]
    finally:
        floor_db.drop()
    database = ServerDatabase("e2e", cluster=cluster.url)
    try:
        assistant = assistant_in(database)
        runs.append(page_load(report, cluster, database, "Waypoint, the customer page path (3 echo rounds + reply)",
                              app="config.asgi:application", env={}, assistant=assistant, customers=customers, turns=turns))
        # Without the pool a turn costs several sessions: a lighter load of the same shape shows how many.
        runs.append(page_load(report, cluster, database, "Waypoint without the connection pool (WAYPOINT_DB_POOL_MAX_SIZE=0)",
                              app="config.asgi:application", env={"WAYPOINT_DB_POOL_MAX_SIZE": "0"}, assistant=assistant,
                              customers=max(4, customers // 5), turns=turns))
    finally:
        database.drop()
    floor, waypoint, unpooled = runs
    for run in runs:
        r = run.result
        shape = f"{r.customers} customers × {turns} turns, 2 Daphne processes"
        report.latency_row("end to end", f"{run.label}: {shape}", r.turn_seconds, wall=r.seconds, note=(
            f"CPU per turn: Daphne {run.per_turn('daphne') * 1000:.1f} ms, PostgreSQL {run.per_turn('postgres') * 1000:.1f} ms; "
            f"{run.per_turn('sessions'):.2f} PostgreSQL sessions per turn; {len(r.errors)} errors, {len(r.lost)} lost, "
            f"{r.conflicts} sends answered 409, {r.reconnects} reconnects"))
        for problem in (r.errors + r.lost)[:5]:
            report.notes.append(f"end to end, {run.label}: {problem}")
    rate = {run.label: run.result.turns_per_second for run in runs}
    vs = rate[waypoint.label] / rate[floor.label]
    cpu = waypoint.per_turn("daphne") / floor.per_turn("daphne")
    pg = waypoint.per_turn("postgres") / floor.per_turn("postgres")
    report.headline.append(Row("end to end", "Waypoint ÷ floor, the same page load in the same run", rate=None, note=(
        f"{vs:.2f}× the turns/s ({rate[waypoint.label]:.1f} vs {rate[floor.label]:.1f}); CPU per turn {cpu:.1f}× in Daphne, "
        f"{pg:.1f}× in PostgreSQL")))
    report.figures.update(floor_rate=rate[floor.label], e2e_rate=rate[waypoint.label], e2e_vs_floor=vs,
                          e2e_daphne_ms=waypoint.per_turn("daphne") * 1000, floor_daphne_ms=floor.per_turn("daphne") * 1000,
                          e2e_pg_ms=waypoint.per_turn("postgres") * 1000, floor_pg_ms=floor.per_turn("postgres") * 1000,
                          sessions_pooled=waypoint.per_turn("sessions"), sessions_unpooled=unpooled.per_turn("sessions"),
                          unpooled_pg_ms=unpooled.per_turn("postgres") * 1000)
    clean = all(not run.result.errors and not run.result.lost for run in (floor, waypoint))
    report.targets.append(Target(TARGET_FLOOR, f"{vs:.2f}× ({rate[waypoint.label]:.1f} vs {rate[floor.label]:.1f} turns/s)",
                                 vs >= 0.5 and clean))
    report.targets.append(Target(TARGET_DAPHNE_CPU, f"{cpu:.1f}× ({waypoint.per_turn('daphne') * 1000:.1f} vs "
                                                    f"{floor.per_turn('daphne') * 1000:.1f} ms)", cpu <= 2))

