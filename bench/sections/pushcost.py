"""
pushcost: the Daphne CPU of one turn's pushes at 10 and 200 messages, with 1 and 5 page sockets.
"""

from __future__ import annotations

import asyncio
import time

from bench.conversations import bench_assistant, long_conversation
from bench.environment import serve
from bench.proc import process_cpu
from bench.report import Report, Row, Target
from bench.sections.push import dial
from devservers.processes import DaphneServer, ServerDatabase

PUSH_COST_TURNS = 30  # Daphne CPU over so many turns: over 10, its idle CPU (heartbeats) moved the ratio by ±0.5
TARGET_PUSH_CPU = "push CPU at 200 messages within 1.5× of its cost at 10 messages"


def push_cost(server: DaphneServer, conversations: list[tuple[str, str]], *, sockets: int) -> tuple[float, int, int]:
    """
    Daphne CPU of the pushes of one turn on each conversation, `sockets` page sockets open on each.

    Returns (CPU seconds, pushes received, pushes still missing after 10 s). The turns run in this
    process; Daphne only pushes. Its idle CPU over the same time (heartbeats, recovery) is subtracted.
    """
    from django.db import connection
    from django.utils import timezone

    from apps.agent import actions
    from apps.conversations.models import Conversation
    from bench.load import SEQ

    seen: dict[tuple[str, int], int] = {}
    pushes = 0

    gate = asyncio.Semaphore(8)

    async def watch(cid: str, token: str, n: int, opened: asyncio.Event, count: list):
        nonlocal pushes
        url = f"ws://127.0.0.1:{server.port}/ws/conversations/{cid}/?token={token}&format=html"
        async with await dial(url, server.url, gate) as socket:
            count.append(1)
            if len(count) == len(conversations) * sockets:
                opened.set()
            async for raw in socket:
                pushes += 1
                if found := SEQ.findall(raw):
                    seen[cid, n] = max(seen.get((cid, n), -1), int(found[-1]))

    def turn(cid: str, i: int) -> int:
        actions.start_turn(conversation_id=cid, message=f"ping {i}", persona="guest:bench", edge="api", now=timezone.now())
        return Conversation.objects.get(id=cid).head_seq

    async def main() -> tuple[float, int, int]:
        nonlocal pushes
        opened, count = asyncio.Event(), []
        tasks = [asyncio.create_task(watch(c, t, n, opened, count)) for c, t in conversations for n in range(sockets)]
        await asyncio.wait_for(opened.wait(), timeout=300)
        # The first push of each socket (the whole state) is not what is measured: it is rendered and
        # sent before the idle CPU is read.
        settled = time.monotonic() + 60
        while len(seen) < len(conversations) * sockets and time.monotonic() < settled:
            await asyncio.sleep(0.05)
        await asyncio.sleep(2)
        idle_from, idle_cpu = time.perf_counter(), process_cpu(server.proc.pid)
        await asyncio.sleep(2)
        idle_rate = (process_cpu(server.proc.pid) - idle_cpu) / (time.perf_counter() - idle_from)
        pushes, missing = 0, 0
        began, cpu = time.perf_counter(), process_cpu(server.proc.pid)
        for i, (cid, _) in enumerate(conversations):
            head = await asyncio.to_thread(turn, cid, i)
            deadline = time.monotonic() + 5
            while any(seen.get((cid, n), -1) < head for n in range(sockets)) and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            missing += sum(1 for n in range(sockets) if seen.get((cid, n), -1) < head)
        await asyncio.sleep(0.2)  # the last renders finish
        used = process_cpu(server.proc.pid) - cpu - idle_rate * (time.perf_counter() - began)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return used, pushes, missing

    try:
        return asyncio.run(main())
    finally:
        connection.close()


def section_push_cost(report: Report, database: ServerDatabase, *, quick: bool) -> None:
    turns = PUSH_COST_TURNS // 2 if quick else PUSH_COST_TURNS
    assistant = bench_assistant()
    server = serve(database)
    cost: dict[tuple[int, int], float] = {}
    try:
        for messages in (10, 200):
            for sockets in (1, 5):
                # Each conversation has `messages` messages once its turn has added its two.
                conversations = [long_conversation(assistant, messages=messages - 2) for _ in range(turns)]
                used, pushes, missing = push_cost(server, conversations, sockets=sockets)
                cost[messages, sockets] = used / turns
                report.rows.append(Row("push cost", f"Daphne CPU of one turn's pushes, {messages} messages, {sockets} page "
                                                    f"socket{'s' if sockets > 1 else ''} (format=html)",
                                       note=f"{used / turns * 1000:.1f} ms per turn, {used / max(1, pushes) * 1000:.1f} ms per push "
                                            f"delivered ({pushes} over {turns} turns); {missing} sockets not up to date after 5 s"))
    finally:
        server.stop()
    report.figures.update({f"push_cpu_{m}_{n}": v * 1000 for (m, n), v in cost.items()})
    ratios = {n: cost[200, n] / cost[10, n] for n in (1, 5) if cost[10, n] > 0}
    report.targets.append(Target(TARGET_PUSH_CPU, ", ".join(
        f"{ratios[n]:.1f}× with {n} socket{'s' if n > 1 else ''} ({cost[10, n] * 1000:.1f} → {cost[200, n] * 1000:.1f} ms per turn)"
        for n in ratios), len(ratios) == 2 and all(r <= 1.5 for r in ratios.values())))

