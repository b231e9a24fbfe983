"""Control in the record (PRODUCT.md "Human handoff"): who answers the customer, and the agent's silence."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from apps.agent import actions, answers, handoff, history, runner
from apps.agent.providers import ModelRequest, openai_messages
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.errors import (
    ControlConflict,
    ConversationIsCompleted,
    HandoffUnavailable,
    RunNotWaiting,
)
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.runs.models import WorkflowLog
from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

HANDOFF = {"enabled": True, "model_tool": True, "queue_timeout_seconds": 60}
RULES = [
    {"match": "person", "steps": [{"say": "Let me find someone.", "handoff": "the customer asked for a person"}]},
    *SUPPORT_CONFIG["model"]["rules"],
]


@pytest.fixture
def support(make_assistant):
    return make_assistant(handoff=HANDOFF, model={**SUPPORT_CONFIG["model"], "rules": RULES})


@pytest.fixture
def rounds(make_assistant):
    """Two rounds of a read-only tool, then a reply: a run of several steps that need control."""
    return make_assistant(handoff=HANDOFF, step_budget=8, model={"provider": "scripted", "rules": [
        {"match": "order", "steps": [
            {"call": "lookup_order", "arguments": {"round": 1}},
            {"call": "lookup_order", "arguments": {"round": 2}},
            {"say": "Done: {result}"},
        ]},
    ]}, tools=[{"name": "lookup_order", "kind": "server", "action": "echo"}])


def state(conversation_id):
    return conversation_state(queries.conversation_for(conversation_id), receipts=True)


def assert_record_holds(conversation_id):
    report = replay(conversation_id)
    assert report.ok, report.differences
    assert verify(conversation_id).ok


def kinds(conversation_id):
    return [r.kind for r in store.read(conversation_id)]


def refund_waiting(start, support):
    """A conversation whose run waits for the approval of issue_refund."""
    started = start("refund please", assistant=support)
    paused = state(started["conversation_id"])
    assert paused["run_status"] == "waiting"
    return started["conversation_id"], paused


class TestControlInTheRecord:
    def test_control_is_the_agents_by_default(self, start, support):
        cid = start("hello", assistant=support)["conversation_id"]

        control = state(cid)["control"]

        assert control["mode"] == "agent" and control["staff"] is None and control["requested_at"] is None
        assert control["since"]

    def test_asking_for_a_person_withdraws_the_pending_approval_and_hands_the_run_off(self, start, support, clock):
        cid, paused = refund_waiting(start, support)
        call_id = paused["pending_client_actions"][0]["call_id"]

        control = handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice",
                                          reason="I want a person", now=clock())

        after = state(cid)
        assert control["mode"] == "queued" and control["reason"] == "I want a person" and control["requested_at"]
        assert after["control"] == control
        assert after["run_status"] == "handed_off" and after["pending_client_actions"] == []
        withdrawn = [r for r in after["receipts"] if r["call_id"] == call_id]
        assert withdrawn and withdrawn[0]["status"] == "withdrawn"
        assert kinds(cid)[-2:] == ["turn_handed_off", "handoff_requested"]
        assert_record_holds(cid)

    def test_a_late_answer_to_a_withdrawn_request_is_refused(self, start, support, clock):
        cid, paused = refund_waiting(start, support)
        pending = paused["pending_client_actions"][0]
        handoff.request_handoff(conversation_id=cid, source="application", requested_by="api:shop", now=clock())
        head = state(cid)["seq"]

        with pytest.raises(RunNotWaiting):
            answers.accept_results(
                conversation_id=cid, run_id=paused["run_id"], persona="guest:alice", now=clock(),
                results=[{"call_id": pending["call_id"], "output": {"decision": "approve", "reviewed": {
                    "tool": pending["tool"], "arguments": pending["arguments"]}}}],
            )

        assert state(cid)["seq"] == head

    def test_asking_twice_changes_nothing(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        first = handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=clock())
        head = state(cid)["seq"]

        again = handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=clock())

        assert again == first and state(cid)["seq"] == head

    def test_an_assistant_without_handoff_refuses_and_a_completed_conversation_refuses_every_change(
        self, start, make_assistant, support, clock
    ):
        plain = start("hello")["conversation_id"]
        with pytest.raises(HandoffUnavailable):
            handoff.request_handoff(conversation_id=plain, source="customer", requested_by="guest:alice", now=clock())

        done = start("bye", assistant=support)["conversation_id"]
        assert state(done)["conversation_status"] == "completed"
        with pytest.raises(ConversationIsCompleted):
            handoff.request_handoff(conversation_id=done, source="customer", requested_by="guest:alice", now=clock())
        with pytest.raises(ConversationIsCompleted):
            handoff.take_control(conversation_id=done, staff="staff:dana", name="Dana", now=clock())


class TestExactlyOnePerson:
    def test_the_second_taker_gets_control_conflict_naming_the_holder(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())

        with pytest.raises(ControlConflict) as caught:
            handoff.take_control(conversation_id=cid, staff="staff:sam", name="Sam", now=clock())

        assert caught.value.details["holder"] == {"id": "staff:dana", "name": "Dana"}
        assert "Dana" in caught.value.message
        assert state(cid)["control"]["staff"] == {"id": "staff:dana", "name": "Dana"}

    def test_only_the_holder_replies_and_hands_back(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())

        with pytest.raises(ControlConflict):
            handoff.staff_message(conversation_id=cid, staff="staff:sam", text="hi", now=clock())
        with pytest.raises(ControlConflict):
            handoff.return_control(conversation_id=cid, staff="staff:sam", now=clock())
        message = handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Hi, Dana here.", now=clock())
        back = handoff.return_control(conversation_id=cid, staff="staff:dana", note="refund approved by phone", now=clock())

        assert message["author"] == {"kind": "staff", "id": "staff:dana", "name": "Dana"}
        assert back["mode"] == "agent" and back["staff"] is None
        after = state(cid)
        assert [m["author"]["kind"] for m in after["messages"]] == ["customer", "assistant", "staff"]
        assert [c["kind"] for c in after["control_changes"]] == ["control_taken", "control_returned"]
        assert after["control_changes"][-1]["text"] == "refund approved by phone"


class TestTheAgentFallsSilent:
    def test_a_customer_message_under_a_person_is_stored_and_starts_no_run(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
        runs = WorkflowLog.objects.filter(conversation_id=cid).count()

        out = actions.start_turn(conversation_id=cid, message="are you there?", persona="guest:alice", edge="link", now=clock())

        assert out["run_id"] is None and out["turn_id"]
        assert WorkflowLog.objects.filter(conversation_id=cid).count() == runs
        assert state(cid)["messages"][-1]["text"] == "are you there?"
        assert_record_holds(cid)

    def test_a_run_that_was_running_stops_at_its_next_step_without_a_model_round(self, start, support, clock):
        with override_settings(WAYPOINT_RUNNER="none"):  # batch one commits; nobody drives it yet
            started = start("refund please", assistant=support)
            cid = started["conversation_id"]
            handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
        assert state(cid)["run_status"] == "running"

        runner.drive(cid)

        after = state(cid)
        assert after["run_status"] == "handed_off"
        assert "model_round" not in kinds(cid) and "action_started" not in kinds(cid)
        assert_record_holds(cid)

    def test_a_person_who_takes_over_while_the_model_answers_gets_the_run_before_its_first_commit(
        self, start, support, clock, monkeypatch
    ):
        # The run read control as the agent's as it began; the take-over commits during its first
        # model round. That round's commit must find the head moved and stop, not go on that read.
        with override_settings(WAYPOINT_RUNNER="none"):
            cid = start("refund please", assistant=support)["conversation_id"]
        real = runner.steps.provider_for

        def taken_during_the_round(config):
            provider = real(config)
            answer = provider.complete

            def complete(request, on_draft=None):
                handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
                return answer(request, on_draft) if on_draft else answer(request)

            provider.complete = complete
            return provider

        monkeypatch.setattr(runner.steps, "provider_for", taken_during_the_round)

        runner.drive(cid)

        after = state(cid)
        assert after["run_status"] == "handed_off"
        assert "model_round" not in kinds(cid) and "action_started" not in kinds(cid)
        assert_record_holds(cid)

    def test_a_run_that_fails_after_a_take_over_is_handed_off_not_retried(self, start, support, clock, monkeypatch,
                                                                          settings):
        # An unexpected error is retried with a `turn_retried` entry: a step of the agent's, which
        # finds control taken under the row lock. The run stops then, in that drive.
        settings.WAYPOINT_RUN_RETRY_SECONDS = 0
        with override_settings(WAYPOINT_RUNNER="none"):
            cid = start("refund please", assistant=support)["conversation_id"]
        real = runner.steps.provider_for

        def taken_then_broken(config):
            provider = real(config)

            def complete(request, on_draft=None):
                handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
                raise RuntimeError("the model's client broke")

            provider.complete = complete
            return provider

        monkeypatch.setattr(runner.steps, "provider_for", taken_then_broken)

        runner.drive(cid)

        log = kinds(cid)
        assert state(cid)["run_status"] == "handed_off"
        assert "turn_retried" not in log and "model_round" not in log
        assert log.index("control_taken") < log.index("turn_handed_off")
        assert_record_holds(cid)

    def test_a_person_who_takes_over_between_two_steps_gets_the_run_at_its_next_commit(
        self, start, rounds, clock, monkeypatch
    ):
        # The take-over commits just after the run's first model round did. The run's next round
        # goes on its own head without reading control first; its commit must find the head moved,
        # read control under the row lock and stop there.
        with override_settings(WAYPOINT_RUNNER="none"):
            cid = start("where is my order", assistant=rounds)["conversation_id"]
        taken = []

        def take_over_once(boundary):
            if boundary == "after_model_round" and not taken:
                taken.append(handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock()))

        monkeypatch.setattr(runner.steps.faults, "reach", take_over_once)

        runner.drive(cid)

        log = kinds(cid)
        assert taken and state(cid)["run_status"] == "handed_off"
        assert log.count("model_round") == 1
        assert log.index("control_taken") > log.index("model_round")
        assert log[-1] == "turn_handed_off"
        assert_record_holds(cid)

    def test_a_run_on_its_own_heads_reads_control_only_as_it_begins(self, start, rounds):
        cid = start("hello", assistant=rounds)["conversation_id"]
        read = []

        def watch(execute, sql, params, many, context):
            if "control_mode" in sql:
                read.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(watch):
            actions.start_turn(conversation_id=cid, message="where is my order", persona="guest:alice", edge="api",
                               now=timezone.now())

        # batch one's row lock, and the run's opening read; none before each later round
        assert len(read) == 2
        assert state(cid)["messages"][-1]["text"] == 'Done: {"round": 2}'

    def test_continue_is_refused_while_a_person_holds_it(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())

        with pytest.raises(ControlConflict):
            actions.continue_conversation(conversation_id=cid, persona="guest:alice", edge="link", now=clock())


class TestTheModelAsksAndKnows:
    def test_the_scripted_handoff_step_asks_for_a_person(self, start, support):
        cid = start("can I talk to a person?", assistant=support)["conversation_id"]

        after = state(cid)

        assert after["control"]["mode"] == "queued"
        assert after["control"]["reason"] == "the customer asked for a person"
        assert after["run_status"] == "handed_off"
        assert_record_holds(cid)

    def test_the_words_said_with_the_handoff_are_the_turns_reply(self, start, support):
        cid = start("can I talk to a person?", assistant=support)["conversation_id"]

        after = state(cid)

        reply = after["messages"][-1]
        assert reply["text"] == "Let me find someone." and reply["author"]["kind"] == "assistant"
        # Said before the waiting line, as the customer read it.
        assert reply["seq"] < after["control_changes"][-1]["seq"]
        assert after["control_changes"][-1]["kind"] == "handoff_requested"
        assert after["message_count"] == 2
        assert_record_holds(cid)

    def test_the_reply_is_not_told_to_the_model_twice(self, start, support, clock):
        cid = start("can I talk to a person?", assistant=support)["conversation_id"]
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
        handoff.return_control(conversation_id=cid, staff="staff:dana", now=clock())

        earlier = history.build(store.read(cid))
        messages = openai_messages(ModelRequest(history=earlier.turns, message="thanks", rounds=[], tools=[]))

        said = [m for m in messages if m["role"] == "assistant" and "Let me find someone." in m["content"]]
        assert len(said) == 1 and said[0]["tool_calls"][0]["function"]["name"] == "handoff_to_human"

    def test_the_next_model_request_carries_the_human_part(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=clock())
        actions.start_turn(conversation_id=cid, message="my parcel is lost", persona="guest:alice", edge="link", now=clock())
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
        handoff.staff_message(conversation_id=cid, staff="staff:dana", text="I have sent a new one today.", now=clock())
        handoff.return_control(conversation_id=cid, staff="staff:dana", note="replacement shipped", now=clock())

        earlier = history.build(store.read(cid))
        messages = openai_messages(ModelRequest(history=earlier.turns, message="thanks", rounds=[], tools=[]))
        text = "\n".join(m["content"] for m in messages)

        assert {"role": "user", "content": "my parcel is lost"} in messages
        assert "Dana (a person, not you) replied to the customer: I have sent a new one today." in text
        assert "replacement shipped" in text
        actions.start_turn(conversation_id=cid, message="thanks", persona="guest:alice", edge="link", now=clock())
        assert state(cid)["messages"][-1]["author"]["kind"] == "assistant"
        assert_record_holds(cid)


class TestTheQueueTimesOut:
    def test_a_request_nobody_takes_returns_to_the_agent_with_the_unavailable_message(self, start, support, clock):
        cid = start("hello", assistant=support)["conversation_id"]
        asked = clock()
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=asked)

        assert handoff.time_out_handoffs(now=asked + timedelta(seconds=59)) == 0
        assert handoff.time_out_handoffs(now=asked + timedelta(seconds=61)) == 1

        after = state(cid)
        assert after["control"]["mode"] == "agent"
        assert after["control_changes"][-1]["kind"] == "handoff_timed_out"
        assert after["control_changes"][-1]["text"] == "No one is free right now; I'll keep helping."
        assert_record_holds(cid)


class TestTheModelTool:
    """`handoff_to_human` on an OpenAI-compatible model, in the Chat Completions wire format."""

    def _assistant(self, make_assistant, settings, vendor, **handoff_settings):
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
        return make_assistant(model={"provider": "openai", "model": "gpt-4o-mini", "base_url": vendor.base_url},
                              handoff=handoff_settings)

    def test_offered_only_with_enabled_and_model_tool(self, start, make_assistant, settings):
        from tests.fakes import vendor as wire

        offered = {}
        for name, config in {"both": {"enabled": True, "model_tool": True}, "enabled only": {"enabled": True},
                             "neither": {}}.items():
            with wire.Vendor() as vendor:
                vendor.queue(wire.completion(content="Hello."))
                start("hi", assistant=self._assistant(make_assistant, settings, vendor, **config))
            offered[name] = "handoff_to_human" in {t["function"]["name"] for t in vendor.requests[0]["tools"]}

        assert offered == {"both": True, "enabled only": False, "neither": False}

    def test_a_call_hands_off_and_no_further_round_runs(self, start, make_assistant, settings):
        from tests.fakes import vendor as wire

        with wire.Vendor() as vendor:
            vendor.queue(wire.completion(tool_calls=[wire.tool_call("call_h", "handoff_to_human", '{"reason": "billing dispute"}')]),
                         wire.completion(content="this round must never be asked for"))
            assistant = self._assistant(make_assistant, settings, vendor, enabled=True, model_tool=True)
            cid = start("I dispute this charge", assistant=assistant)["conversation_id"]

        after = state(cid)
        assert len(vendor.requests) == 1
        assert after["control"]["mode"] == "queued" and after["control"]["reason"] == "billing dispute"
        assert after["run_status"] == "handed_off"
        assert_record_holds(cid)

    def test_the_models_text_beside_the_call_is_the_reply(self, start, make_assistant, settings):
        from tests.fakes import vendor as wire

        with wire.Vendor() as vendor:
            vendor.queue(wire.completion(content="I'm asking a colleague to join.",
                                         tool_calls=[wire.tool_call("call_h", "handoff_to_human", '{"reason": "billing"}')]))
            assistant = self._assistant(make_assistant, settings, vendor, enabled=True, model_tool=True)
            cid = start("I dispute this charge", assistant=assistant)["conversation_id"]

        after = state(cid)
        assert after["run_status"] == "handed_off"
        assert [(m["role"], m["text"]) for m in after["messages"]] == [
            ("user", "I dispute this charge"), ("assistant", "I'm asking a colleague to join.")]
        assert_record_holds(cid)
