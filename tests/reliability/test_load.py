"""
A small loopback load: 20 customers doing turns on 2 Daphne processes joined by Redis, each posting
to one process and watching its conversation over a websocket on the other (`make bench` runs 200).
"""

import asyncio
import json
import os

import pytest

from bench.load import run_load
from bench.run import BENCH_CONFIG
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

CUSTOMERS, TURNS = 20, 2
REDIS = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"


@pytest.fixture(scope="module")
def report():
    database = ServerDatabase("load")
    text = json.dumps(BENCH_CONFIG)
    out = database.manage(
        "shell", "-c", f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({text!r})).id)"
    )
    env = {"REDIS_URL": REDIS, "WAYPOINT_RATE_LIMIT_PER_IP": "0", "WAYPOINT_RATE_LIMIT_PER_CREDENTIAL": "0"}
    servers = [DaphneServer(database, env=env) for _ in range(2)]
    try:
        for server in servers:
            server.start(wait=False)
        for server in servers:
            server.wait_ready(timeout=60)
        yield asyncio.run(run_load(servers=[s.url for s in servers], database_url=database.url,
                                   assistant_id=out.strip().splitlines()[-1], customers=CUSTOMERS, turns=TURNS))
    finally:
        for server in servers:
            server.stop()
        database.drop()


class TestLoopbackLoad:
    def test_no_request_fails(self, report):
        assert report.errors == []

    def test_every_reply_reaches_its_socket_across_processes(self, report):
        assert report.turns == CUSTOMERS * TURNS

    def test_every_socket_converges_to_the_stored_state(self, report):
        assert report.lost == []
