"""POST /v1/ag-ui/{assistant_id}: AG-UI runs on durable conversations, through Django's test client (inline runner)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

ASK = {"match": "colour", "steps": [{"call": "ask_question", "arguments": {"question": "Which colour?"}},
                                    {"say": "Painting it {result}."}]}


async def _read(stream) -> bytes:
    return b"".join([chunk async for chunk in stream])


def events_of(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    body = async_to_sync(_read)(response.streaming_content).decode()
    events = [json.loads(block.removeprefix("data: ")) for block in body.split("\n\n") if block.strip()]
    assert_every_result_follows_its_call(events)
    return events


def stream_of(response, *, until: Callable[[dict], bool] | None = None,
              meanwhile: Callable[[dict], None] | None = None, seconds: float = 30) -> list[dict]:
    """
    A stream's events read as they come, for one that stays open: `meanwhile(event)` runs after
    each event (the staff side acting in its own thread), and the client leaves after the first
    event `until` accepts. A comment line is kept as `{"comment": text}`.
    """

    async def read() -> list[dict]:
        out: list[dict] = []
        stream = response.streaming_content
        try:
            async with asyncio.timeout(seconds):
                async for chunk in stream:
                    for block in filter(str.strip, chunk.decode().split("\n\n")):
                        if block.startswith(":"):
                            out.append({"comment": block.removeprefix(":").strip()})
                        else:
                            out.append(json.loads(block.removeprefix("data: ")))
                            if meanwhile is not None:
                                await sync_to_async(meanwhile)(out[-1])
                        if until is not None and until(out[-1]):
                            return out
        finally:
            await stream.aclose()
        return out

    assert response.status_code == 200, response.content
    return async_to_sync(read)()


def assert_every_result_follows_its_call(events: list[dict]) -> None:
    """A client can place a TOOL_CALL_RESULT only under a call this stream, or its MESSAGES_SNAPSHOT, showed it."""
    announced: set[str] = set()
    for event in events:
        if event["type"] == "MESSAGES_SNAPSHOT":
            announced |= {call["id"] for message in event["messages"] for call in message.get("toolCalls") or []}
        elif event["type"] == "TOOL_CALL_END":
            announced.add(event["toolCallId"])
        elif event["type"] == "TOOL_CALL_RESULT":
            assert event["toolCallId"] in announced, f"a TOOL_CALL_RESULT for {event['toolCallId']}, a call never announced"


def unanswered_call(events: list[dict]) -> str:
    """The frontend tool call a paused stream leaves for the client: a TOOL_CALL without a result."""
    answered = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    [call_id] = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallId"] not in answered]
    return call_id


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


class Thread:
    """One AG-UI thread as a client keeps it: its messages, sent again with every request."""

    def __init__(self, api: Api, assistant: str, thread_id: str | None = None):
        self.api, self.assistant = api, assistant
        self.thread_id = thread_id or f"thread-{uuid.uuid4().hex[:12]}"
        self.messages: list[dict] = []

    def send(self, text: str | None = None, *, resume: list | None = None, extra: list | None = None, message_id=None):
        if text is not None:
            self.messages.append({"id": message_id or f"m-{uuid.uuid4().hex[:10]}", "role": "user", "content": text})
        self.messages += extra or []
        return self.post({"threadId": self.thread_id, "runId": f"r-{uuid.uuid4().hex[:8]}", "messages": self.messages,
                          "tools": [], "context": [], "state": {}, "forwardedProps": {},
                          **({"resume": resume} if resume else {})})

    def post(self, body: dict):
        return self.api.post(f"/v1/ag-ui/{self.assistant}", body)


@pytest.fixture
def assistant(api: Api) -> str:
    from tests.conftest import SUPPORT_CONFIG

    model = {**SUPPORT_CONFIG["model"], "rules": [*SUPPORT_CONFIG["model"]["rules"], ASK]}
    return api.create_assistant(model=model)


class TestPlainText:
    def test_a_new_thread_starts_a_conversation_and_streams_the_reply(self, api, assistant):
        thread = Thread(api, assistant)

        events = events_of(thread.send("hello there"))

        assert types(events)[0] == "RUN_STARTED" and types(events)[-1] == "RUN_FINISHED"
        assert events[0]["threadId"] == thread.thread_id
        text = [e for e in events if e["type"].startswith("TEXT_MESSAGE")]
        assert types(text) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
        assert text[1]["delta"] == "You said: hello there"
        state = [e for e in events if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]
        assert state["run_status"] == "completed" and state["control"]["mode"] == "agent"
        assert api.state(state["conversation_id"])["messages"][-1]["text"] == "You said: hello there"

    def test_the_turn_is_recorded_with_edge_ag_ui(self, api, assistant):
        from apps.ledger import store

        events = events_of(Thread(api, assistant).send("hello"))

        cid = [e for e in events if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]
        dispatched = [e for e in store.read(cid) if e.kind == "turn_dispatched"]
        assert [e.payload["edge"] for e in dispatched] == ["ag-ui"]

    def test_a_retried_request_makes_no_second_turn(self, api, assistant):
        thread = Thread(api, assistant)
        first = thread.send("hello", message_id="m-1")
        cid = [e for e in events_of(first) if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]

        again = events_of(thread.send())

        assert types(again)[0:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"]
        assert [m["id"] for m in again[1]["messages"] if m["role"] == "user"] == ["m-1"]
        assert api.state(cid)["message_count"] == 2

    def test_a_thread_id_of_200_characters_is_kept(self, api, assistant):
        thread = Thread(api, assistant, thread_id="t" * 200)

        events_of(thread.send("hello"))
        again = events_of(thread.send("and again"))

        assert [m["content"] for m in again[1]["messages"]] == ["hello", "You said: hello", "and again"]

    def test_a_conversation_id_is_a_thread_and_a_second_message_continues_it(self, api, assistant):
        started = api.start("hello", assistant=assistant)
        thread = Thread(api, assistant, thread_id=started["conversation_id"])

        events = events_of(thread.send("and again"))

        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["You said: and again"]
        assert [m["text"] for m in api.state(started["conversation_id"])["messages"]] == [
            "hello", "You said: hello", "and again", "You said: and again"]

    def test_server_tools_appear_as_tool_calls_with_results_and_steps(self, api, assistant):
        thread = Thread(api, assistant)

        events = events_of(thread.send("refund please"))

        calls = [e for e in events if e["type"].startswith("TOOL_CALL")]
        assert types(calls)[:4] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
        assert calls[0]["toolCallName"] == "lookup_order"
        assert calls[0]["metadata"]["waypoint"]["displayName"] == "Lookup order"
        assert json.loads(calls[3]["content"]) == {"order_id": "A-1"}
        steps = [e["stepName"] for e in events if e["type"] == "STEP_STARTED"]
        assert steps[0] == "Model round 1"


class TestInterrupts:
    def test_an_approval_ends_the_run_with_an_interrupt_and_resume_approves_it(self, api, assistant):
        thread = Thread(api, assistant)

        paused = events_of(thread.send("refund please"))

        finished = paused[-1]
        assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt"
        [interrupt] = finished["outcome"]["interrupts"]
        assert interrupt["reason"] == "approval" and interrupt["message"] == "Shall I go ahead with “Issue refund”?"
        run_id, call_id = interrupt["id"].split(":")
        assert interrupt["toolCallId"] == call_id
        assert interrupt["responseSchema"]["properties"]["reviewed"]["properties"]["arguments"]["const"] == {
            "order_id": "A-1", "amount": 20}

        payload = {"decision": "approve", "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}}
        resumed = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]))

        assert resumed[-1]["type"] == "RUN_FINISHED" and resumed[-1].get("outcome", {}).get("type", "success") == "success"
        assert [e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT"][-1].startswith("Refund issued for")

    def test_an_editable_approval_takes_edited_arguments_in_the_resume_payload(self, api):
        from tests.conftest import SUPPORT_CONFIG

        tools = [{**t, "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
                  "approval": {"editable": ["amount"], "approver": "any", "expires_in_seconds": 600}}
                 if t["name"] == "issue_refund" else t for t in SUPPORT_CONFIG["tools"]]
        thread = Thread(api, api.create_assistant(tools=tools))
        [interrupt] = events_of(thread.send("refund please"))[-1]["outcome"]["interrupts"]

        edits = interrupt["responseSchema"]["properties"]["edited_arguments"]
        assert edits["properties"] == {"amount": {"type": "number"}} and edits["additionalProperties"] is False
        assert interrupt["metadata"]["waypoint"]["approver"] == "any" and interrupt["metadata"]["waypoint"]["expires_at"]
        payload = {"decision": "approve", "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                   "edited_arguments": {"amount": 15}}
        resumed = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]))

        assert [e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT"][-1] == (
            'Refund issued for {"note": "approved with changes: amount 15", "result": {"amount": 15, "order_id": "A-1"}}.')

    def test_a_resumed_stream_announces_the_approved_call_before_its_result(self, api, assistant):
        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("refund please"))[-1]["outcome"]["interrupts"]
        payload = {"decision": "approve", "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}}

        resumed = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]))

        call = [e for e in resumed if e.get("toolCallId") == interrupt["toolCallId"]]
        assert types(call) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
        assert call[0]["toolCallName"] == "issue_refund"
        assert json.loads(call[1]["delta"]) == {"order_id": "A-1", "amount": 20}

    def test_a_different_second_answer_is_a_run_error_and_changes_nothing(self, api, assistant):
        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("refund please"))[-1]["outcome"]["interrupts"]
        reviewed = {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}
        events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                       "payload": {"decision": "approve", "reviewed": reviewed}}]))
        cid = interrupt["id"]

        conflict = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                  "payload": {"decision": "deny", "reviewed": reviewed}}]))

        assert types(conflict) == ["RUN_STARTED", "RUN_ERROR"]
        assert conflict[1]["code"] == "action_result_conflict"
        assert cid

    def test_a_question_is_an_interrupt_answered_by_resume(self, api, assistant):
        thread = Thread(api, assistant)

        [interrupt] = events_of(thread.send("what colour?"))[-1]["outcome"]["interrupts"]
        resumed = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                 "payload": {"answer": "blue"}}]))

        assert interrupt["reason"] == "question" and interrupt["message"] == "Which colour?"
        assert [e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT"] == ['Painting it {"answer": "blue"}.']

    def test_a_client_tool_is_a_frontend_tool_call_answered_by_a_tool_message(self, api, assistant):
        thread = Thread(api, assistant)

        paused = events_of(thread.send("when can you deliver?"))
        call_id = unanswered_call(paused)
        answer = {"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": json.dumps({"label": "2026-12-24"})}
        resumed = events_of(thread.send(extra=[answer]))

        assert set(paused[-1]) == {"type", "threadId", "runId"}  # plain: nothing a strict client refuses
        assert any(e["type"] == "TOOL_CALL_START" and e["toolCallId"] == call_id and e["toolCallName"] == "pick_date"
                   for e in paused)
        assert [e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT"] == ['Booked for {"label": "2026-12-24"}.']


class TestBadInput:
    def test_a_malformed_input_is_422_in_the_error_shape(self, api, assistant):
        response = Thread(api, assistant).post({"threadId": "t", "runId": "r", "messages": [{"role": "user"}]})

        assert response.status_code == 422
        assert response.json()["error"]["code"] == "invalid_request"

    def test_an_unknown_interrupt_id_is_404_and_writes_nothing(self, api, assistant):
        thread = Thread(api, assistant)
        events_of(thread.send("refund please"))

        response = thread.send(resume=[{"interruptId": "run_x:call_1_2", "status": "resolved", "payload": {}}])

        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"

    def test_an_unknown_assistant_is_404(self, api):
        response = Thread(api, str(uuid.uuid4())).send("hello")

        assert response.status_code == 404

    def test_a_token_for_another_conversation_gets_404(self, api, assistant):
        mine = api.start("hello", assistant=assistant)
        other = api.start("hello", assistant=assistant)

        response = Thread(api.as_(mine["token"]), assistant, thread_id=other["conversation_id"]).send("hi")

        assert response.status_code == 404

    def test_a_token_drives_its_own_conversation(self, api, assistant):
        mine = api.start("hello", assistant=assistant)

        events = events_of(Thread(api.as_(mine["token"]), assistant, thread_id=mine["conversation_id"]).send("hi"))

        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["You said: hi"]

    def test_no_credential_is_401(self, api, assistant):
        response = Thread(api.as_(None), assistant).send("hello")

        assert response.status_code == 401

    def test_a_resume_for_a_run_that_no_longer_waits_is_409_and_changes_nothing(self, api):
        from datetime import timedelta

        from apps.agent import runner
        from tests.conftest import SUPPORT_CONFIG

        both = {"match": "both", "steps": [{"calls": [{"call": "pick_date", "arguments": {"label": "Day"}},
                                                      {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}]}]}
        model = {**SUPPORT_CONFIG["model"], "rules": [both]}
        assistant = api.create_assistant(mode="simple", model=model)
        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("both please"))[-1]["outcome"]["interrupts"]
        runner.expire_requests(now=runner.timezone.now() + timedelta(minutes=16))
        reviewed = {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}

        response = thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                        "payload": {"decision": "approve", "reviewed": reviewed}}])

        assert response.status_code == 409 and response.json()["error"]["code"] == "run_expired"
        after = events_of(thread.send())
        assert after[-1]["type"] == "RUN_ERROR" and after[-1]["code"] == "run_expired"

    def test_a_tool_message_that_is_not_json_is_422_and_the_call_stays_pending(self, api, assistant):
        thread = Thread(api, assistant)
        paused = events_of(thread.send("when can you deliver?"))
        call_id = unanswered_call(paused)

        response = thread.send(extra=[{"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": "not json"}])

        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"
        cid = [e for e in paused if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]
        assert [c["call_id"] for c in api.state(cid)["pending_client_actions"]] == [call_id]

    def test_a_malformed_first_request_starts_no_conversation(self, api, assistant):
        from apps.conversations.models import Conversation

        before = Conversation.objects.count()

        response = Thread(api, assistant).post({"threadId": "t-new", "runId": "r", "messages": [
            {"id": "m-1", "role": "user", "content": "   "}]})

        assert response.status_code == 422
        assert Conversation.objects.count() == before

    def test_a_new_message_beside_an_answer_is_409_and_writes_neither(self, api, assistant):
        thread = Thread(api, assistant)
        paused = events_of(thread.send("when can you deliver?"))
        call_id = unanswered_call(paused)
        answer = {"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": json.dumps({"label": "2026-12-24"})}

        response = thread.send("and one more thing", extra=[answer])

        assert response.status_code == 409 and response.json()["error"]["code"] == "turn_conflict"
        cid = [e for e in paused if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]
        state = api.state(cid)
        assert [c["call_id"] for c in state["pending_client_actions"]] == [call_id] and state["message_count"] == 1


class TestDurableResume:
    def test_a_request_with_nothing_new_on_a_paused_run_gets_its_interrupt_again(self, api, assistant):
        thread = Thread(api, assistant)
        first = events_of(thread.send("refund please"))

        again = events_of(thread.send())

        assert types(again)[:3] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]
        assert again[-1]["outcome"]["interrupts"] == first[-1]["outcome"]["interrupts"]

    def test_a_request_with_nothing_new_on_a_run_waiting_on_a_client_tool_shows_the_call_again(self, api, assistant):
        thread = Thread(api, assistant)
        call_id = unanswered_call(events_of(thread.send("when can you deliver?")))

        again = events_of(thread.send())

        assert unanswered_call(again) == call_id and set(again[-1]) == {"type", "threadId", "runId"}
        [start] = [e for e in again if e["type"] == "TOOL_CALL_START"]
        assert start["toolCallName"] == "pick_date"
        answer = {"id": "tool-1", "role": "tool", "toolCallId": call_id, "content": json.dumps({"label": "2026-12-24"})}
        resumed = events_of(thread.send(extra=[answer]))
        assert [e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT"] == ['Booked for {"label": "2026-12-24"}.']

    def test_a_cancelled_question_is_declined_and_the_run_goes_on(self, api, assistant):
        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("what colour?"))[-1]["outcome"]["interrupts"]

        resumed = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))

        assert resumed[-1]["type"] == "RUN_FINISHED"
        cid = [e for e in resumed if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]
        assert api.state(cid)["answered_client_actions"][0]["output"] == {"declined": True}


class TestWritingWhileARequestWaits:
    """A new message while the run waits declines what waits, as the page's send does (docs/widget.md): no thread is left dead."""

    def test_a_new_message_while_a_client_tool_waits_declines_it_and_gets_its_reply(self, api, assistant):
        from apps.ledger import store

        thread = Thread(api, assistant)
        paused = events_of(thread.send("when can you deliver?"))
        call_id = unanswered_call(paused)

        events = events_of(thread.send("forget it, just hello"))

        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["You said: forget it, just hello"]
        cid = [e for e in events if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]
        [superseded] = [e.payload for e in store.read(cid) if e.kind == "turn_superseded"]
        assert superseded["call_ids"] == [call_id] and superseded["reason"] == "forget it, just hello"

    def test_a_new_message_while_an_approval_waits_declines_it_and_a_later_answer_loses(self, api, assistant):
        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("refund please"))[-1]["outcome"]["interrupts"]

        events = events_of(thread.send("hello instead"))
        late = events_of(thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {
            "decision": "approve", "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}}}]))

        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["You said: hello instead"]
        # The message declined it first: a later answer loses, as any second answer does.
        assert types(late) == ["RUN_STARTED", "RUN_ERROR"] and late[-1]["code"] == "action_result_conflict"

    def test_cancelling_the_interrupts_beside_a_new_message_declines_them_with_it_and_answers_it(self, api, assistant):
        from apps.ledger import store

        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("refund please"))[-1]["outcome"]["interrupts"]

        # What an AG-UI client sends to write instead of answering: it must address every open interrupt.
        events = events_of(thread.send("no, hello", resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))

        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["You said: no, hello"]
        cid = [e for e in events if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]
        [superseded] = [e.payload for e in store.read(cid) if e.kind == "turn_superseded"]
        assert superseded["call_ids"] == [interrupt["toolCallId"]] and superseded["reason"] == "no, hello"


class TestHandoff:
    @pytest.fixture
    def quick(self, monkeypatch):
        """A held stream reads the record and beats its heart in a test's time, not a proxy's."""
        from apps.agui import stream

        monkeypatch.setattr(stream, "HELD_POLL_SECONDS", 0.05)
        monkeypatch.setattr(stream, "HEARTBEAT_SECONDS", 0.2)

    def test_a_thread_under_a_person_keeps_its_stream_open_with_the_persons_replies_until_control_returns(self, api, quick):
        from django.utils import timezone

        from apps.agent import handoff
        from apps.agui.models import Thread as AguiThread

        assistant = api.create_assistant(handoff={"enabled": True})
        thread = Thread(api, assistant)
        events_of(thread.send("hello there"))
        cid = str(AguiThread.objects.get(thread_id=thread.thread_id).conversation_id)
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())
        handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Dana here.", now=timezone.now())
        acted = []

        def dana(event: dict) -> None:
            # Once the stream shows who holds the thread, Dana writes again and hands it back.
            if event.get("type") == "STATE_SNAPSHOT" and not acted:
                acted.append(True)
                handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Found it: it's at the depot.",
                                      now=timezone.now())
                handoff.return_control(conversation_id=cid, staff="staff:dana", now=timezone.now())

        events = stream_of(thread.send("is my parcel lost?"), meanwhile=dana)

        assert types(events)[0] == "RUN_STARTED" and events[-1] == {"type": "RUN_FINISHED", "threadId": thread.thread_id,
                                                                   "runId": events[0]["runId"]}
        assert [m["content"] for m in events[1]["messages"] if m.get("name") == "Dana"] == ["Dana here."]
        text = [e for e in events if e.get("type", "").startswith("TEXT_MESSAGE")]
        assert types(text) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
        assert (text[0]["name"], text[0]["role"], text[1]["delta"]) == ("Dana", "assistant", "Found it: it's at the depot.")
        modes = [e["snapshot"]["control"]["mode"] for e in events if e.get("type") == "STATE_SNAPSHOT"]
        assert modes[0] == "human" and modes[-1] == "agent"
        state = api.state(cid)
        assert [m["text"] for m in state["messages"][-2:]] == ["is my parcel lost?", "Found it: it's at the depot."]

    def test_a_held_stream_beats_its_heart_while_nothing_happens_and_the_client_may_leave(self, api, quick):
        from django.utils import timezone

        from apps.agent import handoff
        from apps.agui.models import Thread as AguiThread

        assistant = api.create_assistant(handoff={"enabled": True})
        thread = Thread(api, assistant)
        events_of(thread.send("hello there"))
        cid = str(AguiThread.objects.get(thread_id=thread.thread_id).conversation_id)
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())

        events = stream_of(thread.send("anyone there?"), until=lambda e: "comment" in e)

        assert events[-1] == {"comment": "heartbeat"}
        assert {e["snapshot"]["control"]["mode"] for e in events if e.get("type") == "STATE_SNAPSHOT"} == {"queued"}
        assert api.state(cid)["messages"][-1]["text"] == "anyone there?"

    def test_a_held_stream_ends_with_a_run_error_once_its_token_is_revoked(self, api, quick):
        from django.utils import timezone

        from apps.agent import handoff
        from apps.agui.models import Thread as AguiThread

        assistant = api.create_assistant(handoff={"enabled": True})
        events_of(Thread(api, assistant).post({  # started for the customer, whose token it then issues
            "threadId": "held-thread", "runId": "r-1", "messages": [{"id": "m-1", "role": "user", "content": "hello there"}],
            "tools": [], "context": [], "state": {}, "forwardedProps": {"persona": "guest:alice"}}))
        cid = str(AguiThread.objects.get(thread_id="held-thread").conversation_id)
        issued = api.post(f"/v1/agent/conversations/{cid}/tokens", {"persona": "guest:alice"})
        assert issued.status_code == 201, issued.content
        token = issued.json()["token"]
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())
        customer = Thread(api.as_(token), assistant, thread_id=cid)

        revoked = []

        def revoke(event: dict) -> None:
            if event.get("type") == "STATE_SNAPSHOT" and not revoked:
                revoked.append(api.post(f"/v1/agent/conversations/{cid}/tokens/revoke", {"token": token}).status_code)

        events = stream_of(customer.send("anyone there?"), meanwhile=revoke)

        assert revoked and revoked[0] < 300
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "unauthorized"
        assert not [e for e in events if "comment" in e]  # nothing more was sent to a revoked token

    def test_a_held_stream_ends_when_the_queue_times_out(self, api, quick):
        from datetime import timedelta

        from django.utils import timezone

        from apps.agent import handoff
        from apps.agui.models import Thread as AguiThread

        assistant = api.create_assistant(handoff={"enabled": True, "queue_timeout_seconds": 60})
        thread = Thread(api, assistant)
        events_of(thread.send("hello there"))
        cid = str(AguiThread.objects.get(thread_id=thread.thread_id).conversation_id)
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())

        def nobody_came(event: dict) -> None:
            if event.get("type") == "STATE_SNAPSHOT":
                handoff.time_out_handoffs(now=timezone.now() + timedelta(minutes=5))

        events = stream_of(thread.send("anyone there?"), meanwhile=nobody_came)

        assert events[-1]["type"] == "RUN_FINISHED"
        assert [e["snapshot"]["control"]["mode"] for e in events if e.get("type") == "STATE_SNAPSHOT"][-1] == "agent"

    def test_resuming_an_interrupt_withdrawn_by_a_handoff_is_run_not_waiting(self, api):
        from django.utils import timezone

        from apps.agent import handoff

        assistant = api.create_assistant(handoff={"enabled": True})
        thread = Thread(api, assistant)
        [interrupt] = events_of(thread.send("refund please"))[-1]["outcome"]["interrupts"]
        from apps.runs.models import WorkflowLog

        cid = str(WorkflowLog.objects.get(run_id=interrupt["id"].split(":")[0]).conversation_id)
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())

        payload = {"decision": "approve", "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}}
        late = thread.send(resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}])

        # Refused before a stream starts, as any request its run no longer waits for (docs/ag-ui.md).
        assert late.status_code == 409 and late.json()["error"]["code"] == "run_not_waiting"
        assert api.state(cid)["answered_client_actions"][0]["status"] == "withdrawn"

    def test_the_words_said_with_a_handoff_are_the_runs_text_message_and_in_the_next_snapshot(self, api, quick):
        from tests.conftest import SUPPORT_CONFIG

        rules = [{"match": "person", "steps": [{"say": "Of course, I'm asking a person to join.",
                                                "handoff": "the customer asked for a person"}]}]
        assistant = api.create_assistant(handoff={"enabled": True, "model_tool": True},
                                         model={**SUPPORT_CONFIG["model"], "rules": rules})
        thread = Thread(api, assistant)

        # The stream stays open while the person is awaited: the client leaves at its first heartbeat.
        events = stream_of(thread.send("can I talk to a person?"), until=lambda e: "comment" in e)

        text = [e for e in events if e.get("type", "").startswith("TEXT_MESSAGE")]
        assert types(text) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
        assert text[1]["delta"] == "Of course, I'm asking a person to join."
        [*_, last] = [e["snapshot"] for e in events if e.get("type") == "STATE_SNAPSHOT"]
        assert (last["run_status"], last["control"]["mode"]) == ("handed_off", "queued")
        again = stream_of(thread.send(), until=lambda e: e.get("type") == "MESSAGES_SNAPSHOT")
        said = [m for m in again[1]["messages"] if m["role"] == "assistant"]
        assert again[1]["type"] == "MESSAGES_SNAPSHOT" and said[-1]["content"] == "Of course, I'm asking a person to join."
