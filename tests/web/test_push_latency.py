"""
Pushes are never late on the embedded default (one process, the in-memory channel layer).

The writer's thread used to publish through async_to_sync, on a loop of its own, which put into
the sockets' queues without waking the sockets' loop: a push then waited for that loop's next
wake-up, up to a heartbeat. Now it is scheduled onto the sockets' loop and never waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import threading
import time

import httpx
import psycopg
import pytest
from channels.layers import InMemoryChannelLayer
from websockets.sync.client import connect

from apps.conversations import broadcast
from tests.process import probe
from tests.servers import DaphneServer, ServerDatabase

LIMIT = 0.25  # seconds from the POST to the push that carries the reply


def test_a_publish_never_waits_for_the_sockets_loop_and_is_delivered_once_it_is_free():
    layer = InMemoryChannelLayer()
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    try:
        channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(5)
        asyncio.run_coroutine_threadsafe(layer.group_add(broadcast.group_name("c1"), channel), loop).result(5)
        broadcast.serving_on(loop)
        loop.call_soon_threadsafe(time.sleep, 1.0)  # the sockets' loop is busy for a second

        started = time.monotonic()
        broadcast._group_send(layer, broadcast.group_name("c1"), {"type": "state.changed", "seq": 7})
        returned = time.monotonic() - started

        assert returned < 0.05  # the writer (holding its conversation's lock and lease) goes on at once
        message = asyncio.run_coroutine_threadsafe(layer.receive(channel), loop).result(5)
        assert message == {"type": "state.changed", "seq": 7}
    finally:
        loop.call_soon_threadsafe(loop.stop)


@contextlib.contextmanager
def embedded_server(label: str, config: dict):
    """
    The embedded default on a server of its own (no Redis: the in-memory layer of one Daphne
    process, turns on its threads) and one conversation of `config`, idle after its first turn.

    Yields its database, the conversation's id, its open socket (past the first state) and an HTTP
    client with the conversation's token.
    """
    database = ServerDatabase(label)
    # The figure is the server's, not the disk's: on this shared machine a WAL flush now and then
    # takes 60-200 ms (PostgreSQL logged a 197 ms COMMIT), and a turn commits six times. Without the
    # wait for the flush, every commit and every push still happens as it does in production.
    database.set("synchronous_commit", "off")
    server = DaphneServer(database, env={"REDIS_URL": ""})
    try:
        [seed] = probe.run(database, "lab", config=config, conversations=1, message="hello")["conversations"]
        server.start()
        cid, token = seed["conversation_id"], seed["token"]
        # The figure is the server's: this test process's own collector (its heap holds the whole
        # suite by now) must not pause the clock between the POST and the receive.
        gc.disable()
        with connect(f"ws://127.0.0.1:{server.port}/ws/conversations/{cid}/?token={token}", origin=server.url,
                     open_timeout=10) as ws, \
                httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=10) as http:
            assert json.loads(ws.recv(timeout=10))["type"] == "state"
            yield database, cid, ws, http
    finally:
        gc.enable()
        server.kill()
        database.drop()


def pushed(ws, arrived) -> dict:
    """The state of the first push for which `arrived(state)` holds."""
    while True:
        state = json.loads(ws.recv(timeout=10)).get("state", {})
        if arrived(state):
            return state


def texts(state: dict) -> list[str]:
    return [m["text"] for m in state.get("messages", [])]


@pytest.mark.postgres
def test_on_an_idle_embedded_server_every_reply_is_pushed_within_a_quarter_second():
    delays, posts = [], []
    with embedded_server("latency", {"name": "Echo", "model": {"provider": "scripted"}}) as (_, cid, ws, http):
        for n in range(20):
            time.sleep(0.4 + (n % 3) * 0.3)  # idle between turns, as a person types
            sent = time.monotonic()
            response = http.post(f"/v1/agent/conversations/{cid}/turns", json={"message": f"ping {n}"})
            assert response.status_code == 202
            posts.append(time.monotonic() - sent)
            pushed(ws, lambda state, n=n: f"You said: ping {n}" in texts(state))
            delays.append(time.monotonic() - sent)
    assert max(delays) <= LIMIT, f"pushes took {[round(d, 3) for d in delays]}, their POSTs {[round(p, 3) for p in posts]}"


APPROVAL = {
    "name": "Careful echo",
    "model": {"provider": "scripted", "rules": [
        {"match": "refund", "steps": [{"call": "careful", "arguments": {"order_id": "A-2"}}, {"say": "Done: {result.order_id}"}]}],
        "fallback": [{"say": "You said: {message}"}]},
    "tools": [{"name": "careful", "kind": "server", "action": "echo", "requires_approval": True}],
}


@pytest.mark.postgres
def test_on_an_idle_embedded_server_an_approved_turn_goes_on_in_process_and_both_pushes_are_prompt():
    with embedded_server("latency_approval", APPROVAL) as (database, cid, ws, http):
        time.sleep(0.5)
        sent = time.monotonic()
        assert http.post(f"/v1/agent/conversations/{cid}/turns", json={"message": "refund please"}).status_code == 202
        state = pushed(ws, lambda s: s.get("run_status") == "waiting")
        asked = time.monotonic() - sent
        [call] = state["pending_client_actions"]

        time.sleep(0.5)  # a person reads the card
        approved = time.monotonic()
        response = http.post(f"/v1/agent/conversations/{cid}/runs/{state['run_id']}/results", json={"results": [
            {"call_id": call["call_id"], "output": {"decision": "approve", "reviewed": {"tool": "careful", "arguments": {"order_id": "A-2"}}}}]})
        assert response.status_code == 200, response.text
        pushed(ws, lambda s: "Done: A-2" in texts(s))
        answered = time.monotonic() - approved

        with psycopg.connect(database.url, autocommit=True) as conn:
            kinds = [kind for (kind,) in conn.execute("SELECT kind FROM ledger_event WHERE conversation_id = %s ORDER BY seq", (cid,))]
    # The approval resumed the run in this process, at once: recovery (after a lease period, 3 s
    # here) would have recorded the resume as a retry.
    assert "turn_retried" not in kinds, kinds
    assert kinds.count("turn_complete") == 2, kinds
    assert asked <= LIMIT and answered <= LIMIT, f"the card was pushed after {asked:.3f} s, the reply after the approval {answered:.3f} s"
