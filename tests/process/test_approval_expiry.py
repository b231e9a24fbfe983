"""
An approval's expiry against real Daphne processes (PRODUCT.md "Approvals: expiry, edits, approvers"):
the durable clock resolves it after a server was killed (SIGKILL) and another started, and two
servers whose clocks both run resolve each approval once.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from tests.process import probe
from tests.process.outside import Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

RECOVERY_LIMIT = 10.0  # PRODUCT.md "Fault injection": recovery finishes on its own within 10 s of a restart


def expiry_lab(seconds: int) -> dict:
    return {
        "name": "Expiry lab",
        "model": {"provider": "scripted", "rules": [{"match": "refund", "steps": [
            {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
            {"say": "Too late: nobody approved it.", "when": "expired"},
            {"say": "Refund issued."},
        ]}], "fallback": [{"say": "ok"}]},
        "tools": [{"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
                   "approval": {"expires_in_seconds": seconds}}],
    }


def resolutions(rows: Rows, cid: str) -> list[dict]:
    return [e for e in rows.events(cid) if e["kind"] == "approval_response"]


def expires_at(rows: Rows, cid: str) -> datetime:
    [request] = [e for e in rows.events(cid) if e["kind"] == "approval_request"]
    return datetime.fromisoformat(request["payload"]["expires_at"])


def test_an_approval_expires_after_a_kill_and_a_restart_once():
    database = ServerDatabase("expiry-crash")
    try:
        # Long enough for a server to come up and be killed before it is due, on a busy machine too.
        [seed] = probe.run(database, "lab", config=expiry_lab(20), conversations=1, message="refund please")["conversations"]
        cid, rows = seed["conversation_id"], Rows(database.url)
        due = expires_at(rows, cid)

        first = DaphneServer(database).start()
        first.kill()  # SIGKILL: no clean shutdown, whatever it was doing
        assert datetime.now(UTC) < due, "the server came up too slowly to be killed before the approval was due"
        assert resolutions(rows, cid) == []

        time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 1)
        assert resolutions(rows, cid) == []  # nobody's clock ran: nothing happened while no server was up

        second = DaphneServer(database).start()
        try:
            wait_for(lambda: resolutions(rows, cid), timeout=RECOVERY_LIMIT, what="the expiry after the restart")
            wait_for(lambda: rows.messages(cid)[-1]["role"] == "assistant", timeout=RECOVERY_LIMIT, what="the reply")
        finally:
            second.kill()
        [expired] = resolutions(rows, cid)
        assert expired["payload"]["decision"] == "expired" and expired["actor"] == "system"
        assert rows.messages(cid)[-1]["text"] == "Too late: nobody approved it."
        checked = probe.run(database, "check", conversation_ids=[cid])[cid]
        assert checked["replay"]["ok"] and checked["verify"]["ok"], checked
    finally:
        database.drop()


def test_two_servers_resolve_each_approval_once():
    database = ServerDatabase("expiry-two")
    try:
        seeds = probe.run(database, "lab", config=expiry_lab(3), conversations=6, message="refund please")["conversations"]
        rows = Rows(database.url)
        servers = [DaphneServer(database).start(), DaphneServer(database).start()]
        try:
            for seed in seeds:
                wait_for(lambda cid=seed["conversation_id"]: rows.messages(cid)[-1]["role"] == "assistant",
                         timeout=RECOVERY_LIMIT + 5, what="every approval to expire and its turn to end")
            # Both clocks pass again: neither may resolve anything twice. A pass that finds nothing leaves no trace.
            time.sleep(1.5)
        finally:
            for server in servers:
                server.kill()
        for seed in seeds:
            cid = seed["conversation_id"]
            assert [e["payload"]["decision"] for e in resolutions(rows, cid)] == ["expired"]
            assert [e["kind"] for e in rows.events(cid)].count("turn_complete") == 1
        checked = probe.run(database, "check", conversation_ids=[s["conversation_id"] for s in seeds])
        assert all(c["replay"]["ok"] and c["verify"]["ok"] for c in checked.values()), checked
    finally:
        database.drop()
