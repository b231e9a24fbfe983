"""
A conversation token's life: revocation reaches open sockets at once, tokens expire unless used,
and no token is written to the access log.
"""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.utils import timezone

from apps.conversations import tokens
from apps.conversations.models import ConversationToken
from config.asgi import application
from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

OWN_ORIGIN = (b"origin", b"http://127.0.0.1")


@pytest.fixture(autouse=True)
async def close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


async def open_socket(conversation_id: str, token: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(application, f"/ws/conversations/{conversation_id}/?token={token}", headers=[OWN_ORIGIN])
    connected, _ = await communicator.connect()
    assert connected
    assert json.loads(await communicator.receive_from(timeout=5))["type"] == "state"
    return communicator


async def closed_with(communicator: WebsocketCommunicator) -> int:
    """Read until the socket closes; its close code."""
    while True:
        output = await communicator.receive_output(timeout=5)
        if output["type"] == "websocket.close":
            return output.get("code")


class TestRevocation:
    async def test_revoking_a_token_closes_its_open_socket_and_nothing_more_is_pushed(self, api: Api):
        started = await sync_to_async(api.start)("hello")
        cid = started["conversation_id"]
        socket = await open_socket(cid, started["token"])

        response = await sync_to_async(api.post)(f"/v1/agent/conversations/{cid}/tokens/revoke", {"token": started["token"]})
        assert response.status_code == 200 and response.json() == {"revoked": True}

        assert await closed_with(socket) == 4401
        await sync_to_async(api.post)(f"/v1/agent/conversations/{cid}/turns", {"message": "secret after revocation"})
        assert await socket.receive_nothing(timeout=0.5)

    async def test_another_tokens_socket_stays_open(self, api: Api):
        started = await sync_to_async(api.start)("hello")
        cid = started["conversation_id"]
        other = await sync_to_async(tokens.issue)(conversation_id=cid, persona=started.get("persona", "guest:alice"))
        kept = await open_socket(cid, other)

        await sync_to_async(api.post)(f"/v1/agent/conversations/{cid}/tokens/revoke", {"token": started["token"]})

        assert await kept.receive_nothing(timeout=1)
        await kept.send_to(text_data="sync")
        assert json.loads(await kept.receive_from(timeout=5))["type"] == "state"
        await kept.disconnect()

    async def test_a_resync_on_a_socket_whose_token_was_revoked_elsewhere_is_refused(self, api: Api):
        started = await sync_to_async(api.start)("hello")
        socket = await open_socket(started["conversation_id"], started["token"])
        # Revoked without a push reaching this socket (say, it went to a process that died).
        await sync_to_async(ConversationToken.objects.update)(revoked_at=timezone.now())

        await socket.send_to(text_data="sync")

        assert await closed_with(socket) == 4401


    async def test_a_push_to_a_socket_whose_token_was_revoked_elsewhere_closes_it_instead(self, api: Api):
        started = await sync_to_async(api.start)("hello")
        cid = started["conversation_id"]
        socket = await open_socket(cid, started["token"])
        await sync_to_async(ConversationToken.objects.update)(revoked_at=timezone.now())  # its push never came

        await sync_to_async(api.post)(f"/v1/agent/conversations/{cid}/turns", {"message": "secret after revocation"})

        assert await closed_with(socket) == 4401


class TestExpiry:
    def test_an_expired_token_is_refused(self, api: Api):
        started = api.start("hello")
        ConversationToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

        response = api.as_(started["token"]).get(f"/v1/runner/conversation/{started['conversation_id']}/messages")

        assert response.status_code == 401
        assert tokens.resolve(started["token"]) is None

    def test_a_token_lives_thirty_days_by_default_and_using_it_renews_it(self, api: Api, settings):
        started = api.start("hello")
        row = ConversationToken.objects.get()
        assert timedelta(days=29, hours=23) < row.expires_at - timezone.now() <= timedelta(days=30)

        later = timezone.now() + timedelta(days=10)
        assert tokens.resolve(started["token"], now=later) is not None

        renewed = ConversationToken.objects.get().expires_at
        assert timedelta(days=29, hours=23) < renewed - later <= timedelta(days=30)

    def test_the_lifetime_is_a_setting(self, api: Api, settings):
        settings.WAYPOINT_TOKEN_MAX_AGE_DAYS = 1
        started = api.start("hello")

        assert tokens.resolve(started["token"], now=timezone.now() + timedelta(days=2)) is None


def test_no_token_reaches_the_access_log():
    from tests.process import probe
    from tests.servers import DaphneServer, ServerDatabase

    database = ServerDatabase("access")
    server = DaphneServer(database)
    try:
        [seed] = probe.run(database, "lab", config={"name": "Log", "model": {"provider": "scripted"}}, conversations=1,
                           message="hello")["conversations"]
        server.start()
        page = httpx.get(f"{server.url}/c/{seed['conversation_id']}", params={"token": seed["token"]}, timeout=10)
        assert page.status_code == 200
        server.stop()

        log = server.output()
        assert f'"GET /c/{seed["conversation_id"]}" 200' in log
        assert seed["token"] not in log and "token=" not in log
    finally:
        server.kill()
        database.drop()
