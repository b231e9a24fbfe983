"""A websocket is refused before it is accepted: a foreign page's Origin, or a token of another conversation."""

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

OWN = b"http://testserver"


@pytest.fixture(autouse=True)
async def close_thread_connections():
    yield
    # The consumer reads the database on the thread sync_to_async shares; close that connection so
    # the test database can be dropped at the end of the session.
    await sync_to_async(connections.close_all)()


async def connect(conversation_id: str, token: str, *, origin: bytes = OWN):
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation_id}/?token={token}&format=json",
        headers=[(b"host", b"testserver"), (b"origin", origin)],
    )
    connected, code = await communicator.connect(timeout=10)
    return communicator, connected, code


class TestWebsocketRefusals:
    async def test_the_own_token_and_origin_are_accepted(self, start):
        started = await sync_to_async(start)("hello")

        communicator, connected, _ = await connect(started["conversation_id"], started["token"])

        assert connected
        first = await communicator.receive_json_from(timeout=10)
        assert first["type"] == "state"
        await communicator.disconnect()

    async def test_a_foreign_origin_is_refused_before_accept(self, start):
        started = await sync_to_async(start)("hello")

        _, connected, _ = await connect(started["conversation_id"], started["token"], origin=b"https://evil.example")

        assert not connected

    async def test_another_conversations_token_is_refused_before_accept(self, start):
        mine = await sync_to_async(start)("hello")
        theirs = await sync_to_async(start)("hello")

        _, connected, code = await connect(theirs["conversation_id"], mine["token"])

        assert not connected
        assert code == 4403

    async def test_a_forged_token_is_refused_before_accept(self, start):
        started = await sync_to_async(start)("hello")

        _, connected, code = await connect(started["conversation_id"], started["token"][:-4] + "AAAA")

        assert not connected
        assert code == 4403
