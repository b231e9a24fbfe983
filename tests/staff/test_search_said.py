"""The conversation list's search finds what was said: "parcel" finds the conversation that said it (docs/staff.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import uuid

import pytest
from django.utils import timezone

from apps.agent import actions, handoff
from tests.servers import ROOT
from tests.staff.conftest import logged_in_staff

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def listed(page: str) -> set[str]:
    return set(re.findall(r'<tr id="conversation-([0-9a-f-]{36})"', page))


@pytest.fixture
def said(start, make_assistant, clock):
    """Three conversations: a customer asks about a parcel, a person answers about a refund, and one says neither."""
    assistant = make_assistant(handoff={"enabled": True})
    parcel = start("Where is my parcel? It was due Monday.", assistant=assistant)["conversation_id"]
    refund = start("hello", assistant=assistant)["conversation_id"]
    handoff.take_control(conversation_id=refund, staff="staff:dana", name="Dana", now=timezone.now())
    handoff.staff_message(conversation_id=refund, staff="staff:dana", text="Your refund went out this morning.", now=timezone.now())
    neither = start("hello", assistant=assistant)["conversation_id"]
    actions.start_turn(conversation_id=neither, message="Do you sell gift cards?", persona="guest:alice", edge="api", now=clock())
    return {"parcel": parcel, "refund": refund, "neither": neither}


@pytest.mark.parametrize(("q", "expected"), [
    ("parcel", {"parcel"}),
    ("parcels", {"parcel"}),  # stemmed
    ("where is my parcel", {"parcel"}),  # the words that decide: "parcel"
    ("refund morning", {"refund"}),  # a person's reply is what was said too; every word in one message
    ("refund parcel", set()),
    ("kangaroo", set()),
])
def test_the_search_finds_the_conversations_that_said_the_words(said, q, expected):
    dana = logged_in_staff("dana", "Dana")

    page = dana.get("/staff/", {"q": q}).content.decode()

    assert listed(page) == {said[label] for label in expected}


def test_the_words_said_combine_with_a_view(said):
    dana = logged_in_staff("dana", "Dana")

    assert listed(dana.get("/staff/", {"q": "refund", "view": "mine"}).content.decode()) == {said["refund"]}
    assert listed(dana.get("/staff/", {"q": "parcel", "view": "mine"}).content.decode()) == set()


SCRIPT = r"""
import json
from django.db import connection
from django.utils import timezone
from apps.agent import actions
from apps.agent.actions import create_assistant
from apps.staff.listing import check_filters, conversation_page

assert connection.vendor == "sqlite"
assistant = create_assistant(config={"name": "Desk", "model": {"provider": "scripted", "rules": [],
                                     "fallback": [{"say": "Noted."}]}})
def start(message):
    return actions.start_conversation(assistant_id=str(assistant.id), message=message, persona="guest:alice", edge="api",
                                      now=timezone.now())["conversation_id"]
ids = {"parcel": start("Where are my parcels?"), "other": start("Do you sell gift cards?")}
def found(q):
    page = conversation_page(filters=check_filters({"q": q})[0])
    return sorted(str(row["id"]) for row in page.rows)
print("RESULT " + json.dumps({"ids": ids, "parcel": found("parcel"), "gift": found("gift cards"), "none": found("kangaroo")}))
"""


def test_the_embedded_default_finds_them_with_fts5():
    with tempfile.TemporaryDirectory(prefix="waypoint-said-") as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "WAYPOINT_DATA_DIR": tmp,
               "DJANGO_SECRET_KEY": "test-" + uuid.uuid4().hex, "DEBUG": "0", "DJANGO_SETTINGS_MODULE": "config.settings",
               "WAYPOINT_RUNNER": "inline"}
        for args in (("migrate", "--noinput", "-v0"), ("shell", "-c", SCRIPT)):
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=180)
            assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout.split("RESULT ", 1)[1])

    assert out["parcel"] == [out["ids"]["parcel"]]
    assert out["gift"] == [out["ids"]["other"]]
    assert out["none"] == []
