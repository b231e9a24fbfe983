import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from apps.agent import actions
from config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


async def _connect(conversation_id, token):
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation_id}/?token={token}", headers=[(b"origin", b"http://127.0.0.1")]
    )
    connected, _ = await communicator.connect()
    return communicator, connected


class TestConversationSocket:
    async def test_pushes_the_new_state_after_a_turn_commits(self, start, clock):
        started = await sync_to_async(start)("hello")
        communicator, connected = await _connect(started["conversation_id"], started["token"])
        first = json.loads(await communicator.receive_from())

        await sync_to_async(actions.start_turn)(conversation_id=started["conversation_id"], message="second",
                                                persona="guest:alice", edge="api", now=clock())
        seen = first
        while seen["state"]["run_status"] != "completed" or seen["seq"] <= first["seq"]:
            seen = json.loads(await communicator.receive_from(timeout=5))

        assert connected and first["type"] == "state"
        assert [m["text"] for m in seen["state"]["messages"]][-1] == "You said: second"
        await communicator.disconnect()

    async def test_refuses_another_conversations_token_before_accepting(self, start):
        one = await sync_to_async(start)("hello")
        two = await sync_to_async(start)("hi")

        communicator, connected = await _connect(one["conversation_id"], two["token"])

        assert not connected
