"""
A conversation of 10,000 messages keeps its socket: a push that would exceed Daphne's 1 MiB message
limit (a 1011 close) is sent as the latest messages and a "load earlier" marker instead.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections, transaction
from django.utils import timezone

from apps.conversations.actions import locked, new_id
from apps.ledger import store
from apps.ledger.types import TurnComplete, TurnDispatched
from apps.widget.pushes import MAX_PUSH_BYTES
from config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

DAPHNE_LIMIT = 1024 * 1024  # autobahn's default maximum message size in Daphne
TEXT = "A line of a long support conversation, about orders, refunds and deliveries. " * 3


@pytest.fixture(autouse=True)
async def close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


def ten_thousand_messages(start) -> dict:
    started = start("hello")
    cid = started["conversation_id"]
    for chunk in range(10):  # with the first turn's two: 10,000 messages, in 10 commits rather than 4,999
        with transaction.atomic():
            conversation = locked(cid)
            for _ in range(500 if chunk else 499):
                run_id, turn_id = new_id("run"), new_id("turn")
                store.append(conversation, turn_id=turn_id, actor="guest:alice", now=timezone.now(), events=[
                    TurnDispatched(run_id=run_id, message_id=new_id("msg"), text=TEXT, caller="guest:alice"),
                    TurnComplete(run_id=run_id, message_id=new_id("msg"), text=TEXT),
                ])
    return started


async def first_push(started: dict, query: str) -> str:
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{started['conversation_id']}/?token={started['token']}&{query}",
        headers=[(b"origin", b"http://127.0.0.1")],
    )
    connected, _ = await communicator.connect()
    assert connected
    text = await communicator.receive_from(timeout=60)
    await communicator.disconnect()
    return text


async def test_a_ten_thousand_message_conversation_is_pushed_within_the_limit_with_a_marker(start):
    started = await sync_to_async(ten_thousand_messages)(start)

    as_json = await first_push(started, "format=json&after_seq=0")
    as_html = await first_push(started, "format=html")

    state = json.loads(as_json)["state"]
    assert len(as_json.encode()) <= MAX_PUSH_BYTES < DAPHNE_LIMIT
    assert state["message_count"] == 10_000 and 0 < len(state["messages"]) < 10_000
    assert state["earlier_messages"] == 10_000 - len(state["messages"])
    assert state["messages"][-1]["role"] == "assistant"  # the latest ones, up to the last
    assert len(as_html.encode()) <= MAX_PUSH_BYTES
    assert 'id="earlier-messages"' in as_html and "Show earlier messages" in as_html


async def test_a_small_conversation_is_pushed_whole(start):
    started = await sync_to_async(start)("hello")

    state = json.loads(await first_push(started, "format=json&after_seq=0"))["state"]
    html = await first_push(started, "format=html")

    assert len(state["messages"]) == 2 and "earlier_messages" not in state
    assert 'id="earlier-messages"' not in html
