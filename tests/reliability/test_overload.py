"""
More requests than a process has database connections: each one is served, or answered 503 with
Retry-After once the pool's wait runs out, and never 500.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import httpx
import pytest
from django.test import Client, override_settings

from bench.conversations import BENCH_CONFIG
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

REQUESTS = 80
# Two connections and a short wait for one: a burst of 80 must run out of both.
STARVED = {"WAYPOINT_DB_POOL_MAX_SIZE": "2", "WAYPOINT_DB_POOL_MIN_SIZE": "1", "WAYPOINT_DB_POOL_TIMEOUT_SECONDS": "0.2",
           "WAYPOINT_RATE_LIMIT_PER_IP": "0", "WAYPOINT_RATE_LIMIT_PER_CREDENTIAL": "0"}


@pytest.fixture(scope="module")
def server():
    database = ServerDatabase("overload")
    text = json.dumps(BENCH_CONFIG)
    out = database.manage(
        "shell", "-c", f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({text!r})).id)"
    )
    running = DaphneServer(database, env=STARVED).start()
    try:
        yield running, out.strip().splitlines()[-1]
    finally:
        running.stop()
        database.drop()


async def burst(url: str, assistant_id: str) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=REQUESTS, max_keepalive_connections=REQUESTS)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        page = await client.get("/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)

        async def start(n: int) -> httpx.Response:
            return await client.post("/start", data={"assistant": assistant_id, "message": f"where is my order {n}",
                                                     "csrfmiddlewaretoken": csrf})

        return await asyncio.gather(*(start(n) for n in range(REQUESTS)))


def test_a_burst_beyond_the_pool_is_served_or_told_to_retry_never_500(server):
    running, assistant_id = server

    answers = asyncio.run(burst(running.url, assistant_id))

    statuses = Counter(a.status_code for a in answers)
    assert set(statuses) <= {302, 503}, (statuses, running.output()[-20000:])
    assert statuses[302] > 0 and statuses[503] > 0, statuses
    assert all(a.headers.get("retry-after") for a in answers if a.status_code == 503)


class LosesTheDatabase:
    """A middleware whose query finds the database gone, outside any view."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.db import OperationalError

        raise OperationalError("connection pool timed out")


class Fails:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        raise RuntimeError("a bug")


def outside_any_view(middleware: str):
    from django.conf import settings

    return override_settings(MIDDLEWARE=[*settings.MIDDLEWARE[:4], f"tests.reliability.test_overload.{middleware}",
                                         *settings.MIDDLEWARE[4:]])


@pytest.mark.django_db
class TestAnAnswerOutsideAnyView:
    def test_a_lost_database_is_a_503_page_with_retry_after(self):
        with outside_any_view("LosesTheDatabase"):
            answer = Client(raise_request_exception=False).get("/")

        assert answer.status_code == 503 and answer["Retry-After"]
        assert "We'll be right back" in answer.content.decode()

    def test_a_lost_database_under_the_api_is_a_503_in_the_contracts_shape(self):
        with outside_any_view("LosesTheDatabase"):
            answer = Client(raise_request_exception=False).get("/v1/assistants")

        assert answer.status_code == 503 and answer["Retry-After"]
        assert answer.json()["error"]["code"] == "service_unavailable"

    def test_any_other_failure_is_a_page_meant_for_people(self):
        with outside_any_view("Fails"):
            answer = Client(raise_request_exception=False).get("/")

        assert answer.status_code == 500 and "Something went wrong on our side" in answer.content.decode()
        assert "Traceback" not in answer.content.decode()

    def test_any_other_failure_under_the_api_keeps_the_contracts_shape(self):
        with outside_any_view("Fails"):
            answer = Client(raise_request_exception=False).get("/v1/assistants")

        assert answer.status_code == 500 and answer.json()["error"]["code"] == "internal_error"
