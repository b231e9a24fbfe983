"""The panel rescues a held conversation: Take over from Sam, Hand to a colleague, and an admin's Hand back."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from apps.agent import handoff
from apps.ledger import store
from tests.staff.conftest import HTMX, logged_in_staff
from tests.staff.test_handoff_panel import control

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def ada():
    """An admin of the panel."""
    user = get_user_model().objects.create_superuser("ada", "ada@example.com", "pw", first_name="Ada")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def held_by_sam(start, make_assistant):
    logged_in_staff("sam", "Sam")  # a colleague with a login, as on a real team
    cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())
    handoff.take_control(conversation_id=cid, staff="staff:sam", name="Sam", now=timezone.now())
    return cid


def page_of(client, cid) -> str:
    return client.get(f"/staff/conversations/{cid}/").content.decode()


def test_a_colleague_sees_take_over_from_sam_behind_a_confirmation(dana, held_by_sam):
    page = page_of(dana, held_by_sam)

    assert "Sam already has this conversation." in page
    assert "<summary>Take over from Sam</summary>" in page
    assert 'name="from" value="staff:sam"' in page and "Yes, take over from Sam" in page
    assert "As an admin" not in page  # only admins hand back a colleague's conversation


def test_take_over_from_sam_moves_control_and_says_so(dana, held_by_sam):
    answer = dana.post(f"/staff/conversations/{held_by_sam}/take-over", {"from": "staff:sam"}, headers=HTMX)

    assert answer.status_code == 200
    assert control(held_by_sam)["staff"] == {"id": "staff:dana", "name": "Dana"}
    assert "Dana (staff:dana) took over from staff:sam" in answer.content.decode()
    assert "Reply to the customer as Dana" in answer.content.decode()


def test_a_rescue_someone_beat_is_refused_in_words(dana, held_by_sam):
    handoff.take_control(conversation_id=held_by_sam, staff="staff:lee", name="Lee", from_="staff:sam", now=timezone.now())

    answer = dana.post(f"/staff/conversations/{held_by_sam}/take-over", {"from": "staff:sam"}, headers=HTMX)

    assert answer.status_code == 409
    assert "You did not take over: Lee already has this conversation." in answer.content.decode()
    assert control(held_by_sam)["staff"]["id"] == "staff:lee"


def test_the_holder_hands_it_to_a_colleague_from_the_list(held_by_sam):
    sam = Client()
    sam.force_login(get_user_model().objects.get(username="sam"))
    logged_in_staff("dana", "Dana")
    page = page_of(sam, held_by_sam)
    assert '<option value="staff:dana">Dana · offline</option>' in page and '<option value="staff:sam">' not in page

    answer = sam.post(f"/staff/conversations/{held_by_sam}/hand-to", {"to": "staff:dana"}, headers=HTMX)

    assert answer.status_code == 200
    assert control(held_by_sam)["staff"] == {"id": "staff:dana", "name": "Dana"}
    assert "staff:sam handed it to Dana (staff:dana)" in answer.content.decode()


def test_handing_to_someone_who_is_not_a_colleague_is_refused_and_changes_nothing(dana, held_by_sam):
    before = len(store.read(held_by_sam))
    sam = Client()
    sam.force_login(get_user_model().objects.get(username="sam"))

    answer = sam.post(f"/staff/conversations/{held_by_sam}/hand-to", {"to": "staff:mallory"}, headers=HTMX)

    assert answer.status_code == 422
    assert "Not handed on: Choose a colleague from the list" in answer.content.decode()
    assert len(store.read(held_by_sam)) == before


def test_an_admin_hands_a_colleagues_conversation_back_and_others_cannot(ada, dana, held_by_sam):
    assert "As an admin, for Sam." in page_of(ada, held_by_sam)

    refused = dana.post(f"/staff/conversations/{held_by_sam}/hand-back", {"from": "staff:sam"}, headers=HTMX)
    assert refused.status_code == 409 and control(held_by_sam)["mode"] == "human"

    answer = ada.post(f"/staff/conversations/{held_by_sam}/hand-back", {"from": "staff:sam"}, headers=HTMX)

    assert answer.status_code == 200 and control(held_by_sam)["mode"] == "agent"
    assert "Ada (staff:ada) handed back to the assistant for staff:sam" in answer.content.decode()
