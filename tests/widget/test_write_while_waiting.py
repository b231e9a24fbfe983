"""A message sent while a card waits declines the card, with the message as the reason, and becomes the next turn."""

import json
import re

import pytest

from apps.agent import history
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import replay, store
from apps.ledger.models import Event
from apps.runs.models import ToolUsageLog, WorkflowLog
from tests.widget.conftest import enabled_inputs

pytestmark = pytest.mark.django_db


def state_of(started: dict) -> dict:
    return conversation_state(queries.conversation_for(started["conversation_id"]))


@pytest.fixture
def send(client):
    """Post the composer the way the page does (`expected_seq` is the head it shows)."""

    def post(started: dict, message: str, *, htmx: bool = False):
        data = {"token": started["token"], "message": message, "expected_seq": state_of(started)["seq"]}
        return client.post(f"/c/{started['conversation_id']}/send", data, headers={"HX-Request": "true"} if htmx else {})

    return post


class TestWritingWhileACardWaits:
    @pytest.mark.parametrize("first", ["I want a refund", "when can you deliver?"])
    def test_the_card_is_declined_with_the_message_and_the_message_is_the_next_turn(self, started, send, settle, first):
        conversation = started(first)
        waiting = state_of(conversation)
        [call] = waiting["pending_client_actions"]

        with settle():
            response = send(conversation, "Actually, never mind that")

        assert response.status_code == 302
        after = state_of(conversation)
        assert after["messages"][-1]["text"] == "You said: Actually, never mind that"
        assert WorkflowLog.objects.get(run_id=waiting["run_id"]).status == "completed"
        usage = ToolUsageLog.objects.get(run_id=waiting["run_id"], call_id=call["call_id"])
        assert (usage.status, usage.output, usage.answered_by) == (
            "declined", {"declined": True, "reason": "Actually, never mind that"}, "guest:alice")
        assert replay.verify(conversation["conversation_id"]).ok and replay.replay(conversation["conversation_id"]).ok

    def test_the_decline_and_the_new_turn_are_one_commit(self, started, send, settle):
        conversation = started("I want a refund")
        waiting = state_of(conversation)

        with settle():
            send(conversation, "Actually, never mind that")

        entries = list(Event.objects.filter(conversation_id=conversation["conversation_id"], seq__gt=waiting["seq"])
                       .order_by("seq").values_list("kind", "turn_id", "created_at"))
        assert [kind for kind, _, _ in entries[:2]] == ["turn_superseded", "turn_dispatched"]
        assert entries[0][1] == waiting["turn_id"] and entries[1][1] != waiting["turn_id"]
        assert entries[0][2] == entries[1][2]  # one transaction's `now`
        assert json.loads(Event.objects.get(conversation_id=conversation["conversation_id"], kind="turn_superseded").payload)[
            "reason"] == "Actually, never mind that"

    def test_the_model_of_the_next_turn_reads_the_request_as_declined_for_that_message(self, started, send, settle):
        conversation = started("when can you deliver?")
        waiting = state_of(conversation)
        [call] = waiting["pending_client_actions"]

        with settle():
            send(conversation, "Forget the date")

        past = history.build(store.read(conversation["conversation_id"])).turns
        declined = next(t for t in past if t.turn_id == waiting["turn_id"])
        assert declined.status == "abandoned"
        assert declined.rounds[0].results[call["call_id"]] == {"declined": True, "reason": "Forget the date"}

    def test_the_page_lets_the_customer_write_says_what_it_does_and_shows_the_declined_receipt(
        self, page, started, send, settle
    ):
        conversation = started("I want a refund")
        waiting = page(conversation).content.decode()

        with settle():
            send(conversation, "Actually, never mind that", htmx=True)
        after = page(conversation).content.decode()

        assert any('class="send-button"' in tag for tag in enabled_inputs(waiting))
        assert "Answer the request above, or send a message instead: it declines the request." in waiting
        assert "Declined: a message was sent instead" in after and "You said: Actually, never mind that" in after

    def test_the_senders_reply_shows_the_declined_card_before_the_message_as_the_log_has_them(self, started, send, settle):
        conversation = started("I want a refund")

        with settle():
            html = send(conversation, "Actually, never mind that", htmx=True).content.decode()

        blocks = re.findall(r'<div id="((?:message|receipt)-[^"]+)"', html)
        assert [b.split("-")[0] for b in blocks] == ["receipt", "message"]
        assert "Declined: a message was sent instead" in html

    def test_a_running_turn_still_refuses_a_message(self, client, started, clock):
        conversation = started("hello")
        WorkflowLog.objects.filter(run_id=conversation["run_id"]).update(status="running")
        data = {"token": conversation["token"], "message": "again", "expected_seq": state_of(conversation)["seq"]}

        response = client.post(f"/c/{conversation['conversation_id']}/send", data)

        assert response.status_code == 409

    def test_the_api_declines_a_waiting_card_as_the_page_does(self, client, started):
        conversation = started("I want a refund")
        waiting = state_of(conversation)
        [card] = waiting["pending_client_actions"]

        response = client.post(f"/v1/agent/conversations/{conversation['conversation_id']}/turns",
                               {"message": "never mind"}, content_type="application/json",
                               headers={"Authorization": f"Bearer {conversation['token']}"})

        assert response.status_code == 202, response.content
        assert state_of(conversation)["run_id"] == response.json()["run_id"]
        assert WorkflowLog.objects.get(run_id=waiting["run_id"]).status == "completed"
        usage = ToolUsageLog.objects.get(run_id=waiting["run_id"], call_id=card["call_id"])
        assert (usage.status, usage.output) == ("declined", {"declined": True, "reason": "never mind"})
