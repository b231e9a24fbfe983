"""
load: 200 customers at once on 2 Daphne processes (bench/load.py), every socket checked against the database.
"""

from __future__ import annotations

import asyncio

from bench.conversations import bench_assistant
from bench.environment import quote_failures, server_env
from bench.proc import rss_mb
from bench.report import Report, Target
from devservers.processes import DaphneServer, ServerDatabase

TARGET_BURST = "200-customer burst on 2 processes: p99 ≤ 4 s"


def section_load(report: Report, database: ServerDatabase, *, quick: bool) -> None:
    from bench.load import run_load

    assistant = bench_assistant()
    customers, turns = 200, 2
    servers = [DaphneServer(database, env=server_env()) for _ in range(2)]
    for s in servers:
        s.start(wait=False)
    try:
        for s in servers:
            s.wait_ready(timeout=120)
        result = asyncio.run(run_load(servers=[s.url for s in servers], database_url=database.url,
                                      assistant_id=str(assistant.id), customers=customers, turns=turns))
        rss = [rss_mb(s.proc.pid) for s in servers]
    finally:
        for s in servers:
            s.stop()
    quote_failures(report, "load", servers)
    row = report.latency_row(
        "load", f"{customers} customers × {turns} turns, 2 Daphne processes (send → reply on the socket)",
        result.turn_seconds, wall=result.seconds,
        note=f"{len(result.errors)} errors, {len(result.lost)} lost or diverged, {result.pushes} pushes, "
             f"{result.reconnects} websocket reconnects; "
             f"RSS {rss[0]:.0f} / {rss[1]:.0f} MB",
    )
    report.figures.update(load_rate=row.rate or 0, load_errors=len(result.errors), load_lost=len(result.lost))
    for problem in (result.errors + result.lost)[:10]:
        report.notes.append(f"load: {problem}")
    report.targets.append(Target("load: 0 errors, 0 lost messages, every socket converges",
                                 f"{len(result.errors)} errors, {len(result.lost)} lost/diverged of {customers} sockets",
                                 not result.errors and not result.lost))
    report.targets.append(Target(TARGET_BURST, f"p99 {row.p99_ms / 1000:.1f} s (p50 {row.p50_ms / 1000:.1f} s)",
                                 row.p99_ms <= 4000 and not result.errors))

