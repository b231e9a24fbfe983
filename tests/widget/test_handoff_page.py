"""The customer's side of a handoff on the conversation page: Talk to a person, the waiting line, the person's name."""

import pytest
from django.utils import timezone

from apps.agent import handoff
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.runs.models import WorkflowLog

pytestmark = pytest.mark.django_db

TALK = ">Talk to a person</button>"


@pytest.fixture
def person_assistant(make_assistant):
    return make_assistant(handoff={"enabled": True, "queued_message": "A person will be with you shortly."})


def talk(client, started, *, htmx=False):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/c/{started['conversation_id']}/handoff", {"token": started["token"]}, headers=headers)


def test_the_button_is_offered_only_by_an_assistant_with_handoff(started, page, person_assistant):
    assert TALK in page(started("hello", assistant=person_assistant)).content.decode()
    assert TALK not in page(started("hello")).content.decode()


def test_talk_to_a_person_withdraws_the_card_and_shows_the_waiting_line(client, started, page, person_assistant, settle,
                                                                       staff_online):
    conversation = started("I want a refund", assistant=person_assistant)

    with settle():
        response = talk(client, conversation, htmx=True)

    assert response.status_code == 200
    html = page(conversation).content.decode()
    assert "Waiting for a person…" in html and "A person will be with you shortly." in html
    assert "Withdrawn: handed to a person" in html and "Approval needed" not in html
    assert TALK not in html
    assert conversation_state(queries.conversation_for(conversation["conversation_id"]))["control"]["mode"] == "queued"


def test_a_persons_replies_are_under_their_name_and_the_changes_are_lines(client, started, page, person_assistant, settle):
    conversation = started("hello", assistant=person_assistant)
    cid = conversation["conversation_id"]
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())
    handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Hi, I'm Dana from support.", now=timezone.now())

    with_person = page(conversation).content.decode()
    with settle():
        client.post(f"/c/{cid}/send", {"token": conversation["token"], "message": "my parcel is lost"})
    after_message = page(conversation).content.decode()
    handoff.return_control(conversation_id=cid, staff="staff:dana", now=timezone.now())
    back = page(conversation).content.decode()

    assert "Dana joined" in with_person and "You&#x27;re chatting with Dana" in with_person
    assert '<span class="author">Dana<span class="visually-hidden">:</span></span>' in with_person
    assert 'class="message staff by-other"' in with_person
    assert "my parcel is lost" in after_message and 'id="typing"' not in after_message
    assert WorkflowLog.objects.filter(conversation_id=cid).count() == 1  # the message under Dana started no run
    assert "Dana handed you back to the assistant" in back and TALK in back


def test_a_refused_request_is_said_in_words_not_a_500(client, started):
    conversation = started("hello")  # its assistant has no handoff

    response = talk(client, conversation, htmx=True)

    assert response.status_code == 409
    assert "No one can be reached here right now" in response.content.decode()


def test_a_bad_token_gets_the_page_for_people(client, started, person_assistant):
    conversation = started("hello", assistant=person_assistant)

    response = client.post(f"/c/{conversation['conversation_id']}/handoff", {"token": "nope"})

    assert response.status_code in (401, 403, 404) and "Traceback" not in response.content.decode()
    assert conversation_state(queries.conversation_for(conversation["conversation_id"]))["control"]["mode"] == "agent"


def test_a_completed_conversation_offers_no_person_and_refuses_one_in_words(client, started, page, person_assistant):
    conversation = started("bye", assistant=person_assistant)  # the assistant completes the conversation on "bye"

    html = page(conversation).content.decode()
    response = talk(client, conversation, htmx=True)

    assert "This conversation is complete" in html and TALK not in html
    assert response.status_code == 409
    assert "This conversation is complete" in response.content.decode()
    assert conversation_state(queries.conversation_for(conversation["conversation_id"]))["control"]["mode"] == "agent"
