"""
A small loopback load: 20 customers doing turns on 2 Daphne processes joined by Redis, each posting
to one process and watching its conversation over a websocket on the other (`make bench` runs 200).
Then a few customers on the page path (page, htmx sends, the page's HTML socket), on Waypoint and
on the floor app `make bench` compares it with (bench/floor).
"""

import asyncio
import json
import os

import pytest

from bench.conversations import BENCH_CONFIG
from bench.load import run_load
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

CUSTOMERS, TURNS = 20, 2
REDIS = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


ENV = {"REDIS_URL": REDIS, "WAYPOINT_RATE_LIMIT_PER_IP": "0", "WAYPOINT_RATE_LIMIT_PER_CREDENTIAL": "0"}


@pytest.fixture(scope="module")
def waypoint():
    database = ServerDatabase("load")
    text = json.dumps(BENCH_CONFIG)
    out = database.manage(
        "shell", "-c", f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({text!r})).id)"
    )
    servers = [DaphneServer(database, env=ENV) for _ in range(2)]
    try:
        for server in servers:
            server.start(wait=False)
        for server in servers:
            server.wait_ready(timeout=60)
        yield database, servers, out.strip().splitlines()[-1]
    finally:
        for server in servers:
            server.stop()
        database.drop()


def server_logs(servers: list[DaphneServer]) -> str:
    """Each server's log, so that a failure under load explains itself in the test's report."""
    return "\n".join(f"--- {server.url}\n{server.output()[-20000:]}" for server in servers)


@pytest.fixture(scope="module")
def report(waypoint):
    database, servers, assistant_id = waypoint
    return asyncio.run(run_load(servers=[s.url for s in servers], database_url=database.url, assistant_id=assistant_id,
                                customers=CUSTOMERS, turns=TURNS))


class TestLoopbackLoad:
    def test_no_request_fails(self, report, waypoint):
        assert report.errors == [], server_logs(waypoint[1])

    def test_every_reply_reaches_its_socket_across_processes(self, report):
        assert report.turns == CUSTOMERS * TURNS

    def test_every_socket_converges_to_the_stored_state(self, report):
        assert report.lost == []


class TestThePagePath:
    def test_every_reply_arrives_on_the_page_socket_as_its_li(self, waypoint):
        database, servers, assistant_id = waypoint

        report = asyncio.run(run_load(servers=[s.url for s in servers], database_url=database.url,
                                      assistant_id=assistant_id, customers=4, turns=TURNS, page=True))

        assert (report.errors, report.lost, report.turns) == ([], [], 4 * TURNS), server_logs(servers)

    def test_the_floor_app_serves_the_same_load(self):
        database = ServerDatabase("floor", settings="bench.floor.settings")
        server = DaphneServer(database, env=ENV, app="bench.floor.asgi:application")
        try:
            server.start(wait=False).wait_ready(timeout=60)

            report = asyncio.run(run_load(servers=[server.url], database_url=database.url, assistant_id="",
                                          customers=4, turns=TURNS, page=True))
        finally:
            server.stop()
            logs = server_logs([server])
            database.drop()

        assert (report.errors, report.lost, report.turns) == ([], [], 4 * TURNS), logs
