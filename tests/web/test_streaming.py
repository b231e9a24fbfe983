import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from apps.agent import actions
from apps.conversations.models import ChatMessage
from config.asgi import application
from tests.fakes import vendor as wire

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

STREAMING = {"provider": "scripted", "rules": [
    {"match": "story", "steps": [{"say": "Once upon a time there was a refund.", "stream": True}]},
    {"match": "date", "steps": [{"say": "Let me ask you for a date first.", "stream": True,
                                  "call": "pick_date", "arguments": {"label": "Date"}}, {"say": "Booked {result}"}]},
], "fallback": [{"say": "ok"}]}


async def _until(communicator, done, *, parse=json.loads):
    """Every frame up to and including the first that `done` accepts (10 s at most per frame)."""
    seen = []
    while not seen or not done(seen[-1]):
        seen.append(parse(await communicator.receive_from(timeout=10)))
    return seen


async def _open(started, fmt="json"):
    communicator = WebsocketCommunicator(
        application, f"/ws/conversations/{started['conversation_id']}/?token={started['token']}&format={fmt}",
        headers=[(b"origin", b"http://127.0.0.1")],
    )
    assert (await communicator.connect())[0]
    await communicator.receive_from()
    return communicator


class TestStreamingDrafts:
    async def test_drafts_grow_word_by_word_and_only_the_committed_text_is_stored(self, start, make_assistant, clock, settings):
        settings.WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS = 0.05
        assistant = await sync_to_async(make_assistant)(model=STREAMING)
        started = await sync_to_async(start)("hi", assistant=assistant)
        communicator = await _open(started)

        # Off the shared sync thread, so the consumer renders pushes while the turn runs, as under Daphne.
        await sync_to_async(actions.start_turn, thread_sensitive=False)(conversation_id=started["conversation_id"], message="tell a story",
                                                persona="guest:alice", edge="api", now=clock())
        # The turn ran to its end inside start_turn (inline runner) while this loop delivered the pushes.
        seen = await _until(communicator, lambda m: m["type"] == "state" and m["state"]["messages"][-1]["text"].startswith("Once upon"))

        drafts = [m["text"] for m in seen if m["type"] == "draft"]
        assert drafts[0] == "Once " and drafts[-1] == "Once upon a time there was a refund."
        assert all(b.startswith(a) for a, b in zip(drafts, drafts[1:], strict=False))
        texts = await sync_to_async(lambda: list(ChatMessage.objects.filter(role="assistant").values_list("text", flat=True)))()
        assert texts == ["ok", "Once upon a time there was a refund."]
        await communicator.disconnect()

    async def test_a_pausing_round_withdraws_its_draft(self, start, make_assistant, clock, settings):
        settings.WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS = 0.05
        assistant = await sync_to_async(make_assistant)(model=STREAMING)
        started = await sync_to_async(start)("hi", assistant=assistant)
        communicator = await _open(started, fmt="html")

        await sync_to_async(actions.start_turn, thread_sensitive=False)(conversation_id=started["conversation_id"], message="pick a date",
                                                persona="guest:alice", edge="api", now=clock())
        frames = await _until(communicator, lambda f: 'id="call-call_1_1"' in f, parse=str)

        assert any("Let me ask you for a date first." in f and 'id="draft"' in f for f in frames)
        last = frames[-1]
        assert 'class="draft"' in last and "Let me ask you" not in last
        await communicator.disconnect()


class TestOpenAIStreaming:
    def test_a_streamed_answer_is_assembled_with_its_tool_calls(self, start, make_assistant, settings):
        chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1764500000, "model": "gpt-4o-mini",
                 "system_fingerprint": "fp_1"}
        tool_stream = [
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": "call_s1", "type": "function", "function": {"name": "lookup_order", "arguments": ""}}]},
                "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"order_'}}]},
                                   "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'id": "B-2"}'}}]},
                                   "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            {**chunk, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}},
        ]
        text_stream = [
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "B-2 "}, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {"content": "ships today."}, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        with wire.Vendor() as vendor:
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            vendor.queue((200, tool_stream), (200, text_stream))
            assistant = make_assistant(model={"provider": "openai", "model": "gpt-4o-mini", "base_url": vendor.base_url,
                                              "stream": True})

            started = start("where is B-2?", assistant=assistant)

        assert vendor.requests[0]["stream"] is True
        assert vendor.requests[1]["messages"][-1]["content"] == '{"order_id": "B-2"}'
        assert ChatMessage.objects.filter(conversation_id=started["conversation_id"], role="assistant").get().text == "B-2 ships today."
