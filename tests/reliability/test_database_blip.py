"""
A PostgreSQL restart while an action is in flight heals: the runner commits the outcome it holds on
a fresh connection, so the turn completes with one delivery and is not quarantined, and a slow step
is not run again.

The restart is of a cluster this module starts for itself on another port, never the shared one.
"""

from __future__ import annotations

import pytest

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, OwnPostgres, ServerDatabase

pytestmark = pytest.mark.postgres

SLOW = 3.0  # seconds the shop and the sleep step take: the restart happens inside them


def slow_desk(webhook_url: str) -> dict:
    return {
        "name": "Slow desk",
        "model": {"provider": "scripted", "rules": [
            {"match": "refund", "steps": [{"call": "issue_refund", "arguments": {"order_id": "A-1"}}, {"say": "Refund issued: {result}."}]},
            {"match": "wait", "steps": [{"call": "pause", "arguments": {"seconds": SLOW}}, {"say": "Waited: {result}."}]},
        ], "fallback": [{"say": "You said: {message}"}]},
        "tools": [
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": webhook_url},
            {"name": "pause", "kind": "server", "action": "sleep"},
        ],
    }


@pytest.fixture(scope="module")
def blip():
    cluster = OwnPostgres()
    try:
        with Receiver(delay=SLOW) as receiver:
            database = ServerDatabase("blip", cluster=cluster.url)
            made = probe.run(database, "lab", config=slow_desk(receiver.url), conversations=2, message="hello")
            server = DaphneServer(database).start()
            try:
                yield cluster, receiver, database, server, made["conversations"]
            finally:
                server.kill()
                database.drop()
    finally:
        cluster.close()


def restart_during(cluster: OwnPostgres, rows: Rows, seed: dict, server: DaphneServer, message: str, *, started) -> str:
    """Send `message`, restart PostgreSQL once `started()` says the slow step is under way; the turn's id."""
    seeded = rows.events(seed["conversation_id"])[-1]["seq"]
    Customer(seed["conversation_id"], seed["token"]).send(server, message)
    wait_for(started, timeout=15, what="the slow step to start")
    cluster.restart()
    return wait_for(lambda: rows.turns_after(seed["conversation_id"], seeded), timeout=15, what="the turn")[0]


def test_a_restart_mid_webhook_leaves_the_turn_completed_with_one_delivery(blip):
    cluster, receiver, database, server, (seed, _) = blip
    rows = Rows(database.url)

    turn_id = restart_during(cluster, rows, seed, server, "refund please", started=lambda: receiver.deliveries)

    wait_for(lambda: rows.turn_ended(turn_id, "completed"), timeout=30, what="the turn to complete")
    assert len(receiver.deliveries) == 1
    run = rows.run(turn_id)
    assert not run["quarantined"]
    events = [e for e in rows.events(seed["conversation_id"]) if e["turn_id"] == turn_id]
    assert [e["kind"] for e in events].count("action_finished") == 1 and "turn_ambiguous" not in [e["kind"] for e in events]
    assert rows.messages(seed["conversation_id"])[-1]["text"] == 'Refund issued: {"refund_id": "R-1"}.'
    checked = probe.run(database, "check", conversation_ids=[seed["conversation_id"]])[seed["conversation_id"]]
    assert checked["replay"]["ok"] and checked["verify"]["ok"]


def test_a_restart_mid_sleep_does_not_run_the_step_again(blip):
    cluster, _, database, server, (_, seed) = blip
    rows = Rows(database.url)

    def sleeping() -> bool:
        return any(e["kind"] == "action_started" and e["payload"]["tool"] == "pause" for e in rows.events(seed["conversation_id"]))

    turn_id = restart_during(cluster, rows, seed, server, "wait a moment", started=sleeping)

    wait_for(lambda: rows.turn_ended(turn_id, "completed"), timeout=30, what="the turn to complete")
    events = [e for e in rows.events(seed["conversation_id"]) if e["turn_id"] == turn_id]
    assert [e["payload"].get("attempt") for e in events if e["kind"] == "action_started"] == [1]
    assert "turn_retried" not in [e["kind"] for e in events]
