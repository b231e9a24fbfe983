"""
push: commit -> websocket receive with 200 sockets open on one Daphne process (Redis layer), and its RSS.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

from bench.conversations import bench_assistant, new_conversations
from bench.environment import serve
from bench.proc import rss_mb
from bench.report import Report, Row, Target
from devservers.processes import DaphneServer, ServerDatabase


@dataclass
class PushTimes:
    latencies: list[float]
    missed: int
    rss_idle: float
    rss_open: float
    rss_after: float


async def dial(url: str, origin: str, gate: asyncio.Semaphore):
    """
    Open a websocket, a few at a time, again after a refused handshake (as the page reconnects).

    Daphne refuses (403) a handshake its application has not answered within 5 s, as a loaded
    2-core machine may not when hundreds arrive at once; once open, they all stay open together.
    """
    import websockets

    for attempt in range(6):
        try:
            async with gate:
                return await websockets.connect(url, origin=origin, open_timeout=60, max_size=None, ping_interval=None)
        except (OSError, TimeoutError, websockets.exceptions.InvalidHandshake, websockets.exceptions.InvalidMessage):
            if attempt == 5:
                raise
            await asyncio.sleep(0.5 * 2**attempt)


def push_latency(server: DaphneServer, conversations: list[tuple[str, str]], *, samples: int, targets: int) -> PushTimes:
    """
    Open a socket on each conversation, then time commit → first push that shows it, `samples` times.

    The commits are turns started from this process on the first `targets` conversations in turn;
    the sockets of the others stay idle.
    """
    from django.db import connection, transaction
    from django.utils import timezone

    from apps.agent import actions

    sockets_n = len(conversations)  # one socket each (a conversation may be listed more than once)
    latest: dict[str, tuple[int, float]] = {}
    idle_rss = rss_mb(server.proc.pid)

    async def watch(cid: str, token: str, ready: asyncio.Event, opened: list, gate: asyncio.Semaphore):
        url = f"ws://127.0.0.1:{server.port}/ws/conversations/{cid}/?token={token}&format=json"
        socket = await dial(url, server.url, gate)
        async with socket:
            opened.append(cid)
            if len(opened) == sockets_n:
                ready.set()
            async for raw in socket:
                now = time.perf_counter()
                message = json.loads(raw)
                if message.get("type") == "state":
                    latest[cid] = (message["seq"], now)

    def commit_and_time(cid: str, i: int) -> tuple[int, float]:
        """Start a turn; return the batch-one seq and the moment it committed."""
        moment = {}
        with transaction.atomic():
            transaction.on_commit(lambda: moment.setdefault("t", time.perf_counter()))
            out = actions.start_turn(conversation_id=cid, message=f"ping {i}", persona="guest:bench", edge="api",
                                     now=timezone.now())
        return out["seq"], moment["t"]

    latencies: list[float] = []
    rss_open = 0.0
    missed = 0

    async def main():
        nonlocal rss_open, missed
        ready, opened, gate = asyncio.Event(), [], asyncio.Semaphore(8)
        tasks = [asyncio.create_task(watch(c, t, ready, opened, gate)) for c, t in conversations]
        await asyncio.wait_for(ready.wait(), timeout=60 + sockets_n * 0.25)
        await asyncio.sleep(1)
        rss_open = rss_mb(server.proc.pid)
        for i in range(samples):
            cid = conversations[i % targets][0]
            seq, committed = await asyncio.to_thread(commit_and_time, cid, i)

            def seen(cid=cid, seq=seq):
                got = latest.get(cid)
                return got if got and got[0] >= seq else None

            deadline = time.monotonic() + 10
            while (got := seen()) is None and time.monotonic() < deadline:
                await asyncio.sleep(0.0005)
            if got is None:
                missed += 1
                continue
            # The first push that shows this commit may have arrived before `latest` was read
            # again; the time recorded is when that push arrived.
            latencies.append(max(0.0, got[1] - committed))
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(main())
    connection.close()
    return PushTimes(latencies, missed, idle_rss, rss_open, rss_mb(server.proc.pid))


def section_push(report: Report, database: ServerDatabase, *, quick: bool) -> None:
    sockets_n = 200
    samples = 100 if quick else 200
    conversations = new_conversations(sockets_n, bench_assistant())
    server = serve(database)
    try:
        times = push_latency(server, conversations, samples=samples, targets=sockets_n)
    finally:
        server.stop()
    row = report.latency_row("push", f"commit → websocket receive, {sockets_n} sockets open (1 Daphne, Redis layer)", times.latencies,
                             note=f"{times.missed} of {samples} pushes not seen within 10 s")
    report.rows.append(Row("push", f"Daphne RSS: idle {times.rss_idle:.0f} MB, {sockets_n} sockets open {times.rss_open:.0f} MB, "
                                   f"after {samples} pushes {times.rss_after:.0f} MB"))
    report.figures.update(push_p50=row.p50_ms, push_p99=row.p99_ms, rss_open=times.rss_open, rss_after=times.rss_after,
                          rss_idle=times.rss_idle)
    report.targets.append(Target("push p99 ≤ 50 ms at 200 sockets", f"{row.p99_ms:.1f} ms (p50 {row.p50_ms:.1f} ms)",
                                 row.p99_ms <= 50 and times.missed == 0))
    report.targets.append(Target("a Daphne process with 200 open sockets < 250 MB RSS",
                                 f"{max(times.rss_open, times.rss_after):.0f} MB", max(times.rss_open, times.rss_after) < 250))

