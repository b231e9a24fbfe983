"""
The team's approvals in the panel: the Approvals queue and its count, a card in the inspector, an
answer (approve, deny, approve with changes) under the staff member's name, the losers of a race
told in words, and the signed link of the `approval.requested` webhook.
"""

import json
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.conversations import tokens
from apps.ledger import store
from apps.webhooks import endpoints
from apps.webhooks.models import WebhookDelivery
from tests.staff.conftest import HTMX, logged_in_staff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def refund_desk(make_assistant, **approval):
    tool = {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
            "summary": "Refund {amount} for order {order_id}",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
            "approval": {"approver": "staff", **approval}}
    return make_assistant(model={"provider": "scripted", "rules": [{"match": "refund", "steps": [
        {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
        {"say": "Too late.", "when": "expired"}, {"say": "Not refunded.", "when": "denied"}, {"say": "Refund: {result}"}]}],
        "fallback": [{"say": "ok"}]}, tools=[tool])


def pending(cid):
    from apps.runs.models import ToolUsageLog

    return ToolUsageLog.objects.get(conversation_id=cid, status="pending")


def post_answer(client, cid, usage, decision, **fields):
    return client.post(f"/staff/conversations/{cid}/approvals/{usage.call_id}",
                       {"run_id": usage.run_id, "reviewed_arguments": json.dumps(usage.arguments, sort_keys=True),
                        "decision": decision, **fields}, headers=HTMX)


def responses(cid):
    return [e for e in store.read(cid) if e.kind == "approval_response"]


class TestTheQueue:
    def test_lists_team_approvals_oldest_first_with_a_count(self, start, make_assistant, dana):
        first = start("refund one", assistant=refund_desk(make_assistant))["conversation_id"]
        second = start("refund two", assistant=refund_desk(make_assistant, expires_in_seconds=600))["conversation_id"]
        start("refund three")  # the support assistant's approval is the customer's: not listed

        page = dana.get("/staff/approvals/").content.decode()

        one, two = pending(first), pending(second)
        assert page.index(f"approval-{one.run_id}-{one.call_id}") < page.index(f"approval-{two.run_id}-{two.call_id}")
        assert page.count('class="panel approval-card"') == 2
        assert "Refund 20 for order A-1" in page and "expires in 9 min" in page
        assert 'id="approvals-count" class="count" data-count="2"' in page
        live = dana.get("/staff/approvals/?live=1").content.decode()
        assert 'hx-swap-oob="true"' in live and live.count('class="panel approval-card"') == 2

    def test_the_inspector_shows_the_card(self, start, make_assistant, dana):
        cid = start("refund please", assistant=refund_desk(make_assistant))["conversation_id"]

        page = dana.get(f"/staff/conversations/{cid}/").content.decode()

        usage = pending(cid)
        assert f'id="approval-{usage.run_id}-{usage.call_id}"' in page and ">Approve</button>" in page


class TestAnswering:
    def test_approve_is_recorded_under_the_staff_member(self, start, make_assistant, dana):
        cid = start("refund please", assistant=refund_desk(make_assistant))["conversation_id"]

        response = post_answer(dana, cid, pending(cid), "approve")

        assert response.status_code == 200
        [answer] = responses(cid)
        assert answer.payload["decision"] == "approve" and answer.payload["answered_by"] == "staff:dana"
        assert "staff-approvals" in response.content.decode()

    def test_approve_with_changes_from_the_queue(self, start, make_assistant, dana):
        cid = start("refund please", assistant=refund_desk(make_assistant, editable=["amount"]))["conversation_id"]

        response = post_answer(dana, cid, pending(cid), "approve_with_changes", **{"field.amount": "15", "from": "queue"})

        assert response.status_code == 200
        [answer] = responses(cid)
        assert answer.payload["edited_arguments"] == {"amount": 15}
        action = next(e for e in store.read(cid) if e.kind == "action_started")
        assert action.payload["arguments"] == {"order_id": "A-1", "amount": 15}
        assert "No approval is waiting for the team." in response.content.decode()

    def test_a_bad_edit_is_said_in_words_and_records_nothing(self, start, make_assistant, dana):
        cid = start("refund please", assistant=refund_desk(make_assistant, editable=["amount"]))["conversation_id"]

        response = post_answer(dana, cid, pending(cid), "approve_with_changes", **{"field.amount": "fifteen", "from": "queue"})

        assert response.status_code == 422
        assert "amount must be a number" in response.content.decode()
        assert responses(cid) == []

    def test_an_expired_approval_is_refused_in_words(self, start, make_assistant, dana):
        from apps.agent import runner

        cid = start("refund please", assistant=refund_desk(make_assistant, expires_in_seconds=60))["conversation_id"]
        usage = pending(cid)
        runner.expire_requests(now=timezone.now() + timedelta(seconds=61))

        response = post_answer(dana, cid, usage, "approve")

        assert response.status_code == 409
        assert "This approval expired before your answer" in response.content.decode()

    def test_two_staff_and_the_customer_at_once_one_answer_counts(self, start, make_assistant):
        from apps.agent import answers
        from apps.conversations.errors import WaypointError

        dana, sam = logged_in_staff("dana", "Dana"), logged_in_staff("sam", "Sam")
        cid = start("refund please", assistant=refund_desk(make_assistant, approver="any"))["conversation_id"]
        usage = pending(cid)
        barrier, codes = threading.Barrier(3), {}

        def staff(name, client, decision):
            barrier.wait()
            try:
                codes[name] = post_answer(client, cid, usage, decision)
            finally:
                connection.close()

        def customer():
            barrier.wait()
            try:
                answers.accept_results(conversation_id=cid, run_id=usage.run_id, persona="guest:alice", now=timezone.now(), results=[
                    {"call_id": usage.call_id, "output": {"decision": "deny",
                                                          "reviewed": {"tool": usage.tool, "arguments": usage.arguments}}}])
                codes["customer"] = 200
            except WaypointError as exc:
                codes["customer"] = exc.status
            finally:
                connection.close()

        threads = [threading.Thread(target=staff, args=("dana", dana, "approve")),
                   threading.Thread(target=staff, args=("sam", sam, "deny")), threading.Thread(target=customer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        [answer] = responses(cid)
        winner = answer.payload["decision"]
        decided = {"dana": "approve", "sam": "deny", "customer": "deny"}
        statuses = {name: (c if isinstance(c, int) else c.status_code) for name, c in codes.items()}
        # The first answer counts; the same answer again is no conflict; a different one is told who won.
        assert statuses == {name: 200 if decision == winner else 409 for name, decision in decided.items()}
        for name in ("dana", "sam"):
            if statuses[name] == 409:
                assert "Someone else already answered" in codes[name].content.decode()


class TestTheApproveLink:
    def test_the_webhook_carries_the_approver_and_a_signed_link_that_opens_the_card(self, start, make_assistant, dana, settings):
        settings.WAYPOINT_PUBLIC_URL, settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = "https://support.example", True
        endpoints.create(url="http://127.0.0.1:9/hooks", events=["approval.requested"])
        cid = start("refund please", assistant=refund_desk(make_assistant, expires_in_seconds=600))["conversation_id"]

        [delivery] = WebhookDelivery.objects.filter(type="approval.requested")
        data = json.loads(delivery.data)
        assert data["approver"] == "staff" and data["approve_url"].startswith("https://support.example/staff/approve/")

        path = data["approve_url"].removeprefix("https://support.example")
        opened = dana.get(path)
        usage = pending(cid)
        assert opened.status_code == 302 and opened["Location"] == f"/staff/conversations/{cid}/#approval-{usage.run_id}-{usage.call_id}"

    def test_a_tampered_or_expired_link_gets_a_page_for_people(self, start, make_assistant, dana):
        cid = start("refund please", assistant=refund_desk(make_assistant))["conversation_id"]
        usage = pending(cid)
        old = tokens.approve_link(conversation_id=cid, run_id=usage.run_id, call_id=usage.call_id,
                                  expires_at=timezone.now() - timedelta(seconds=1), now=timezone.now())
        good = tokens.approve_link(conversation_id=cid, run_id=usage.run_id, call_id=usage.call_id,
                                   expires_at=None, now=timezone.now())

        for token in (old, good[:-3] + "xyz", "nonsense"):
            response = dana.get(f"/staff/approve/{token}")
            assert response.status_code == 404
            assert "This approval link does not open anything" in response.content.decode()

    def test_the_link_asks_a_stranger_to_log_in(self, start, make_assistant, client):
        cid = start("refund please", assistant=refund_desk(make_assistant))["conversation_id"]
        usage = pending(cid)
        token = tokens.approve_link(conversation_id=cid, run_id=usage.run_id, call_id=usage.call_id, expires_at=None,
                                    now=timezone.now())

        response = client.get(f"/staff/approve/{token}")

        assert response.status_code == 302 and response["Location"].startswith("/staff/login/")
