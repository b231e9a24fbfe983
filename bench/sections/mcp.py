"""
`make bench ARGS="--only mcp"`: what an MCP read call adds to a turn, against an `echo` tool on the same turn shape.

Both assistants run the bench's turn (one tool round, then a reply); one tool is the built-in
`echo` action, the other the read-only `lookup_order` of the demo shop's MCP server (`manage.py
demo_mcp`, built with the `mcp` package), served in a thread of this process. Their turns are
interleaved, so both see the same machine at the same moments. The floor is the MCP call itself,
made with Waypoint's client outside any turn: what the protocol costs (a connection, the
handshake, one `tools/call`) before Waypoint records anything.
"""

from __future__ import annotations

import statistics
import time

from bench.report import Row
from devservers.asgi import serve
from devservers.processes import free_port

TURN = [{"call": "lookup", "arguments": {"order_id": "A-1"}}, {"say": "Done: {result}"}]


def section_mcp(report, *, quick: bool) -> None:
    from django.conf import settings
    from django.utils import timezone

    from apps.agent import actions
    from apps.agent.actions import create_assistant
    from apps.toolsources import actions as sources
    from apps.toolsources import client
    from apps.toolsources.demo import demo_server

    settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = True
    n = 20 if quick else 100
    calls: list[int] = []
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    shop, thread = serve(_counting(demo_server().streamable_http_app(), calls), port)
    try:
        source = sources.create_source(name="Bench shop", url=url)
        rules = {"provider": "scripted", "rules": [{"match": "order", "steps": TURN}], "fallback": [{"say": "ok"}]}
        echo = create_assistant(config={"name": "Bench echo", "model": rules,
                                        "tools": [{"name": "lookup", "kind": "server", "action": "echo"}]})
        mcp = create_assistant(config={"name": "Bench MCP", "model": rules,
                                       "tools": [{"name": "lookup", "kind": "mcp", "source": str(source.id), "tool": "lookup_order"}]})

        def turn(assistant, i: int) -> float:
            began = time.perf_counter()
            actions.start_conversation(assistant_id=str(assistant.id), message=f"where is my order ({i})", persona="guest:bench",
                                       edge="api", now=timezone.now())
            return time.perf_counter() - began

        for i in range(3):  # warm both paths (imports, connections, caches)
            turn(echo, i), turn(mcp, i)
        echo_times, mcp_times, floor = [], [], []
        for i in range(n):
            echo_times.append(turn(echo, i))
            mcp_times.append(turn(mcp, i))
            began = time.perf_counter()
            client.call_tool(url, {}, "lookup_order", {"order_id": "A-1"}, key=f"bench:{i}")
            floor.append(time.perf_counter() - began)
        assert len(calls) == 3 + 2 * n, "every MCP turn and floor call reached the server once"
    finally:
        shop.should_exit = True
        thread.join(timeout=5)
    echo_row = report.latency_row("mcp", "Turn with an echo tool round (conversation start + reply)", echo_times)
    mcp_row = report.latency_row("mcp", "The same turn with an MCP read tool round", mcp_times)
    floor_row = report.latency_row("mcp", "Floor: one MCP tools/call alone (connect, handshake, call)", floor)
    added = mcp_row.p50_ms - echo_row.p50_ms
    report.figures["mcp_added_ms"] = added
    report.rows.append(Row("mcp", "Added by the MCP call, p50", p50_ms=added,
                           note=f"the call alone takes {floor_row.p50_ms:.1f} ms; Waypoint's share "
                                f"{added - floor_row.p50_ms:+.1f} ms ({statistics.median(mcp_times) / statistics.median(echo_times):.2f}× the echo turn)"))
    print(f"mcp: echo turn p50 {echo_row.p50_ms:.1f} ms, MCP turn p50 {mcp_row.p50_ms:.1f} ms, "
          f"added {added:.1f} ms, MCP call alone {floor_row.p50_ms:.1f} ms", flush=True)


def _counting(app, calls: list[int]):
    """`app`, noting each `tools/call` request it is sent in `calls`."""

    async def counted(scope, receive, send):
        async def received():
            message = await receive()
            if message["type"] == "http.request" and b'"tools/call"' in message.get("body", b""):
                calls.append(1)
            return message

        await app(scope, received, send)

    return counted

