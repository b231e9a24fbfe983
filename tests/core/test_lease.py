"""The writer lease (`apps/conversations/lease.py`): who may take it, with which version, and who had it."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.conversations import lease
from apps.conversations.models import Lease

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def take(cid, clock, holder="writer-a", **kwargs):
    return lease.acquire(conversation_id=cid, holder=holder, now=clock(), seconds=60, **kwargs)


def row(cid):
    return Lease.objects.filter(conversation_id=cid).values_list("holder", "version").get()


@pytest.fixture
def cid(start):
    return start("hello")["conversation_id"]


@pytest.fixture
def released(cid, clock):
    """A conversation whose lease a writer took and gave up."""
    held = take(cid, clock, holder="writer-old")
    if held is None:  # the turn's own drive still had it
        pytest.fail("the lease was not free after the first turn")
    lease.release(conversation_id=cid, held=held)
    return cid


class TestAcquire:
    def test_a_lease_given_up_is_taken_in_one_statement_with_the_next_version(self, released, clock):
        before = Lease.objects.get(conversation_id=released).version

        with CaptureQueriesContext(connection) as sent:
            held = take(released, clock)

        assert len(sent) == 1
        assert held == lease.Held(holder="writer-a", version=before + 1, previous_holder="")
        assert row(released) == ("writer-a", before + 1)

    def test_a_live_lease_of_another_writer_is_refused_and_left_as_it_is(self, released, clock):
        held = take(released, clock, holder="writer-b")

        assert take(released, clock) is None
        assert row(released) == ("writer-b", held.version)

    def test_its_own_live_lease_is_taken_again_unless_only_a_free_one_will_do(self, released, clock):
        first = take(released, clock)

        assert take(released, clock, only_free=True) is None
        again = take(released, clock)
        assert again == lease.Held(holder="writer-a", version=first.version + 1, previous_holder="")

    def test_an_expired_lease_is_taken_over_naming_the_writer_that_had_it(self, released, clock):
        dead = take(released, clock, holder="writer-dead")
        Lease.objects.filter(conversation_id=released).update(expires_at=clock() - timedelta(seconds=1))

        held = take(released, clock, only_free=True)

        assert held == lease.Held(holder="writer-a", version=dead.version + 1, previous_holder="writer-dead")

    def test_a_conversation_without_a_lease_row_gets_one_at_version_one(self, cid, clock):
        Lease.objects.filter(conversation_id=cid).delete()

        assert take(cid, clock) == lease.Held(holder="writer-a", version=1, previous_holder="")
        assert row(cid) == ("writer-a", 1)

    def test_of_writers_racing_for_a_free_lease_exactly_one_gets_it(self, released, clock):
        got, ready = [], threading.Barrier(4)

        def race(name):
            try:
                ready.wait()
                got.append(take(released, clock, holder=name))
            finally:
                connection.close()

        threads = [threading.Thread(target=race, args=(f"writer-{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        winners = [h for h in got if h is not None]
        assert len(winners) == 1
        assert row(released) == (winners[0].holder, winners[0].version)
