"""The conversation list in views by who answers: Mine, Waiting, Unassigned and All, with counts, customer and last message."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from apps.agent import actions, handoff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def desk(start, make_assistant, clock):
    """Four conversations: one the assistant answers, one waiting for a person, one Dana holds, one Sam holds."""
    assistant = make_assistant(handoff={"enabled": True})
    ids = {}
    for label in ("assistant", "waiting", "dana", "sam"):
        ids[label] = start(f"hello from {label}", assistant=assistant)["conversation_id"]
    for label in ("waiting", "dana", "sam"):
        handoff.request_handoff(conversation_id=ids[label], source="customer", requested_by="guest:alice", now=timezone.now())
    handoff.take_control(conversation_id=ids["dana"], staff="staff:dana", name="Dana", now=timezone.now())
    handoff.take_control(conversation_id=ids["sam"], staff="staff:sam", name="Sam", now=timezone.now())
    actions.start_turn(conversation_id=ids["dana"], message="Is my parcel coming?", persona="guest:alice", edge="api", now=clock())
    return ids


def listed(page: str) -> set[str]:
    return set(re.findall(r'<tr id="conversation-([0-9a-f-]{36})"', page))


def counts(page: str) -> dict[str, str]:
    return dict(re.findall(r'id="view-(\w+)"[^>]*>\w+ <span class="count" data-count="\d+">([^<]+)</span>', page))


@pytest.mark.parametrize(("view", "expected"), [
    ("mine", {"dana"}),
    ("waiting", {"waiting"}),
    ("unassigned", {"assistant", "waiting"}),
    ("", {"assistant", "waiting", "dana", "sam"}),
])
def test_each_view_lists_the_conversations_of_who_answers(dana, desk, view, expected):
    page = dana.get("/staff/", {"view": view}).content.decode()

    assert listed(page) == {desk[label] for label in expected}
    assert counts(page) == {"mine": "1", "waiting": "1", "unassigned": "2", "all": "4"}
    current = re.search(r'<a href="[^"]*" id="view-(\w+)" aria-current="page"', page)[1]
    assert current == (view or "all")


def test_a_row_says_who_answers_who_the_customer_is_and_what_was_said_last(dana, desk):
    page = dana.get("/staff/").content.decode()

    def row(label):
        return page.split(f'<tr id="conversation-{desk[label]}">')[1].split("</tr>")[0]

    assert "Dana (you)" in row("dana") and "Is my parcel coming?" in row("dana")
    assert ">Sam<" in row("sam").replace("\n", "")
    assert "Waiting for a person" in row("waiting") and "since" in row("waiting")
    assert "Assistant" in row("assistant")
    assert "<td>Guest alic<div" in row("assistant")  # guest:alice, as pages name a guest


def test_the_filters_keep_the_view_and_the_views_keep_the_filters(dana, desk):
    page = dana.get("/staff/", {"view": "waiting", "status": "active"}).content.decode()

    assert '<input type="hidden" name="view" value="waiting">' in page
    assert 'href="?view=mine&amp;status=active" id="view-mine"' in page


def test_the_counts_alone_for_the_poll_and_an_unknown_view_said_in_words(dana, desk):
    fragment = dana.get("/staff/", {"counts": "1", "view": "mine"}).content.decode()
    unknown = dana.get("/staff/", {"view": "everything"}).content.decode()

    assert fragment.lstrip().startswith('<nav id="views"') and "<table" not in fragment
    assert counts(fragment)["mine"] == "1"
    assert "view: unknown value &#x27;everything&#x27;" in unknown and len(listed(unknown)) == 4


def badge(page: str, name: str) -> int:
    return int(re.search(rf'id="{name}-count" class="count[^"]*" data-count="(\d+)"', page)[1])


def test_a_customer_who_wrote_last_in_a_conversation_you_hold_raises_your_badge_until_you_reply(dana, desk, clock):
    page = dana.get("/staff/assistants/").content.decode()
    assert badge(page, "unanswered") == 1  # the customer wrote after Dana took it
    assert "<title>(2) " in page  # one waiting for a person, one for Dana's reply

    handoff.staff_message(conversation_id=desk["dana"], staff="staff:dana", text="On its way.", now=timezone.now())
    polled = dana.get("/staff/waiting/", {"count": "1"}).content.decode()

    assert badge(polled, "unanswered") == 0 and badge(polled, "waiting") == 1
    assert 'id="unanswered-count" class="count none" data-count="0" hx-swap-oob="true"' in polled


def test_quarantine_has_a_count_in_the_navigation(dana, quarantined):
    quarantined()
    page = dana.get("/staff/").content.decode()
    polled = dana.get("/staff/waiting/", {"count": "1"}).content.decode()

    assert badge(page, "quarantine") == 1 and badge(polled, "quarantine") == 1
    assert "1<span class=\"visually-hidden\"> waiting for a decision</span>" in page


def test_the_login_page_has_no_badges_and_no_count_in_its_title(desk):
    from django.test import Client

    page = Client().get("/staff/login/")

    text = page.content.decode()
    assert page.status_code == 200
    assert not text.split("<title>")[1].startswith("(")
    assert 'id="unanswered-count"' not in text and 'name="password"' in text
