"""
The runner's append on the head it wrote last (`store.append_optimistic`): one round trip when nobody else
wrote, a clean refusal (and nothing written) when somebody did or the lease moved on.
"""

import pytest
from django.db import transaction

from apps.conversations import lease
from apps.conversations.actions import locked
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.ledger.types import ParticipantTokenIssued

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def token_event(n: int) -> ParticipantTokenIssued:
    return ParticipantTokenIssued(persona=f"guest:{n}", token_id=f"tok_{n}", edge="api", permissions=["read"], issued_by="test")


def head_of(cid: str) -> tuple[int, str]:
    return Conversation.objects.filter(id=cid).values_list("head_seq", "head_hash").get()


def held_lease(cid: str, clock) -> lease.Held:
    held = lease.acquire(conversation_id=cid, holder="test-writer", now=clock(), seconds=60)
    assert held is not None
    return held


def append_on(head, cid: str, held: lease.Held, clock, n: int):
    with transaction.atomic():
        return store.append_optimistic(head, held.token, conversation_id=cid, events=[token_event(n)], turn_id="", actor="test",
                                       now=clock())


class TestAppendOnAKnownHead:
    def test_it_appends_and_returns_the_new_head(self, start, clock):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        before = head_of(cid)

        recorded, head = append_on(before, cid, held, clock, 1)

        assert [r.seq for r in recorded] == [before[0] + 1]
        assert head == head_of(cid)
        recorded, head = append_on(head, cid, held, clock, 2)
        assert head == head_of(cid) and head[0] == before[0] + 2
        assert verify(cid).ok and replay(cid).ok

    def test_another_writer_first_refuses_it_and_writes_nothing(self, start, clock):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        stale = head_of(cid)
        with transaction.atomic():
            store.append(locked(cid), [token_event(1)], actor="someone else", now=clock())
        after_other = head_of(cid)

        with pytest.raises(store.HeadMoved):
            append_on(stale, cid, held, clock, 2)

        assert head_of(cid) == after_other
        assert [e.payload["persona"] for e in store.read(cid) if e.kind == "participant_token_issued"] == ["guest:1"]
        recorded, head = append_on(None, cid, held, clock, 2)  # locked, it chains after the other entry
        assert recorded[0].seq == after_other[0] + 1 and head == head_of(cid)
        assert verify(cid).ok and replay(cid).ok

    def test_a_lease_taken_over_refuses_it_and_the_locked_append_says_lease_lost(self, start, clock):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        head = head_of(cid)
        lease.release(conversation_id=cid, held=held)
        assert lease.acquire(conversation_id=cid, holder="another-process", now=clock(), seconds=60) is not None

        with pytest.raises(store.HeadMoved):
            append_on(head, cid, held, clock, 1)
        with pytest.raises(store.LeaseLost):
            append_on(None, cid, held, clock, 1)

        assert head_of(cid) == head
        assert verify(cid).ok and replay(cid).ok
