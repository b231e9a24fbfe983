"""
The runner's append on the head it wrote last (`store.append_optimistic`, and `store.commit_optimistic`
which also commits it): one round trip when nobody else wrote, a clean refusal (and nothing written)
when somebody did or the lease moved on.
"""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.conversations import lease
from apps.conversations.actions import locked
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.ledger.types import ParticipantTokenIssued, TurnFailed

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def token_event(n: int) -> ParticipantTokenIssued:
    return ParticipantTokenIssued(persona=f"guest:{n}", token_id=f"tok_{n}", edge="api", permissions=["read"], issued_by="test")


def head_of(cid: str) -> tuple[int, str]:
    return Conversation.objects.filter(id=cid).values_list("head_seq", "head_hash").get()


def held_lease(cid: str, clock) -> lease.Held:
    held = lease.acquire(conversation_id=cid, holder="test-writer", now=clock(), seconds=60)
    assert held is not None
    return held


def in_a_transaction(head, cid: str, held: lease.Held, clock, n: int):
    with transaction.atomic():
        return store.append_optimistic(head, held.token, conversation_id=cid, events=[token_event(n)], turn_id="", actor="test",
                                       now=clock())


def committed(head, cid: str, held: lease.Held, clock, n: int):
    if head is None:  # commit_optimistic takes a known head; the runner locks the row otherwise
        return in_a_transaction(head, cid, held, clock, n)
    return store.commit_optimistic(head, held.token, conversation_id=cid, events=[token_event(n)], turn_id="", actor="test",
                                   now=clock())


@pytest.fixture(params=[in_a_transaction, committed], ids=["append_optimistic", "commit_optimistic"])
def append_on(request):
    return request.param


class TestAppendOnAKnownHead:
    def test_it_appends_and_returns_the_new_head(self, start, clock, append_on):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        before = head_of(cid)

        recorded, head = append_on(before, cid, held, clock, 1)

        assert [r.seq for r in recorded] == [before[0] + 1]
        assert head == head_of(cid)
        recorded, head = append_on(head, cid, held, clock, 2)
        assert head == head_of(cid) and head[0] == before[0] + 2
        assert verify(cid).ok and replay(cid).ok

    def test_another_writer_first_refuses_it_and_writes_nothing(self, start, clock, append_on):
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

    def test_a_lease_taken_over_refuses_it_and_the_locked_append_says_lease_lost(self, start, clock, append_on):
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


class TestCommitInOneRoundTrip:
    def test_the_append_and_what_follows_it_commit_in_one_round_trip(self, start, clock):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        head = head_of(cid)

        with CaptureQueriesContext(connection) as sent:
            recorded, after = store.commit_optimistic(head, held.token, conversation_id=cid, events=[token_event(1)],
                                                      turn_id="", actor="test", now=clock(),
                                                      then=[lease.releasing(conversation_id=cid, held=held)])

        assert len(sent) == 1 and not connection.in_atomic_block
        assert after == head_of(cid) and after[0] == recorded[0].seq == head[0] + 1
        assert lease.acquire(conversation_id=cid, holder="another-process", now=clock(), seconds=60, only_free=True) is not None
        assert verify(cid).ok and replay(cid).ok

    def test_a_refused_head_update_rolls_back_what_went_with_it(self, start, clock):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        head = head_of(cid)
        taken = lease.Held(holder=held.holder, version=held.version + 1, previous_holder="")  # a lease this writer does not hold

        with pytest.raises(store.HeadMoved):
            store.commit_optimistic(head, taken.token, conversation_id=cid, events=[token_event(1)], turn_id="", actor="test",
                                    now=clock(), then=[lease.releasing(conversation_id=cid, held=held)])

        assert head_of(cid) == head
        assert not [e for e in store.read(cid) if e.kind == "participant_token_issued"]
        assert lease.acquire(conversation_id=cid, holder="another-process", now=clock(), seconds=60) is None  # still held

    def test_an_update_that_finds_no_row_writes_nothing(self, start, clock):
        cid = start("hello")["conversation_id"]
        held = held_lease(cid, clock)
        head = head_of(cid)

        with pytest.raises(ValueError, match="does not exist"):
            store.commit_optimistic(head, held.token, conversation_id=cid,
                                    events=[token_event(1), TurnFailed(run_id="run_nobody_started", error="no such run")],
                                    turn_id="", actor="test", now=clock())

        assert head_of(cid) == head
        assert not [e for e in store.read(cid) if e.kind in ("participant_token_issued", "turn_failed")]
        assert verify(cid).ok and replay(cid).ok
