import json
import re
from datetime import datetime

import pytest
from django.urls import reverse

from apps.actions.models import ActionLog
from apps.agent import actions as conversation_actions
from apps.conversations import queries
from apps.ledger import replay
from apps.ledger.models import Event
from apps.runs.models import WorkflowLog
from apps.staff import actions
from apps.widget import pushes
from tests.staff.conftest import state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def resolve(client, run_id, resolution, note="", result="", **extra):
    return client.post(reverse("staff:resolve", args=[run_id]), {"resolution": resolution, "note": note, "result": result, **extra})


def resolution_event(conversation_id):
    return Event.objects.filter(conversation_id=conversation_id, kind="quarantine_resolved").get()


class TestTheQueue:
    def test_lists_a_quarantined_turn_with_what_is_known(self, staff_client, quarantined):
        q = quarantined()

        response = staff_client.get(reverse("staff:quarantine"))

        page = response.content.decode()
        assert response.status_code == 200
        assert f'id="run-{q["run_id"]}"' in page
        assert "issue_refund" in page and "webhook" in page
        assert f"{q['turn_id']}:{q['call_id']}" in page  # the idempotency key
        assert "&quot;order_id&quot;: &quot;A-1&quot;" in page  # the arguments
        assert "I want a refund for order A-1" in page


class TestCustomerVisibleNotes:
    def test_the_checkbox_is_off_by_default(self, staff_client, quarantined):
        quarantined()

        page = staff_client.get(reverse("staff:quarantine")).content.decode()

        assert 'name="customer_visible" value="1">' in page and "The customer may see this note" in page

    def test_a_note_marked_customer_visible_is_recorded_so_and_reaches_the_reply(self, staff_client, quarantined, receiver, clock):
        q = quarantined()

        resolve(staff_client, q["run_id"], "done", "Refund R-77 is on its way to your card", result='{"refund_id": "R-77"}',
                customer_visible="1")
        conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                                   now=clock())

        assert json.loads(resolution_event(q["conversation_id"]).payload)["customer_visible"] is True
        assert "Refund R-77 is on its way to your card" in state(q["conversation_id"])["messages"][-1]["text"]
        assert replay.replay(q["conversation_id"]).ok

    def test_an_abandoned_turns_note_stays_with_staff(self, staff_client, quarantined, clock):
        q = quarantined()

        resolve(staff_client, q["run_id"], "abandon", "customer is known for chargebacks")
        conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                                   now=clock())

        assert "customer_visible" not in json.loads(resolution_event(q["conversation_id"]).payload)
        assert all("chargebacks" not in m["text"] for m in state(q["conversation_id"])["messages"])


class TestMarkAsDone:
    def test_records_a_signed_event_as_the_staff_member_and_continue_goes_on_with_the_recorded_result(
        self, staff_client, quarantined, receiver, client, clock
    ):
        q = quarantined()
        assert state(q["conversation_id"])["run_status"] == "interrupted"

        response = resolve(staff_client, q["run_id"], "done", "Refund R-77 went through (checked in the shop)",
                           result='{"refund_id": "R-77"}')

        assert response.status_code == 302
        event = resolution_event(q["conversation_id"])
        assert event.actor == "staff:ops" and event.turn_id == q["turn_id"]
        assert json.loads(event.payload) == {"run_id": q["run_id"], "call_id": q["call_id"], "resolution": "done",
                                             "note": "Refund R-77 went through (checked in the shop)",
                                             "result": {"refund_id": "R-77"}}
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok
        after = state(q["conversation_id"])
        assert after["run_status"] == "interrupted" and not after["quarantined"]
        assert ActionLog.objects.get(call_id=q["call_id"]).status == "resolved_done"
        page = client.get(reverse("widget:conversation", args=[q["conversation_id"]]), {"token": q["token"]}).content.decode()
        assert "Our team has since confirmed that it went through" in page and "without doing it again" in page

        conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                                   now=clock())

        after = state(q["conversation_id"])
        assert after["run_status"] == "completed"
        # The note was not marked customer-visible: the model hears only that staff confirmed it.
        assert after["messages"][-1]["text"] == (
            'Refund issued: {"note": "confirmed by staff after an interruption", "result": {"refund_id": "R-77"}, '
            '"status": "done"}.')
        assert receiver.deliveries == []  # nothing was sent again
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok

    def test_the_push_to_an_open_customer_page_replaces_the_card_with_the_confirmed_words(self, quarantined, clock):
        q = quarantined()
        cid = q["conversation_id"]
        viewer = pushes.Viewer(token=q["token"], persona=q["persona"], permissions=frozenset({"view", "write"}), embed=None)
        shown = pushes.html(cid, viewer=viewer, since=None, announced=0, load=lambda: queries.conversation_for(cid))

        actions.resolve_quarantine(run_id=q["run_id"], resolution="done", note="R-1 exists", actor="staff:ops", now=clock())
        head = queries.conversation_head(cid)
        pushed = pushes.html(cid, viewer=viewer, since=shown.shown, announced=head, load=lambda: queries.conversation_for(cid))

        assert "We are checking whether it went through" in shown.text
        assert '<section id="cards" hx-swap-oob="true"' in pushed.text
        assert "Our team has since confirmed that it went through." in pushed.text
        assert pushed.shown.cards != shown.shown.cards

    def test_a_result_the_log_cannot_sign_as_json_is_kept_as_text(self, quarantined, clock):
        q = quarantined()

        actions.resolve_quarantine(run_id=q["run_id"], resolution="done", note="checked", result='{"refund_id": 98765432109876543210}',
                                   actor="staff:ops", now=clock())

        assert json.loads(resolution_event(q["conversation_id"]).payload)["result"] == '{"refund_id": 98765432109876543210}'

    def test_a_result_that_is_not_json_is_kept_as_text(self, quarantined, clock):
        q = quarantined()

        actions.resolve_quarantine(run_id=q["run_id"], resolution="done", note="checked", result="refund 77 in the shop",
                                   actor="staff:ops", now=clock())

        assert json.loads(resolution_event(q["conversation_id"]).payload)["result"] == "refund 77 in the shop"


class TestMarkAsNotDoneAndRetry:
    def test_runs_the_action_again_with_the_same_idempotency_key_and_the_turn_finishes(self, staff_client, quarantined, receiver):
        q = quarantined()

        resolve(staff_client, q["run_id"], "not_done_retry", "The shop has no refund for this key")

        event = resolution_event(q["conversation_id"])
        assert event.actor == "staff:ops" and json.loads(event.payload)["resolution"] == "not_done_retry"
        [delivery] = receiver.deliveries
        assert delivery["headers"]["Idempotency-Key"] == f"{q['turn_id']}:{q['call_id']}"
        action = ActionLog.objects.get(call_id=q["call_id"])
        assert action.status == "succeeded" and action.attempts == 2
        after = state(q["conversation_id"])
        assert after["run_status"] == "completed"
        assert after["messages"][-1]["text"] == 'Refund issued: {"refund_id": "R-1"}.'
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok


class TestAbandon:
    def test_ends_the_turn_interrupted_so_the_customer_can_continue(self, staff_client, quarantined, clock, receiver):
        q = quarantined()

        resolve(staff_client, q["run_id"], "abandon")

        event = resolution_event(q["conversation_id"])
        assert event.actor == "staff:ops" and json.loads(event.payload)["resolution"] == "abandon"
        after = state(q["conversation_id"])
        assert after["run_status"] == "interrupted" and not after["quarantined"]
        assert ActionLog.objects.get(call_id=q["call_id"]).status == "abandoned"
        assert receiver.deliveries == []
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok
        continued = conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"],
                                                               edge="api", now=clock())
        assert continued["run_id"] != q["run_id"]
        assert state(q["conversation_id"])["run_status"] == "waiting"  # the new turn asks for approval again

    def test_the_customer_page_offers_continue(self, client, quarantined, staff_user, clock):
        q = quarantined()
        actions.resolve_quarantine(run_id=q["run_id"], resolution="abandon", note="", actor="staff:ops", now=clock())

        page = client.get(reverse("widget:conversation", args=[q["conversation_id"]]), {"token": q["token"]}).content.decode()

        assert "Continue" in page and "being checked by our team" not in page


class TestResolutionRules:
    def test_a_second_resolution_is_refused_and_writes_nothing(self, quarantined, clock):
        q = quarantined()
        actions.resolve_quarantine(run_id=q["run_id"], resolution="abandon", note="", actor="staff:ops", now=clock())

        with pytest.raises(actions.NotQuarantined):
            actions.resolve_quarantine(run_id=q["run_id"], resolution="done", note="R-1", actor="staff:eve", now=clock())

        assert Event.objects.filter(conversation_id=q["conversation_id"], kind="quarantine_resolved").count() == 1

    def test_done_needs_the_confirmed_outcome_and_the_form_says_so(self, staff_client, quarantined):
        q = quarantined()

        response = resolve(staff_client, q["run_id"], "done", "  ")

        assert response.status_code == 422
        assert "say what outcome you confirmed" in response.content.decode()
        assert WorkflowLog.objects.get(run_id=q["run_id"]).quarantined

    def test_a_retry_is_refused_once_a_later_turn_has_started(self, quarantined, clock):
        q = quarantined()
        conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                                   now=clock())

        with pytest.raises(actions.TurnMovedOn):
            actions.resolve_quarantine(run_id=q["run_id"], resolution="not_done_retry", note="", actor="staff:ops", now=clock())


def reattempt(q, clock):
    """The customer presses Continue on the quarantined turn: the one card it leads to, the re-attempt's approval."""
    from apps.agent import actions as conversation_actions

    conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                               now=clock())
    [pending] = state(q["conversation_id"])["pending_client_actions"]
    return pending


def approve(cid, call, clock, persona="guest:alice", decision="approve"):
    from apps.agent import answers

    return answers.accept_results(
        conversation_id=cid, run_id=state(cid)["run_id"], persona=persona, now=clock(),
        results=[{"call_id": call["call_id"], "output": {"decision": decision,
                                                         "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}}])


class TestContinueBeforeAResolution:
    def test_continue_asks_for_a_reattempt_linked_to_the_first_attempt(self, quarantined, clock, client):
        q = quarantined()
        started_at = ActionLog.objects.get(call_id=q["call_id"], turn_id=q["turn_id"]).started_at

        pending = reattempt(q, clock)
        assert pending["kind"] == "approval" and pending["tool"] == "issue_refund"
        link = pending["reattempt_of"]
        assert (link["turn_id"], link["call_id"]) == (q["turn_id"], q["call_id"])
        assert datetime.fromisoformat(link["attempted_at"]) == started_at
        page = client.get(reverse("widget:conversation", args=[q["conversation_id"]]), {"token": q["token"]}).content.decode()
        assert "This may already have been done." in page
        assert (f'We tried this at <time class="local-time" datetime="{link["attempted_at"]}">{started_at:%H:%M} UTC</time>, '
                "but were interrupted before we heard back, so it may already have gone through.") in page

    def test_approving_the_reattempt_sends_it_under_the_first_attempts_key_once(self, quarantined, clock, receiver):
        q = quarantined()
        pending = reattempt(q, clock)

        approve(q["conversation_id"], pending, clock)

        assert [d["headers"]["Idempotency-Key"] for d in receiver.deliveries] == [f"{q['turn_id']}:{q['call_id']}"]
        after = state(q["conversation_id"])
        assert after["run_status"] == "completed" and after["messages"][-1]["text"] == 'Refund issued: {"refund_id": "R-1"}.'
        repeat = ActionLog.objects.exclude(turn_id=q["turn_id"]).get(conversation_id=q["conversation_id"])
        assert repeat.idempotency_key == f"{q['turn_id']}:{q['call_id']}"
        assert (repeat.reattempt_of["turn_id"], repeat.reattempt_of["call_id"]) == (q["turn_id"], q["call_id"])
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok

    def test_the_reattempts_approval_reads_as_a_second_try_beside_the_first(self, quarantined, clock, client):
        q = quarantined()
        pending = reattempt(q, clock)

        approve(q["conversation_id"], pending, clock)

        page = client.get(reverse("widget:conversation", args=[q["conversation_id"]]), {"token": q["token"]}).content.decode()
        titles = re.findall(r'<span class="answered-title">([^<]*)</span>', page)
        assert titles == ["Issue refund", "Second try: Issue refund"]

    def test_the_queue_says_whether_the_customer_continued_and_what_became_of_the_reattempt(
        self, staff_client, quarantined, clock
    ):
        q = quarantined()
        queue = reverse("staff:quarantine")
        assert "The customer has not continued yet." in staff_client.get(queue).content.decode()

        conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                                   now=clock())
        assert "a re-attempt waits for approval" in staff_client.get(queue).content.decode()

        [pending] = state(q["conversation_id"])["pending_client_actions"]
        approve(q["conversation_id"], pending, clock, decision="deny")
        assert "a re-attempt waits for approval" not in staff_client.get(queue).content.decode()
        assert f'id="run-{q["run_id"]}"' in staff_client.get(queue).content.decode()  # denied: still unknown

    def test_a_successful_reattempt_settles_the_quarantine_in_the_log_and_it_leaves_the_queue(self, staff_client, quarantined, clock):
        q = quarantined()
        pending = reattempt(q, clock)

        approve(q["conversation_id"], pending, clock)

        settled = Event.objects.get(conversation_id=q["conversation_id"], kind="quarantine_settled")
        assert json.loads(settled.payload) == {"run_id": q["run_id"], "turn_id": q["turn_id"], "call_id": q["call_id"],
                                   "by_call_id": pending["call_id"]}
        assert not WorkflowLog.objects.get(run_id=q["run_id"]).quarantined
        assert ActionLog.objects.get(turn_id=q["turn_id"], call_id=q["call_id"]).status == "settled"
        assert f'id="run-{q["run_id"]}"' not in staff_client.get(reverse("staff:quarantine")).content.decode()
        listed = staff_client.get(reverse("staff:conversations"), {"quarantined": "1"}).content.decode()
        assert q["conversation_id"] not in listed
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok

    def test_the_list_says_why_a_conversation_whose_later_turn_finished_is_still_quarantined(self, staff_client, quarantined, clock):
        q = quarantined()
        pending = reattempt(q, clock)
        approve(q["conversation_id"], pending, clock, decision="deny")

        listed = staff_client.get(reverse("staff:conversations"), {"quarantined": "1"}).content.decode()

        row = listed[listed.index(f'id="conversation-{q["conversation_id"]}"'):]
        row = row[:row.index("</tr>")]
        assert '<span class="badge completed">completed</span>' in row and '<span class="badge quarantined">quarantined</span>' in row
        assert f'href="/staff/quarantine/#run-{q["run_id"]}"' in row
        assert "The outcome of “issue_refund” is unknown: it waits for your decision." in row

    def test_done_may_still_be_recorded_and_a_later_identical_call_is_a_new_action(self, quarantined, clock):
        q = quarantined()
        conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"], edge="api",
                                                   now=clock())

        actions.resolve_quarantine(run_id=q["run_id"], resolution="done", note="R-77 exists", actor="staff:ops", now=clock())

        # The pending approval was asked for as a re-attempt, and stays one: approving it sends the first key.
        assert state(q["conversation_id"])["pending_client_actions"][0]["reattempt_of"]["turn_id"] == q["turn_id"]
        assert replay.verify(q["conversation_id"]).ok and replay.replay(q["conversation_id"]).ok

    def test_after_abandon_an_identical_call_is_a_new_action_with_its_own_key(self, quarantined, clock, receiver):
        q = quarantined()
        actions.resolve_quarantine(run_id=q["run_id"], resolution="abandon", note="", actor="staff:ops", now=clock())
        continued = conversation_actions.continue_conversation(conversation_id=q["conversation_id"], persona=q["persona"],
                                                               edge="api", now=clock())
        [pending] = state(q["conversation_id"])["pending_client_actions"]
        assert pending["reattempt_of"] is None

        approve(q["conversation_id"], pending, clock)

        assert [d["headers"]["Idempotency-Key"] for d in receiver.deliveries] == [f"{continued['turn_id']}:{pending['call_id']}"]
