"""
Approvals through the API (PRODUCT.md "Approvals: expiry, edits, approvers"): the state names the
approver, the expiry and the editable fields; a staff answer comes with the API key and a `staff:`
persona; the contract's errors (403 approver_required, 409 approval_expired, 422 for bad edits).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agent import runner
from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def refund_tool(**approval):
    return {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
            "approval": approval}


def desk(api: Api, **approval) -> str:
    return api.create_assistant(
        model={"provider": "scripted", "rules": [{"match": "refund", "steps": [
            {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
            {"say": "Too late.", "when": "expired"}, {"say": "Refund: {result}"}]}], "fallback": [{"say": "ok"}]},
        tools=[refund_tool(**approval)])


def answer(api: Api, cid: str, persona: str | None = None, **extra):
    state = api.state(cid)
    call = state["pending_client_actions"][0] if state["pending_client_actions"] else state["answered_client_actions"][0]
    body = {"results": [{"call_id": call["call_id"], "output": {
        "decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}, **extra}}]}
    if persona:
        body["persona"] = persona
    return api.post(f"/v1/agent/conversations/{cid}/runs/{state['run_id']}/results", body)


class TestTheState:
    def test_a_pending_approval_says_who_answers_until_when_and_what_may_change(self, api: Api):
        cid = api.start("refund please", assistant=desk(api, approver="staff", expires_in_seconds=600,
                                                        editable=["amount"]))["conversation_id"]

        [call] = api.state(cid)["pending_client_actions"]

        assert call["approver"] == "staff" and call["editable"] == ["amount"]
        assert timezone.now() + timedelta(seconds=590) < timezone.datetime.fromisoformat(call["expires_at"])


class TestStaffApprovals:
    def test_the_customer_token_is_403_approver_required(self, api: Api):
        started = api.start("refund please", assistant=desk(api, approver="staff"))

        refused = answer(api.as_(started["token"]), started["conversation_id"])

        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "approver_required"
        assert api.state(started["conversation_id"])["run_status"] == "waiting"

    def test_the_api_key_answers_for_a_staff_persona(self, api: Api):
        cid = api.start("refund please", assistant=desk(api, approver="staff"))["conversation_id"]

        accepted = answer(api, cid, persona="staff:dana")

        assert accepted.status_code == 200, accepted.content
        state = accepted.json()["state"]
        assert state["answered_client_actions"][0]["answered_by"] == "staff:dana"
        assert state["messages"][-1]["text"] == 'Refund: {"amount": 20, "order_id": "A-1"}'


    def test_a_directive_raises_a_turn_to_the_team(self, api: Api):
        started = api.start("refund please", assistant=desk(api), directive={"required_approver": "staff"})
        cid = started["conversation_id"]
        assert api.state(cid)["pending_client_actions"][0]["approver"] == "staff"

        assert answer(api.as_(started["token"]), cid).json()["error"]["code"] == "approver_required"
        assert answer(api, cid, persona="staff:dana").status_code == 200


class TestExpiryAndEdits:
    def test_a_late_answer_is_409_approval_expired(self, api: Api):
        cid = api.start("refund please", assistant=desk(api, expires_in_seconds=60))["conversation_id"]
        runner.expire_requests(now=timezone.now() + timedelta(seconds=61))

        late = answer(api, cid)

        assert late.status_code == 409 and late.json()["error"]["code"] == "approval_expired"
        assert api.state(cid)["messages"][-1]["text"] == "Too late."

    def test_approve_with_changes(self, api: Api):
        cid = api.start("refund please", assistant=desk(api, editable=["amount"]))["conversation_id"]

        accepted = answer(api, cid, edited_arguments={"amount": 15})

        assert accepted.status_code == 200
        assert accepted.json()["state"]["messages"][-1]["text"] == (
            'Refund: {"note": "approved with changes: amount 15", "result": {"amount": 15, "order_id": "A-1"}}')

    @pytest.mark.parametrize("edits", [{"order_id": "B-2"}, {"amount": "lots"}, {}])
    def test_a_bad_edit_is_422_in_the_error_shape(self, api: Api, edits):
        cid = api.start("refund please", assistant=desk(api, editable=["amount"]))["conversation_id"]

        refused = answer(api, cid, edited_arguments=edits)

        assert refused.status_code == 422
        assert refused.json()["error"]["code"] == "invalid_request" and refused.json()["error"]["message"]
        assert api.state(cid)["run_status"] == "waiting"
