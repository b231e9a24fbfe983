"""
The customer's approval cards for PRODUCT.md "Approvals: expiry, edits, approvers": Edit's fields,
Approve with changes from the form, the team's card, and a late answer told in words.
"""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agent import runner
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import store

pytestmark = pytest.mark.django_db


def state_of(started: dict) -> dict:
    return conversation_state(queries.conversation_for(started["conversation_id"]))


def desk(make_assistant, **approval):
    tool = {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
            "summary": "Refund ${amount} for order {order_id}",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                            "amount": {"type": "number", "title": "Amount"}}},
            "approval": approval}
    return make_assistant(model={"provider": "scripted", "rules": [{"match": "refund", "steps": [
        {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
        {"say": "Too late.", "when": "expired"}, {"say": "Done."}]}]}, tools=[tool])


def approving(state: dict, decision: str, **fields) -> dict:
    call = state["pending_client_actions"][0]
    return {"decision": decision, "reviewed_tool": call["tool"], "reviewed_arguments": json.dumps(call["arguments"]), **fields}


class TestEdit:
    def test_the_card_has_edit_with_a_field_per_editable_argument(self, page, started, make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, editable=["amount"], expires_in_seconds=600))

        html = page(conversation).content.decode()

        assert ">Edit</button>" in html and ">Approve with changes</button>" in html
        assert 'type="number"' in html and 'value="20"' in html and "Asked for: 20" in html
        assert "Answer by" in html

    def test_approve_with_changes_from_the_form_then_the_receipt_says_what_changed(self, page, started, answer, settle,
                                                                                     make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, editable=["amount"]))
        paused = state_of(conversation)

        with settle():
            answer(conversation, paused, **approving(paused, "approve_with_changes", **{"field.amount": "15"}))

        [response] = [e for e in store.read(conversation["conversation_id"]) if e.kind == "approval_response"]
        assert response.payload["edited_arguments"] == {"amount": 15}
        html = page(conversation).content.decode()
        assert "Approved with changes: amount 20 → 15" in html and "Refund $15 for order A-1" in html

    def test_approve_with_changes_and_nothing_changed_is_a_plain_approval(self, started, answer, settle, make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, editable=["amount"]))
        paused = state_of(conversation)

        with settle():
            answer(conversation, paused, **approving(paused, "approve_with_changes", **{"field.amount": "20"}))

        [response] = [e for e in store.read(conversation["conversation_id"]) if e.kind == "approval_response"]
        assert response.payload["decision"] == "approve" and "edited_arguments" not in response.payload

    def test_a_value_of_the_wrong_type_is_refused_in_words(self, started, answer, make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, editable=["amount"]))
        paused = state_of(conversation)

        response = answer(conversation, paused, htmx=True, **approving(paused, "approve_with_changes", **{"field.amount": "lots"}))

        assert response.status_code == 422 and "Amount must be a number" in response.content.decode()


class TestTheTeamsApproval:
    def test_the_customer_sees_it_waits_for_the_team_without_buttons(self, page, started, make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, approver="staff"))

        html = page(conversation).content.decode()

        assert "Waiting for approval from the team" in html
        assert ">Approve</button>" not in html and ">Deny</button>" not in html

    def test_a_post_from_the_customer_is_refused_in_words(self, started, answer, make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, approver="staff"))
        paused = state_of(conversation)

        response = answer(conversation, paused, htmx=True, **approving(paused, "approve"))

        assert response.status_code == 403 and "a member of staff answers it" in response.content.decode()


class TestExpired:
    def test_a_late_answer_is_told_in_words_and_the_receipt_reads_expired(self, page, started, answer, settle, make_assistant):
        conversation = started("refund please", assistant=desk(make_assistant, expires_in_seconds=60))
        paused = state_of(conversation)
        with settle():
            runner.expire_requests(now=timezone.now() + timedelta(seconds=61))

        response = answer(conversation, paused, htmx=True, **approving(paused, "approve"))

        assert response.status_code == 409 and "This approval expired before it was answered" in response.content.decode()
        html = page(conversation).content.decode()
        assert 'class="receipt expired' in html and "Expired" in html and "Too late." in html
