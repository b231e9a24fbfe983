"""
Dependency outages are honest and heal: while PostgreSQL is down, requests get 503 with Retry-After
(the API's error shape, a page meant for people); while Redis is down, open sockets are closed so
their clients poll at once and new ones are refused cleanly, until Redis is back.

The PostgreSQL cluster and the Redis server are this module's own, on other ports.
"""

from __future__ import annotations

import contextlib
import json
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.process import probe
from tests.servers import DaphneServer, OwnPostgres, OwnRedis, ServerDatabase

pytestmark = pytest.mark.postgres

CONFIG = {"name": "Outage desk", "model": {"provider": "scripted"}}


@pytest.fixture(scope="module")
def world():
    cluster, redis = OwnPostgres(), OwnRedis()
    database = ServerDatabase("outage", cluster=cluster.url)
    [seed] = probe.run(database, "lab", config=CONFIG, conversations=1, message="hello")["conversations"]
    server = DaphneServer(database, env={"REDIS_URL": redis.url}).start()
    try:
        yield cluster, redis, server, seed
    finally:
        server.kill()
        with contextlib.suppress(Exception):
            cluster.start()
        database.drop()
        redis.stop()
        cluster.close()


def socket_url(server: DaphneServer, seed: dict) -> str:
    return f"ws://127.0.0.1:{server.port}/ws/conversations/{seed['conversation_id']}/?token={seed['token']}"


def dial(server: DaphneServer, seed: dict):
    # Closed by the server or at the end of the test; a context manager would not fit the steps.
    return connect(socket_url(server, seed), origin=server.url, open_timeout=10).__enter__()


def open_socket(server: DaphneServer, seed: dict):
    ws = dial(server, seed)
    assert json.loads(ws.recv(timeout=10))["type"] == "state"
    return ws


def close_code(ws, *, within: float) -> int | None:
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            ws.recv(timeout=max(0.1, deadline - time.monotonic()))
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None
    except TimeoutError:
        return None
    return None


def test_while_the_database_is_down_the_api_and_pages_answer_503_and_heal(world):
    cluster, _, server, seed = world
    messages = f"{server.url}/v1/runner/conversation/{seed['conversation_id']}/messages"
    auth = {"Authorization": f"Bearer {seed['token']}"}
    assert httpx.get(messages, headers=auth, timeout=10).status_code == 200

    cluster.stop()
    try:
        api = httpx.get(messages, headers=auth, timeout=10)
        page = httpx.get(f"{server.url}/c/{seed['conversation_id']}", params={"token": seed["token"]}, timeout=10)
    finally:
        cluster.start()

    assert api.status_code == 503 and api.headers["Retry-After"] == "5"
    assert api.json()["error"]["code"] == "service_unavailable"
    assert page.status_code == 503 and page.headers["Retry-After"] == "5"
    assert "We'll be right back" in page.text and "Traceback" not in page.text
    deadline = time.monotonic() + 15
    while httpx.get(messages, headers=auth, timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the API did not heal after PostgreSQL came back"
        time.sleep(0.2)


def test_while_redis_is_down_sockets_are_told_to_poll_and_new_ones_are_refused_cleanly_then_it_heals(world):
    _, redis, server, seed = world
    ws = open_socket(server, seed)

    redis.stop()
    try:
        assert close_code(ws, within=6) == 4503
        refused = dial(server, seed)
        assert close_code(refused, within=6) == 4503
        # Polling still works: the page's fallback is the HTTP read, which needs no Redis.
        messages = f"{server.url}/v1/runner/conversation/{seed['conversation_id']}/messages"
        assert httpx.get(messages, headers={"Authorization": f"Bearer {seed['token']}"}, timeout=10).status_code == 200
    finally:
        redis.start()

    deadline = time.monotonic() + 15
    while True:
        try:
            healed = open_socket(server, seed)
            break
        except (ConnectionClosed, TimeoutError, OSError):
            assert time.monotonic() < deadline, "sockets were not accepted again after Redis came back"
            time.sleep(0.5)
    healed.close()
