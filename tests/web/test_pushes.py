"""Pushes say what changed: after a socket's whole first state, the messages after the head it was sent, shared by its sockets."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from apps.agent import actions
from apps.widget import pushes
from apps.widget.presenters import message_html
from config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture(autouse=True)
async def close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


async def _socket(started: dict, query: str = "format=html") -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{started['conversation_id']}/?token={started['token']}&{query}",
        headers=[(b"origin", b"http://127.0.0.1")],
    )
    connected, _ = await communicator.connect()
    assert connected
    return communicator


def _seq(push: str) -> int:
    return int(re.search(r'<p id="status"[^>]*\sdata-seq="(\d+)"', push)[1])


def _after(push: str) -> int | None:
    found = re.search(r'<p id="status"[^>]*\sdata-after="(\d+)"', push)
    return int(found[1]) if found else None


def _message_ids(push: str) -> list[str]:
    return re.findall(r'<div id="(message-[^"]+)"', push)


async def _until(communicator: WebsocketCommunicator, text: str) -> list[str]:
    """Every push up to the first that holds `text`."""
    pushes_seen = [await communicator.receive_from(timeout=10)]
    while text not in pushes_seen[-1]:
        pushes_seen.append(await communicator.receive_from(timeout=10))
    return pushes_seen


async def _send(started: dict, clock, message: str) -> None:
    await sync_to_async(actions.start_turn)(conversation_id=started["conversation_id"], message=message,
                                            persona="guest:alice", edge="link", now=clock())


class TestWhatAPushCarries:
    async def test_after_the_whole_first_state_each_push_holds_only_the_messages_after_the_head_before_it(self, start, clock):
        started = await sync_to_async(start)("hello")
        communicator = await _socket(started)
        first = await communicator.receive_from(timeout=10)

        await _send(started, clock, "second")
        later = await _until(communicator, "You said: second")

        assert _after(first) is None and len(_message_ids(first)) == 2
        assert [_after(p) for p in later] == [_seq(p) for p in [first, *later[:-1]]]
        shown = set(_message_ids(first))
        assert [m for p in later for m in _message_ids(p) if m in shown] == []
        assert len([m for p in later for m in _message_ids(p)]) == 2  # "second" and its reply, once each
        await communicator.disconnect()

    async def test_a_resync_gets_the_whole_state_again(self, start, clock):
        started = await sync_to_async(start)("hello")
        communicator = await _socket(started)
        await communicator.receive_from(timeout=10)
        await _send(started, clock, "second")
        await _until(communicator, "You said: second")

        await communicator.send_to(text_data="sync")
        whole = await communicator.receive_from(timeout=10)

        assert _after(whole) is None and len(_message_ids(whole)) == 4
        assert 'id="cards"' in whole
        await communicator.disconnect()

    async def test_a_json_socket_gets_the_messages_resource_after_its_connects_after_seq(self, start, clock):
        started = await sync_to_async(start)("hello")
        communicator = await _socket(started, "format=json&after_seq=0")
        first = json.loads(await communicator.receive_from(timeout=10))

        await _send(started, clock, "second")
        seen = [json.loads(await communicator.receive_from(timeout=10))]
        while "You said: second" not in [m["text"] for m in seen[-1]["state"]["messages"]]:
            seen.append(json.loads(await communicator.receive_from(timeout=10)))

        assert [m["text"] for m in first["state"]["messages"]] == ["hello", "You said: hello"]
        assert [m["text"] for m in seen[-1]["state"]["messages"]] == ["hello", "You said: hello", "second", "You said: second"]
        assert seen[-1]["state"]["run_status"] == "completed" and seen[-1]["seq"] == seen[-1]["state"]["seq"]
        await communicator.disconnect()


class TestSharedRendering:
    async def test_the_sockets_of_one_viewer_get_the_same_pushes_each_rendered_once(self, start, clock):
        started = await sync_to_async(start)("hello")
        sockets = [await _socket(started) for _ in range(3)]
        for communicator in sockets:
            await communicator.receive_from(timeout=10)
        made = pushes._pushes.made

        await _send(started, clock, "second")
        seen = [await _until(communicator, "You said: second") for communicator in sockets]

        assert seen[0] == seen[1] == seen[2]
        assert pushes._pushes.made - made == len(seen[0])
        for communicator in sockets:
            await communicator.disconnect()


class TestRenderedMarkdown:
    def test_a_message_is_rendered_once_and_a_different_text_under_its_id_again(self):
        once = message_html("msg_cache_1", "**bold** and `code`")

        again = message_html("msg_cache_1", "**bold** and `code`")
        changed = message_html("msg_cache_1", "*other*")

        assert again is once and "<strong>bold</strong>" in once
        assert changed == "<p><em>other</em></p>\n"
