"""The websocket's JSON contract: state pushes with the head seq, catch-up by after_seq, origin and limits."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

OWN_ORIGIN = (b"origin", b"http://127.0.0.1")


async def connect(conversation_id: str, token: str, *, after_seq: int | None = None, origin=OWN_ORIGIN):
    query = f"token={token}" + (f"&after_seq={after_seq}" if after_seq is not None else "")
    communicator = WebsocketCommunicator(application, f"/ws/conversations/{conversation_id}/?{query}", headers=[origin])
    connected, code = await communicator.connect()
    return communicator, connected, code


async def next_state(communicator) -> dict:
    while True:
        message = json.loads(await communicator.receive_from(timeout=5))
        if message["type"] == "state":
            return message


class TestSocketContract:
    async def test_the_first_message_is_the_state_with_the_head_seq(self, api):
        started = await sync_to_async(api.start)("hello")
        expected = await sync_to_async(api.state)(started["conversation_id"])

        communicator, connected, _ = await connect(started["conversation_id"], started["token"])
        message = await next_state(communicator)

        assert connected
        assert message["seq"] == expected["seq"] == message["state"]["seq"]
        assert message["state"]["messages"] == expected["messages"]
        await communicator.disconnect()

    async def test_a_reconnect_with_after_seq_gets_only_what_it_missed(self, api):
        started = await sync_to_async(api.start)("hello")
        first, _, _ = await connect(started["conversation_id"], started["token"])
        seen = (await next_state(first))["seq"]
        await first.disconnect()
        await sync_to_async(api.post)(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "while away"})

        again, connected, _ = await connect(started["conversation_id"], started["token"], after_seq=seen)
        message = await next_state(again)

        assert connected and message["seq"] > seen
        assert [m["text"] for m in message["state"]["messages"]] == ["while away", "You said: while away"]
        await again.disconnect()

    async def test_a_foreign_origin_is_refused_before_accepting(self, api):
        started = await sync_to_async(api.start)("hello")

        _, connected, _ = await connect(started["conversation_id"], started["token"], origin=(b"origin", b"https://evil.example"))

        assert not connected

    async def test_a_token_over_its_rate_limit_is_refused_before_accepting(self, api, settings):
        started = await sync_to_async(api.start)("hello")
        settings.WAYPOINT_RATE_LIMIT_PER_CREDENTIAL = 1
        first, _, _ = await connect(started["conversation_id"], started["token"])

        _, connected, code = await connect(started["conversation_id"], started["token"])

        assert not connected and code == 4429
        await first.disconnect()
