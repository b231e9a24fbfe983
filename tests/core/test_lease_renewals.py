"""
The lease renewals of a process's drives (docs/durability.md, "heartbeat"): one thread renews every
lease its drives hold, each every third of the lease's length, and stops when the drive lets go.
"""

import threading
import time

import pytest
from django.utils import timezone

from apps.agent import runner
from apps.conversations import lease

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

LEASE = 1.5  # renewed every 0.5 s: room for a loaded machine's slowest renewal


def taken(cid, holder):
    return lease.acquire(conversation_id=cid, holder=holder, now=timezone.now(), seconds=LEASE)


def taken_by_another(cid):
    return lease.acquire(conversation_id=cid, holder="another-process", now=timezone.now(), seconds=LEASE)


@pytest.fixture
def conversations(start, settings):
    settings.WAYPOINT_LEASE_SECONDS = LEASE
    cids = [start(f"hello {n}")["conversation_id"] for n in range(3)]
    for cid in cids:  # the drives of those turns are over: their leases are free
        held = taken_by_another(cid)
        assert held is not None
        lease.release(conversation_id=cid, held=held)
    return cids


class TestRenewals:
    def test_every_kept_lease_outlives_its_length_and_a_dropped_one_expires(self, conversations):
        held = {cid: taken(cid, runner.HOLDER) for cid in conversations}
        for cid, h in held.items():
            runner._renewals.keep(cid, h)
        dropped = conversations[0]
        try:
            time.sleep(LEASE * 0.5)
            runner._renewals.drop(dropped)
            time.sleep(LEASE * 2)
            assert all(taken_by_another(cid) is None for cid in conversations[1:]), "a kept lease lapsed"
            assert taken_by_another(dropped) is not None, "a dropped lease was still renewed"
        finally:
            for cid in conversations:
                runner._renewals.drop(cid)

    def test_a_lease_taken_by_another_writer_is_not_taken_back(self, conversations):
        cid = conversations[0]
        mine = taken(cid, runner.HOLDER)
        runner._renewals.keep(cid, mine)
        try:
            time.sleep(LEASE * 1.2)  # expired had it not been renewed
            assert taken_by_another(cid) is None
            lease.release(conversation_id=cid, held=mine)  # as a drive's last commit gives it up
            theirs = taken_by_another(cid)
            assert theirs is not None
            time.sleep(LEASE * 0.8)
            # Their lease is theirs alone: our renewals found ours gone and did not touch it.
            assert lease.renew(conversation_id=cid, held=theirs, now=timezone.now(), seconds=LEASE)
            assert not lease.renew(conversation_id=cid, held=mine, now=timezone.now(), seconds=LEASE)
            assert cid not in runner._renewals._due, "a lease found gone is still renewed"
        finally:
            runner._renewals.drop(cid)

    def test_drives_start_no_thread_of_their_own(self, start, monkeypatch):
        started = []
        original = threading.Thread.start

        def recording(thread):
            started.append(thread.name)
            original(thread)

        monkeypatch.setattr(threading.Thread, "start", recording)
        for n in range(5):
            start(f"hello {n}")
        assert len(started) <= 1, started  # at most the renewals' own, once per process
