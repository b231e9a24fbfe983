"""A staff action verifies the log from the last entry this process verified, not from the start."""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction

from apps.agent import actions
from apps.conversations.models import Conversation
from apps.ledger import chain
from apps.ledger.models import Event
from tests.staff.conftest import HTMX

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def verified(monkeypatch):
    """How many entries each verification of a chain read and checked."""
    counts: list[int] = []
    real = chain.verify_rows

    def counting(rows, *args, **kwargs):
        counts.append(len(rows))
        return real(rows, *args, **kwargs)

    monkeypatch.setattr(chain, "verify_rows", counting)
    return counts


def head(cid: str) -> int:
    return Conversation.objects.get(pk=cid).head_seq


def test_take_over_send_reply_and_hand_back_verify_only_the_entries_they_added(dana, long_queued, verified):
    dana.get(f"/staff/conversations/{long_queued}/")  # the page load checks the whole log
    before = head(long_queued)
    assert before > 60 and verified == [before]

    taken = dana.post(f"/staff/conversations/{long_queued}/take-over", headers=HTMX)
    replied = dana.post(f"/staff/conversations/{long_queued}/reply", {"text": "Hi, Dana here."}, headers=HTMX)
    back = dana.post(f"/staff/conversations/{long_queued}/hand-back", headers=HTMX)

    assert [r.status_code for r in (taken, replied, back)] == [200, 200, 200]
    assert all("entries verify" in r.content.decode() for r in (taken, replied, back))
    # Once per action, from the last entry verified (checked again) to the new head.
    assert len(verified) == 1 + 3
    assert sum(verified[1:]) == head(long_queued) - before + 3


def tamper(cid: str, seq: int) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL waypoint.repair = 'on'")
        Event.objects.filter(conversation_id=cid, seq=seq).update(payload='{"text":"forged"}')


@pytest.mark.parametrize("which", ["the last verified", "a later"])
def test_a_tampered_entry_at_or_after_the_mark_is_still_caught(dana, long_queued, clock, which):
    dana.get(f"/staff/conversations/{long_queued}/")
    dana.post(f"/staff/conversations/{long_queued}/take-over", headers=HTMX)
    dana.post(f"/staff/conversations/{long_queued}/reply", {"text": "Hi, Dana here."}, headers=HTMX)
    replied = head(long_queued)  # the last entry this process verified
    actions.start_turn(conversation_id=long_queued, message="thanks", persona="guest:alice", edge="api", now=clock())
    forged = replied if which == "the last verified" else head(long_queued)
    tamper(long_queued, forged)

    answer = dana.post(f"/staff/conversations/{long_queued}/reply", {"text": "Anything else?"}, headers=HTMX).content.decode()

    assert f"✗ entry {forged}: " in answer
    assert re.search(rf'<tr id="event-{forged}" class="first-bad', answer)
