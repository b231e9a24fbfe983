"""
Approvals that expire, approvals with changes and approvals the team gives (PRODUCT.md "Approvals:
expiry, edits, approvers"), on the real database: the clock's resolution, the answer's checks, the
action that runs and what the model is told.
"""

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.actions.models import ActionLog
from apps.agent import answers, runner
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.errors import ActionResultConflict, ApprovalExpired, ApproverRequired, BadInput
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.runs.models import ToolUsageLog
from tests.fakes.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

REFUND_STEPS = [
    {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
    {"say": "Too late: {result}", "when": "expired"},
    {"say": "Not refunded.", "when": "denied"},
    {"say": "Refund: {result}"},
]


def refund_tool(**approval):
    return {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
            "summary": "Refund {amount} for order {order_id}",
            "parameters": {"type": "object", "required": ["order_id", "amount"],
                           "properties": {"order_id": {"type": "string"}, "amount": {"type": "number", "minimum": 1},
                                          "note": {"type": "string", "maxLength": 40}, "tags": {"type": "array"}}},
            **({"approval": approval} if approval else {})}


def assistant_with(make_assistant, tool, steps=REFUND_STEPS, **config):
    return make_assistant(model={"provider": "scripted", "rules": [{"match": "refund", "steps": steps}],
                                 "fallback": [{"say": "You said: {message}"}]},
                          tools=[tool], **config)


def state(cid):
    return conversation_state(queries.conversation_for(cid))


def pending(cid):
    [call] = state(cid)["pending_client_actions"]
    return call


def approve(cid, call, persona="guest:alice", now=None, **extra):
    output = {"decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}, **extra}
    return answers.accept_results(conversation_id=cid, run_id=state(cid)["run_id"], results=[{"call_id": call["call_id"], "output": output}],
                                  persona=persona, now=now or timezone.now())


def kinds(cid):
    return [e.kind for e in store.read(cid)]


def reply(cid):
    return state(cid)["messages"][-1]["text"]


class TestExpiry:
    def test_an_approval_nobody_answers_expires_once_and_the_model_goes_on(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(expires_in_seconds=60)))
        cid = started["conversation_id"]
        call = pending(cid)
        assert call["approver"] == "customer" and call["expires_at"] is not None

        assert runner.expire_requests(now=timezone.now() + timedelta(seconds=30)) == 0  # not yet
        assert runner.expire_requests(now=timezone.now() + timedelta(seconds=61)) == 1
        assert runner.expire_requests(now=timezone.now() + timedelta(seconds=120)) == 0  # resolved once

        assert kinds(cid).count("approval_response") == 1
        [expiry] = [e for e in store.read(cid) if e.kind == "approval_response"]
        assert expiry.payload["decision"] == "expired" and expiry.actor == "system"
        assert reply(cid) == 'Too late: {"expired": true}'
        assert not ActionLog.objects.filter(conversation_id=cid, tool="issue_refund").exists()
        [answered] = state(cid)["answered_client_actions"]
        assert answered["status"] == "expired" and answered["output"]["decision"] == "expired"
        assert ToolUsageLog.objects.get(call_id=call["call_id"]).status == "expired"
        assert verify(cid).ok and replay(cid).ok

    def test_a_late_answer_is_409_and_changes_nothing(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(expires_in_seconds=60)))
        cid = started["conversation_id"]
        call = pending(cid)
        runner.expire_requests(now=timezone.now() + timedelta(seconds=61))
        head = len(store.read(cid))

        with pytest.raises(ApprovalExpired) as raised:
            approve(cid, call)

        assert raised.value.status == 409 and raised.value.code == "approval_expired"
        assert len(store.read(cid)) == head

    def test_an_answer_past_its_time_before_the_clock_came_by_expires_it_then(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(expires_in_seconds=60)))
        cid = started["conversation_id"]
        call = pending(cid)

        with pytest.raises(ApprovalExpired):
            approve(cid, call, now=timezone.now() + timedelta(seconds=61))

        # The expiry was recorded (and the run went on) although the answer was refused.
        assert [e.payload["decision"] for e in store.read(cid) if e.kind == "approval_response"] == ["expired"]
        assert reply(cid) == 'Too late: {"expired": true}'
        assert runner.expire_requests(now=timezone.now() + timedelta(seconds=120)) == 0

    def test_an_answer_in_time_is_never_expired_afterwards(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(expires_in_seconds=60)))
        cid = started["conversation_id"]
        approve(cid, pending(cid))

        assert runner.expire_requests(now=timezone.now() + timedelta(days=1)) == 0
        assert reply(cid) == 'Refund: {"amount": 20, "order_id": "A-1"}'

    def test_without_expiry_an_approval_waits_as_before(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool()))
        cid = started["conversation_id"]
        call = pending(cid)

        assert runner.expire_requests(now=timezone.now() + timedelta(days=365)) == 0
        assert call["expires_at"] is None and state(cid)["run_status"] == "waiting"
        request = next(e for e in store.read(cid) if e.kind == "approval_request")
        assert set(request.payload) == {"run_id", "call_id", "tool", "arguments", "required_approver"}

    def test_an_expiry_racing_an_answer_resolves_once(self, start, make_assistant):
        for _ in range(4):
            started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(expires_in_seconds=60)))
            cid = started["conversation_id"]
            won = race_clock_and_answer(cid, pending(cid))

            decisions = [e.payload["decision"] for e in store.read(cid) if e.kind == "approval_response"]
            assert len(decisions) == 1, decisions
            assert (decisions == ["approve"]) == (won["person"] == 1 and won["clock"] == 0)
            assert (decisions == ["expired"]) == (won["person"] == 0 and won["clock"] == 1)


def race_clock_and_answer(cid, call) -> dict[str, int]:
    """The clock (a minute past the expiry) and a person's Approve at one instant: what each says it did."""
    barrier, outcomes = threading.Barrier(2), {}

    def clock_comes():
        barrier.wait()
        try:
            outcomes["clock"] = runner.expire_requests(now=timezone.now() + timedelta(seconds=61))
        finally:
            connection.close()

    def person_answers():
        barrier.wait()
        try:
            approve(cid, call)
            outcomes["person"] = 1
        except ApprovalExpired:
            outcomes["person"] = 0
        finally:
            connection.close()

    threads = [threading.Thread(target=clock_comes), threading.Thread(target=person_answers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcomes


class TestApproveWithChanges:
    def test_the_call_runs_with_the_edited_arguments_and_the_receiver_gets_them(self, start, make_assistant, settings):
        settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
        with Receiver() as receiver:
            tool = {**refund_tool(editable=["amount", "note"]), "action": "webhook", "url": receiver.url}
            started = start("refund please", assistant=assistant_with(make_assistant, tool))
            cid = started["conversation_id"]
            call = pending(cid)
            assert call["editable"] == ["amount", "note"]

            approve(cid, call, edited_arguments={"amount": 15})

        [delivery] = receiver.deliveries
        assert json.loads(delivery["body"])["arguments"] == {"order_id": "A-1", "amount": 15}
        response = next(e for e in store.read(cid) if e.kind == "approval_response")
        assert response.payload["reviewed"]["arguments"] == {"order_id": "A-1", "amount": 20}
        assert response.payload["edited_arguments"] == {"amount": 15}
        assert response.payload["answered_by"] == "guest:alice"
        started_entry = next(e for e in store.read(cid) if e.kind == "action_started")
        assert started_entry.payload["arguments"] == {"order_id": "A-1", "amount": 15}
        # The model is told in words what the approver changed, beside the result.
        assert reply(cid) == 'Refund: {"note": "approved with changes: amount 15", "result": {"refund_id": "R-1"}}'
        assert verify(cid).ok and replay(cid).ok

    def test_an_identical_retry_is_idempotent_and_a_different_edit_conflicts(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(editable=["amount"])))
        cid = started["conversation_id"]
        call = pending(cid)
        approve(cid, call, edited_arguments={"amount": 15})

        again = approve(cid, call, edited_arguments={"amount": 15})
        assert again.already == [call["call_id"]]
        with pytest.raises(ActionResultConflict):
            approve(cid, call, edited_arguments={"amount": 12})
        with pytest.raises(ActionResultConflict):
            approve(cid, call)
        assert ActionLog.objects.filter(conversation_id=cid, tool="issue_refund").count() == 1

    @pytest.mark.parametrize(("output", "words"), [
        ({"edited_arguments": {"order_id": "B-2"}}, "order_id cannot be edited (editable: amount, note)"),
        ({"edited_arguments": {"amount": "fifteen"}}, "amount must be a number"),
        ({"edited_arguments": {"amount": 0}}, "amount: 0 is less than the minimum of 1"),
        ({"edited_arguments": {"note": "x" * 41}}, "note: "),
        ({"edited_arguments": {}}, "edited_arguments must be an object of the fields you changed"),
        ({"edited_arguments": {"amount": float("nan")}}, "amount must be a number"),
        ({"edited_arguments": {"amount": float("inf")}}, "amount must be a number"),
        ({"edited_arguments": {"amount": 2**60}}, "amount is too large"),
        ({"edited_arguments": [15]}, "edited_arguments must be an object of the fields you changed"),
        ({"decision": "deny", "edited_arguments": {"amount": 15}}, "edited_arguments go with approve"),
    ])
    def test_bad_edits_are_422_and_record_nothing(self, start, make_assistant, output, words):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(editable=["amount", "note"])))
        cid = started["conversation_id"]
        call = pending(cid)
        head = len(store.read(cid))

        with pytest.raises(BadInput) as raised:
            approve(cid, call, **output)

        assert raised.value.status == 422 and words in raised.value.message
        assert len(store.read(cid)) == head and state(cid)["run_status"] == "waiting"

    def test_a_rule_across_fields_holds_for_the_changed_call(self, start, make_assistant):
        tool = refund_tool(editable=["amount", "note"])
        # A refund of 50 or more needs a note: raising the amount alone breaks the tool's schema.
        tool["parameters"] |= {"if": {"properties": {"amount": {"minimum": 50}}}, "then": {"required": ["note"]}}
        started = start("refund please", assistant=assistant_with(make_assistant, tool))
        cid = started["conversation_id"]

        with pytest.raises(BadInput, match="the changed call: 'note' is a required property"):
            approve(cid, pending(cid), edited_arguments={"amount": 60})
        approve(cid, pending(cid), edited_arguments={"amount": 60, "note": "goodwill"})
        assert ActionLog.objects.get(conversation_id=cid, tool="issue_refund").arguments == {
            "order_id": "A-1", "amount": 60, "note": "goodwill"}

    def test_a_tool_without_editable_fields_takes_no_edits(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool()))
        cid = started["conversation_id"]

        with pytest.raises(BadInput, match="amount cannot be edited"):
            approve(cid, pending(cid), edited_arguments={"amount": 15})


class TestApprovers:
    def test_a_staff_approval_refuses_the_customer_and_takes_staff(self, start, make_assistant):
        started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(approver="staff")))
        cid = started["conversation_id"]
        call = pending(cid)
        assert call["approver"] == "staff"

        with pytest.raises(ApproverRequired) as raised:
            approve(cid, call)
        assert raised.value.status == 403 and raised.value.code == "approver_required"
        assert state(cid)["run_status"] == "waiting"

        approve(cid, call, persona="staff:dana")
        assert reply(cid) == 'Refund: {"amount": 20, "order_id": "A-1"}'
        assert state(cid)["answered_client_actions"][0]["answered_by"] == "staff:dana"

    def test_any_takes_either(self, start, make_assistant):
        for persona in ("guest:alice", "staff:dana"):
            started = start("refund please", assistant=assistant_with(make_assistant, refund_tool(approver="any")))
            cid = started["conversation_id"]
            approve(cid, pending(cid), persona=persona)
            assert reply(cid).startswith("Refund:")

    def test_a_directive_raises_the_approver_to_staff_and_never_lowers_it(self, start, make_assistant):
        raised = start("refund please", assistant=assistant_with(make_assistant, refund_tool()),
                       directive={"required_approver": "staff"})
        assert pending(raised["conversation_id"])["approver"] == "staff"
        with pytest.raises(ApproverRequired):
            approve(raised["conversation_id"], pending(raised["conversation_id"]))

        approve(raised["conversation_id"], pending(raised["conversation_id"]), persona="staff:dana")
        assert reply(raised["conversation_id"]).startswith("Refund:")

        kept = start("refund please", assistant=assistant_with(make_assistant, refund_tool(approver="staff")),
                     directive={"required_approver": "guest:alice"})
        assert pending(kept["conversation_id"])["approver"] == "staff"
        # The team's approval stays answerable: a persona outside the team would leave nobody who may.
        approve(kept["conversation_id"], pending(kept["conversation_id"]), persona="staff:sam")
        assert reply(kept["conversation_id"]).startswith("Refund:")

    def test_a_named_staff_persona_narrows_the_team_to_them(self, start, make_assistant):
        from apps.conversations.errors import Forbidden

        cid = start("refund please", assistant=assistant_with(make_assistant, refund_tool(approver="staff")),
                    directive={"required_approver": "staff:dana"})["conversation_id"]

        with pytest.raises(Forbidden):
            approve(cid, pending(cid), persona="staff:sam")
        approve(cid, pending(cid), persona="staff:dana")


class TestConfiguration:
    @pytest.mark.parametrize(("approval", "words"), [
        ({"expires_in_seconds": 0}, "approval.expires_in_seconds: a whole number of seconds from 1"),
        ({"expires_in_seconds": "1h"}, "approval.expires_in_seconds"),
        ({"approver": "manager"}, "approval.approver: one of customer, staff, any"),
        ({"editable": ["total"]}, "approval.editable: total is not among the tool's parameters"),
        ({"editable": "amount"}, "approval.editable: a list of the tool's parameter names"),
        ({"timeout": 5}, "approval: unknown keys ['timeout']"),
        ({"editable": ["tags"]}, "approval.editable: tags cannot be edited: only text and number parameters can"),
    ])
    def test_a_bad_approval_block_is_refused_in_words(self, make_assistant, approval, words):
        from apps.conversations.errors import InvalidAssistantConfig

        with pytest.raises(InvalidAssistantConfig) as raised:
            assistant_with(make_assistant, refund_tool(**approval))
        assert any(words in p for p in raised.value.details["problems"]), raised.value.details["problems"]

    def test_only_a_tool_that_needs_approval_has_one(self, make_assistant):
        from apps.conversations.errors import InvalidAssistantConfig

        with pytest.raises(InvalidAssistantConfig, match="only a tool with requires_approval true"):
            assistant_with(make_assistant, {**refund_tool(approver="staff"), "requires_approval": False})
