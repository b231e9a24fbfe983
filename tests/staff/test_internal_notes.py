"""Internal notes: in the log and the staff panel, never shown to the customer nor read by the model."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from apps.agent import handoff, history
from apps.agent.providers import ModelRequest, openai_messages
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.errors import BadInput
from apps.ledger import store
from apps.ledger.replay import replay, verify
from tests.staff.conftest import HTMX, logged_in_staff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]
NOTE = "Customer is a reseller: check the invoice first."


@pytest.fixture
def conversation(start, make_assistant):
    return start("Where is my parcel?", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]


def test_a_note_is_a_signed_entry_the_panel_shows_and_the_customer_never_sees(conversation, clock):
    dana = logged_in_staff("dana", "Dana")
    page = dana.get(f"/staff/conversations/{conversation}/").content.decode()
    assert 'name="text"' in page and "Internal note" in page

    answer = dana.post(f"/staff/conversations/{conversation}/notes", {"text": NOTE}, headers=HTMX).content.decode()

    entry = store.read(conversation)[-1]
    assert entry.kind == "staff_note" and entry.actor == "staff:dana"
    assert entry.payload["text"] == NOTE and entry.payload["name"] == "Dana"
    assert NOTE in answer and "Internal note · Dana" in answer
    assert NOTE in dana.get(f"/staff/conversations/{conversation}/").content.decode()
    customer = conversation_state(queries.conversation_for(conversation))
    assert NOTE not in str(customer)
    assert replay(conversation).ok and verify(conversation).ok


def test_the_model_never_reads_a_note(conversation, clock):
    handoff.take_control(conversation_id=conversation, staff="staff:dana", name="Dana", now=timezone.now())
    handoff.staff_message(conversation_id=conversation, staff="staff:dana", text="I'm on it.", now=timezone.now())
    handoff.staff_note(conversation_id=conversation, staff="staff:dana", name="Dana", text=NOTE, now=timezone.now())
    handoff.return_control(conversation_id=conversation, staff="staff:dana", now=timezone.now())

    earlier = history.build(store.read(conversation))
    messages = openai_messages(ModelRequest(history=earlier.turns, message="thanks", rounds=[], tools=[]))
    text = "\n".join(m["content"] for m in messages)

    assert "I'm on it." in text  # the human part is told, as it always was
    assert "reseller" not in text


def test_an_empty_note_is_refused_in_words_and_writes_nothing(conversation):
    dana = logged_in_staff("dana", "Dana")
    before = len(store.read(conversation))

    answer = dana.post(f"/staff/conversations/{conversation}/notes", {"text": "  "}, headers=HTMX)

    assert answer.status_code == 422 and "Your note was not added: message must be non-empty text" in answer.content.decode()
    assert len(store.read(conversation)) == before
    with pytest.raises(BadInput):
        handoff.staff_note(conversation_id=conversation, staff="dana", text=NOTE, now=timezone.now())


def test_the_staff_transcript_shows_each_change_of_control_in_the_customers_words(conversation):
    dana = logged_in_staff("dana", "Dana")
    handoff.request_handoff(conversation_id=conversation, source="customer", requested_by="guest:alice", now=timezone.now())
    handoff.take_control(conversation_id=conversation, staff="staff:dana", name="Dana", now=timezone.now())
    handoff.return_control(conversation_id=conversation, staff="staff:dana", now=timezone.now())

    page = dana.get(f"/staff/conversations/{conversation}/").content.decode()
    transcript = page.split('<ol id="transcript-messages"')[1].split("</ol>")[0]

    lines = re.findall(r'class="message control"><span>([^<]+)</span>', transcript)
    assert lines == ["A person was asked to join", "Dana joined", "Dana handed you back to the assistant"]
    assert transcript.index("Where is my parcel?") < transcript.index("A person was asked to join")
