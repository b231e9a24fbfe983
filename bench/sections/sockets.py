"""
sockets: commit -> websocket receive on one of 5,000 open websockets of one Daphne process, the others idle.
"""

from __future__ import annotations

import time

from bench.conversations import bench_assistant, new_conversations
from bench.environment import serve
from bench.report import Report, Row, Target
from bench.sections.push import push_latency
from devservers.processes import ServerDatabase

SOCKETS_AT_SCALE = 5000
IDLE_PER_CONVERSATION = 5
TARGET_SOCKETS = "5,000 sockets on one process under 1 GB RSS, push p99 ≤ 100 ms"


def raise_open_files(needed: int) -> str:
    """Raise this process's open-files limit (inherited by the servers it starts) to its hard limit if `needed` asks."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed and (hard == resource.RLIM_INFINITY or hard > soft):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return f"open files: {soft}" + ("" if soft >= needed else f" (fewer than the {needed} needed: raise `ulimit -n`)")


def section_sockets(report: Report, database: ServerDatabase, *, quick: bool) -> None:
    sockets_n = 1000 if quick else SOCKETS_AT_SCALE
    samples = 50 if quick else 100
    # Each socket is a descriptor in this process and one in Daphne, beside its database and Redis ones.
    limit = raise_open_files(sockets_n + 1000)
    began = time.perf_counter()
    # The timed socket has its conversation to itself; the idle ones share theirs, IDLE_PER_CONVERSATION
    # to each (as tabs do), so that making the conversations does not take longer than the measurement.
    made = new_conversations(1 + sockets_n // IDLE_PER_CONVERSATION, bench_assistant(), threads=4)
    conversations = [made[0]] + [c for c in made[1:] for _ in range(IDLE_PER_CONVERSATION)][:sockets_n - 1]
    made_in = time.perf_counter() - began
    server = serve(database)
    try:
        began = time.perf_counter()
        times = push_latency(server, conversations, samples=samples, targets=1)
        spent = time.perf_counter() - began
    finally:
        server.stop()
    row = report.latency_row("sockets", f"commit → websocket receive on 1 of {sockets_n:,} open sockets, the others idle "
                                        "(1 Daphne, Redis layer)", times.latencies,
                             note=f"{times.missed} of {samples} pushes not seen within 10 s; {limit}")
    report.rows.append(Row("sockets", f"Daphne RSS: idle {times.rss_idle:.0f} MB, {sockets_n:,} sockets open {times.rss_open:.0f} MB "
                                      f"({(times.rss_open - times.rss_idle) * 1024 / sockets_n:.0f} kB each), "
                                      f"after {samples} pushes {times.rss_after:.0f} MB",
                           note=f"{len(made):,} conversations made in {made_in:.0f} s, sockets opened and timed in {spent:.0f} s"))
    rss = max(times.rss_open, times.rss_after)
    report.targets.append(Target(TARGET_SOCKETS, f"{rss:.0f} MB RSS, push p99 {row.p99_ms:.1f} ms ({sockets_n:,} sockets)",
                                 None if quick else rss < 1024 and row.p99_ms <= 100 and times.missed == 0))

