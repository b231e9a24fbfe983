"""A run's log entries and drafts as AG-UI events (apps/agui/events.py), without a database."""

from __future__ import annotations

from apps.agui import events
from apps.ledger.types import ActionFinished, ActionStarted, ModelRound, Recorded, TurnComplete

TOOLS = {"lookup_order": {"name": "lookup_order", "kind": "server", "action": "sleep", "display_name": "Order lookup",
                          "summary": "Looking up order {order_id}"}}


def entry(seq: int, event) -> Recorded:
    return Recorded(seq=seq, kind=event.kind, turn_id="turn_1", actor="agent", created_at="", payload=event.payload())


def types(out) -> list[str]:
    return [e.type.value for e in out]


ROUND_WITH_CALL = ModelRound(run_id="run_1", round=1, text="Let me look.",
                             calls=[{"call_id": "call_1_1", "tool": "lookup_order", "arguments": {"order_id": "A-1"}}])


class TestRunEvents:
    def test_a_drafted_round_that_calls_a_tool_closes_its_message_before_the_call(self):
        run = events.RunEvents(run_id="run_1", tools=TOOLS)

        drafted = run.draft("Let") + run.draft("Let me")
        committed = run.feed(entry(3, ROUND_WITH_CALL))

        assert types(drafted) == ["STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT"]
        assert [e.delta for e in drafted if e.type.value == "TEXT_MESSAGE_CONTENT"] == ["Let", " me"]
        assert types(committed) == ["TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED", "TOOL_CALL_START",
                                    "TOOL_CALL_ARGS", "TOOL_CALL_END"]
        assert committed[0].delta == " look."
        assert committed[3].parent_message_id == "run_1.1"
        assert committed[3].metadata == {"waypoint": {"displayName": "Order lookup", "summary": "Looking up order A-1"}}

    def test_a_streamed_reply_is_not_sent_twice_and_an_unstreamed_one_is_sent_whole(self):
        streamed = events.RunEvents(run_id="run_1", tools=TOOLS)
        streamed.draft("Done.")
        streamed.feed(entry(3, ModelRound(run_id="run_1", round=1, text="Done.")))
        plain = events.RunEvents(run_id="run_1", tools=TOOLS)

        again = streamed.feed(entry(4, TurnComplete(run_id="run_1", message_id="msg_1", text="Done.")))
        whole = plain.feed(entry(4, TurnComplete(run_id="run_1", message_id="msg_1", text="Done.")))

        assert again == []
        assert types(whole) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]
        assert whole[0].message_id == "msg_1" and whole[1].delta == "Done."

    def test_a_step_started_before_the_stream_joined_is_never_finished_by_it(self):
        run = events.RunEvents(run_id="run_1", tools=TOOLS)
        before = [entry(3, ROUND_WITH_CALL),
                  entry(4, ActionStarted(run_id="run_1", call_id="call_1_1", tool="lookup_order", action="sleep",
                                         arguments={"order_id": "A-1"}, side_effecting=False, idempotency_key="k"))]
        run.seen(before)

        out = run.feed(entry(5, ActionFinished(run_id="run_1", call_id="call_1_1", tool="lookup_order", ok=True,
                                               output={"slept": 1})))

        assert types(out) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
        assert out[-1].content == '{"slept": 1}'
        assert run.draft("Next")[0].step_name == "Model round 2"

    def test_every_result_follows_its_call_however_late_the_stream_joined(self):
        run = events.RunEvents(run_id="run_1", tools=TOOLS)
        run.seen([entry(3, ROUND_WITH_CALL)])  # MESSAGES_SNAPSHOT has text messages only: the call was never shown

        out = run.feed(entry(5, ActionFinished(run_id="run_1", call_id="call_1_1", tool="lookup_order", ok=True,
                                               output={"slept": 1})))

        started = [e for e in out if e.type.value == "TOOL_CALL_START"]
        assert [e.tool_call_id for e in started] == ["call_1_1"] and started[0].tool_call_name == "lookup_order"
        assert types(out).index("TOOL_CALL_END") < types(out).index("TOOL_CALL_RESULT")

    def test_a_call_whose_result_came_before_the_stream_joined_is_not_announced_again(self):
        run = events.RunEvents(run_id="run_1", tools=TOOLS)
        run.seen([entry(3, ROUND_WITH_CALL), entry(4, ActionFinished(run_id="run_1", call_id="call_1_1", tool="lookup_order",
                                                                     ok=True, output={"slept": 1}))])

        out = run.feed(entry(5, TurnComplete(run_id="run_1", message_id="msg_1", text="Done.")))

        assert "TOOL_CALL_START" not in types(out)

    def test_an_action_is_a_step_named_by_its_summary(self):
        run = events.RunEvents(run_id="run_1", tools=TOOLS)

        started = run.feed(entry(4, ActionStarted(run_id="run_1", call_id="call_1_1", tool="lookup_order", action="sleep",
                                                  arguments={"order_id": "A-1"}, side_effecting=False, idempotency_key="k")))
        finished = run.feed(entry(5, ActionFinished(run_id="run_1", call_id="call_1_1", tool="lookup_order", ok=False,
                                                    error="boom")))

        assert started[0].step_name == "Looking up order A-1 (call_1_1)"
        assert types(finished) == ["STEP_FINISHED", "TOOL_CALL_RESULT"] and finished[1].content == '{"error": "boom"}'

    def test_other_runs_entries_say_nothing_and_close_ends_what_is_open(self):
        run = events.RunEvents(run_id="run_2", tools=TOOLS)
        run.draft("Half a sent")

        assert run.feed(entry(3, ROUND_WITH_CALL)) == []
        assert types(run.close()) == ["TEXT_MESSAGE_END", "STEP_FINISHED"]


def state(**fields):
    return {"conversation_id": "c", "run_id": "run_1", "run_status": "completed", "progress": [], "error": "",
            "pending_client_actions": [], **fields}


class TestRunEnded:
    def test_an_approval_is_an_interrupt_with_the_requests_words_and_a_response_schema(self):
        call = {"call_id": "call_1_2", "kind": "approval", "tool": "lookup_order", "arguments": {"order_id": "A-1"},
                "title": "Shall I look up order A-1?"}  # as the state words it for the customer

        ended = events.run_ended(thread_id="t", run_id="r", state=state(run_status="waiting", pending_client_actions=[call]),
                                 tools=TOOLS)

        [interrupt] = ended.outcome.interrupts
        assert (interrupt.id, interrupt.reason, interrupt.tool_call_id) == ("run_1:call_1_2", "approval", "call_1_2")
        assert interrupt.message == "Shall I look up order A-1?"
        assert interrupt.response_schema["properties"]["reviewed"]["properties"]["tool"] == {"const": "lookup_order"}
        assert interrupt.metadata is None

    def test_a_re_attempts_interrupt_names_the_earlier_attempt(self):
        earlier = {"turn_id": "turn_0", "call_id": "call_1_1", "attempted_at": "2026-12-01T10:00:00+00:00"}
        call = {"call_id": "call_1_2", "kind": "approval", "tool": "lookup_order", "arguments": {}, "reattempt_of": earlier,
                "title": "Shall I look up the order?"}

        ended = events.run_ended(thread_id="t", run_id="r", state=state(run_status="waiting", pending_client_actions=[call]),
                                 tools=TOOLS)

        assert ended.outcome.interrupts[0].metadata == {"waypoint": {"reattempt_of": earlier}}

    def test_a_run_waiting_on_a_client_tool_finishes_plainly(self):
        call = {"call_id": "call_1_1", "kind": "client_tool", "tool": "pick_date", "arguments": {}}

        ended = events.run_ended(thread_id="t", run_id="r", state=state(run_status="waiting", pending_client_actions=[call]),
                                 tools=TOOLS)

        assert ended.model_dump(by_alias=True, exclude_none=True) == {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}

    def test_a_failed_run_is_a_run_error_with_its_safe_message(self):
        ended = events.run_ended(thread_id="t", run_id="r", state=state(run_status="failed", error="The model failed."),
                                 tools=TOOLS)

        assert (ended.type.value, ended.code, ended.message) == ("RUN_ERROR", "run_failed", "The model failed.")

    def test_interrupt_ids_name_the_run_and_the_call(self):
        assert events.parse_interrupt_id(events.interrupt_id("run_1", "call_1_2")) == ("run_1", "call_1_2")
        assert events.parse_interrupt_id("nonsense") is None
