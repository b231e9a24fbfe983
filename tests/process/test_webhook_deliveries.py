"""
Outgoing webhooks across real processes: a server hard-killed (exit 137) after the turn's last
commit, or right after a receiver answered, delivers after a restart with the same `webhook-id`;
two servers on one PostgreSQL database share the outbox without sending anything twice.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from standardwebhooks.webhooks import Webhook

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

CHATTY = {"name": "Hooks", "model": {"provider": "scripted", "rules": [], "fallback": [{"say": "You said: {message}"}]}, "tools": []}
# A claim lapses 2 s after it was taken, so the restarted server takes the row up quickly.
QUICK = {"WAYPOINT_WEBHOOK_TIMEOUT_SECONDS": "2", "WAYPOINT_WEBHOOK_CLAIM_MARGIN_SECONDS": "0", "WAYPOINT_WEBHOOK_POLL_SECONDS": "0.2"}


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


@pytest.fixture
def database():
    made = ServerDatabase("hooks")
    yield made
    made.drop()


def verified(receiver: Receiver, secret: str) -> list[tuple[str, dict]]:
    """Every delivery received so far, each checked by the standardwebhooks library: (webhook-id, event)."""
    out = []
    for got in list(receiver.deliveries):
        headers = {k.lower(): v for k, v in got["headers"].items()}
        out.append((headers["webhook-id"], Webhook(secret).verify(got["body"], headers)))
    return out


def outbox(rows: Rows) -> list[dict]:
    return rows._all("SELECT webhook_id, type, status, attempts, seq, conversation_id FROM webhook_deliveries ORDER BY id")


@pytest.mark.parametrize("boundary", ["after_batch_two", "after_webhook_sent"])
def test_a_killed_server_delivers_after_its_restart_with_the_same_id(database, receiver, boundary):
    rows = Rows(database.url)
    [seed] = probe.run(database, "lab", config=CHATTY, conversations=1, message="hello")["conversations"]
    endpoint = probe.run(database, "webhook_endpoint", url=receiver.url, events=["turn.completed"])
    customer = Customer(seed["conversation_id"], seed["token"])

    faulty = DaphneServer(database, env={"WAYPOINT_FAULT_AT": boundary, **QUICK}).start()
    try:
        customer.send(faulty, "hello again")
        assert faulty.wait_exit(timeout=30) == 137, faulty.output()
    finally:
        faulty.kill()
    before = verified(receiver, endpoint["secret"])
    [row] = outbox(rows)  # committed with the turn's last entry, whatever the process did next
    assert row["status"] == "pending"
    if boundary == "after_webhook_sent":
        assert [i for i, _ in before] == [row["webhook_id"]]  # sent, but the process died before recording it

    server = DaphneServer(database, env=QUICK).start()
    try:
        wait_for(lambda: outbox(rows)[0]["status"] == "delivered", timeout=20, what="the delivery after the restart")
    finally:
        server.stop()
    received = verified(receiver, endpoint["secret"])
    assert {i for i, _ in received} == {row["webhook_id"]}
    assert len(received) == len(before) + 1
    event = received[-1][1]
    assert event["type"] == "turn.completed" and event["data"]["reply"] == "You said: hello again"
    completed = [e for e in rows.events(seed["conversation_id"]) if e["kind"] == "turn_complete"][-1]
    assert event["data"]["seq"] == completed["seq"] == row["seq"]
    assert event["data"]["conversation_id"] == seed["conversation_id"]


def test_two_servers_share_the_outbox_and_send_each_event_once(database):
    with Receiver(delay=0.1) as receiver:
        endpoint = probe.run(database, "webhook_endpoint", url=receiver.url, events=[])
        probe.run(database, "lab", config=CHATTY, conversations=12, message="hello")
        rows = Rows(database.url)
        expected = {r["webhook_id"] for r in outbox(rows)}
        assert len(expected) == 48  # conversation.started, turn.completed and their two messages' message.created, of each

        servers = [DaphneServer(database, env={**QUICK, "WAYPOINT_WEBHOOK_WORKERS": "3"}) for _ in range(2)]
        for server in servers:
            server.start(wait=False)
        try:
            for server in servers:
                server.wait_ready()
            wait_for(lambda: all(r["status"] == "delivered" for r in outbox(rows)), timeout=60, what="every delivery")
            # Room for a second send of anything, were one to come: an attempt whose claim lapsed is on no record.
            time.sleep(1)
        finally:
            for server in servers:
                server.stop()
        received = verified(receiver, endpoint["secret"])
    counts = Counter(i for i, _ in received)
    assert set(counts) == expected
    assert [i for i, n in counts.items() if n > 1] == []
    assert all(r["attempts"] == 1 for r in outbox(rows)), json.dumps(outbox(rows), default=str)


def listening(rows: Rows) -> bool:
    """Whether a server listens for the outbox's commits: a session of the database whose last statement was the LISTEN."""
    return bool(rows._all("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN waypoint_webhooks'"))


def test_a_commit_in_another_process_wakes_an_idle_server_at_once(database):
    with Receiver() as receiver:
        probe.run(database, "webhook_endpoint", url=receiver.url, events=["conversation.started"])
        # It looks by itself only once a minute: what it sends before then, a commit woke it for.
        server = DaphneServer(database, env={"WAYPOINT_WEBHOOK_POLL_SECONDS": "60"}).start()
        try:
            # It looks as it loads and right after its LISTEN; the commit below, another process's, comes seconds later.
            wait_for(lambda: listening(Rows(database.url)), timeout=10, what="the server to listen for commits")
            probe.run(database, "lab", config=CHATTY, conversations=1, message="hello")

            wait_for(lambda: len(receiver.deliveries) == 1, timeout=15, what="the delivery, long before the next look")
        finally:
            server.stop()
