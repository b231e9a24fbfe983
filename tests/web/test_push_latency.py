"""
Pushes are never late on the embedded default (one process, the in-memory channel layer).

The writer's thread used to publish through async_to_sync, on a loop of its own, which put into
the sockets' queues without waking the sockets' loop: a push then waited for that loop's next
wake-up, up to a heartbeat. Now it is scheduled onto the sockets' loop and never waited for.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time

import httpx
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


@pytest.mark.postgres
def test_on_an_idle_embedded_server_every_reply_is_pushed_within_a_quarter_second():
    database = ServerDatabase("latency")
    # The figure is the server's, not the disk's: on this shared machine a WAL flush now and then
    # takes 60-200 ms (PostgreSQL logged a 197 ms COMMIT), and a turn commits six times. Without the
    # wait for the flush, every commit and every push still happens as it does in production.
    database.set("synchronous_commit", "off")
    # The embedded default: no Redis, the in-memory layer of one Daphne process, turns on its threads.
    server = DaphneServer(database, env={"REDIS_URL": ""})
    try:
        [seed] = probe.run(database, "lab", config={"name": "Echo", "model": {"provider": "scripted"}}, conversations=1,
                           message="hello")["conversations"]
        server.start()
        cid, token = seed["conversation_id"], seed["token"]
        url = f"ws://127.0.0.1:{server.port}/ws/conversations/{cid}/?token={token}"
        delays, posts = [], []
        # The figure is the server's: this test process's own collector (its heap holds the whole
        # suite by now) must not pause the clock between the POST and the receive.
        gc.disable()
        with connect(url, origin=server.url, open_timeout=10) as ws, httpx.Client(timeout=10) as http:
            assert json.loads(ws.recv(timeout=10))["type"] == "state"
            for n in range(20):
                time.sleep(0.4 + (n % 3) * 0.3)  # idle between turns, as a person types
                sent = time.monotonic()
                response = http.post(f"{server.url}/v1/agent/conversations/{cid}/turns", json={"message": f"ping {n}"},
                                     headers={"Authorization": f"Bearer {token}"})
                assert response.status_code == 202
                posts.append(time.monotonic() - sent)
                while True:
                    message = json.loads(ws.recv(timeout=10))
                    texts = [m["text"] for m in message.get("state", {}).get("messages", [])]
                    if f"You said: ping {n}" in texts:
                        delays.append(time.monotonic() - sent)
                        break
        assert max(delays) <= LIMIT, f"pushes took {[round(d, 3) for d in delays]}, their POSTs {[round(p, 3) for p in posts]}"
    finally:
        gc.enable()
        server.kill()
        database.drop()
