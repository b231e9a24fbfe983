"""Saved replies: the team writes them once on their page; the conversation page carries them for the composer's "/"."""

from __future__ import annotations

import json
import re

import pytest
from django.utils import timezone

from apps.agent import handoff
from apps.staff.models import SavedReply
from tests.staff.conftest import logged_in_staff

pytestmark = pytest.mark.django_db


def test_a_saved_reply_is_added_changed_and_deleted_on_its_page():
    dana = logged_in_staff("dana", "Dana")

    added = dana.post("/staff/saved-replies/", {"shortcut": "/Refund-Policy", "text": "Refunds take 5 days."})
    dana.post("/staff/saved-replies/", {"shortcut": "refund-policy", "text": "Refunds take 3 days."})
    page = dana.get("/staff/saved-replies/").content.decode()
    [reply] = SavedReply.objects.all()
    dana.post("/staff/saved-replies/", {"delete": reply.pk})

    assert added.status_code == 302
    assert (reply.shortcut, reply.text, reply.created_by) == ("refund-policy", "Refunds take 3 days.", "staff:dana")
    assert "/refund-policy" in page and "Refunds take 3 days." in page
    assert not SavedReply.objects.exists()


@pytest.mark.parametrize(("shortcut", "text", "problem"), [
    ("two words", "x", "a shortcut is one word"),
    ("ok", "", "write the reply"),
    ("ok", "bad\x00text", "Go back to the form"),  # the control-character guard answers before the view
])
def test_a_reply_that_is_not_one_is_refused_in_words_and_nothing_is_saved(shortcut, text, problem):
    dana = logged_in_staff("dana", "Dana")

    refused = dana.post("/staff/saved-replies/", {"shortcut": shortcut, "text": text})

    assert refused.status_code == 422 and problem in refused.content.decode()
    assert not SavedReply.objects.exists()


def test_the_conversation_page_carries_them_for_the_composer(start, make_assistant):
    dana = logged_in_staff("dana", "Dana")
    SavedReply.objects.create(shortcut="hello", text="Hi, I'm <Dana>.", created_by="staff:dana", created_at=timezone.now())
    cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())

    page = dana.get(f"/staff/conversations/{cid}/").content.decode()

    carried = json.loads(re.search(r'<script id="saved-replies" type="application/json">(.*?)</script>', page).group(1))
    assert carried == [{"shortcut": "hello", "text": "Hi, I'm <Dana>."}]
    composer = page[page.index('id="staff-composer"'):]
    assert 'id="staff-reply"' in composer and "Enter sends" in composer
