"""
The artifact recovery fixture (seed 004): a real process dies at each of the three boundaries (before
the artifact exists, right after it was created, right after the application acknowledged it), a
server restarts without the fault, and the state is read before and after recovery.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from tests.people import probe
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

RECOVERY_LIMIT = 10.0
BOUNDARIES = ("before_artifact", "after_artifact", "after_artifact_ack")
CONFIG = {
    "name": "Reports",
    "model": {
        "provider": "scripted",
        "rules": [{"match": "report", "steps": [
            {"call": "make_report", "arguments": {"name": "orders.csv", "media_type": "text/csv", "content": "order,total\nA-1,20\n",
                                                  "source": "crm:orders", "revision": "r42"}},
            {"say": "Your report is ready."},
        ]}],
        "fallback": [{"say": "ok"}],
    },
    "tools": [{"name": "make_report", "kind": "server", "action": "write_artifact"}],
}


@dataclass
class Lab:
    conversations: dict[str, str] = field(default_factory=dict)  # boundary -> conversation id
    exit_codes: dict[str, int] = field(default_factory=dict)
    at_crash: dict[str, Any] = field(default_factory=dict)
    after_recovery: dict[str, Any] = field(default_factory=dict)
    recovery_seconds: float = 0.0
    ack_again: dict[str, Any] = field(default_factory=dict)


def _latest_run_status(url: str, conversation_id: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT status FROM workflow_logs WHERE conversation_id = %s ORDER BY dispatched_seq DESC LIMIT 1",
                           (conversation_id,)).fetchone()
    return row[0] if row else ""


@pytest.fixture(scope="module")
def lab():
    database = ServerDatabase("artifacts")
    seen = Lab()
    try:
        _, ids = probe.run(database, "start", config=CONFIG, count=len(BOUNDARIES))
        seen.conversations = dict(zip(BOUNDARIES, ids, strict=True))
        for boundary in ("before_artifact", "after_artifact"):
            seen.exit_codes[boundary], _ = probe.run(database, "turn", fault=boundary,
                                                     conversation_id=seen.conversations[boundary], message="a report please")
        probe.run(database, "turn", conversation_id=seen.conversations["after_artifact_ack"], message="a report please")
        seen.exit_codes["after_artifact_ack"], _ = probe.run(database, "acknowledge", fault="after_artifact_ack",
                                                             conversation_id=seen.conversations["after_artifact_ack"])
        _, seen.at_crash = probe.run(database, "observe", conversation_ids=ids)

        started = time.monotonic()
        server = DaphneServer(database).start()
        try:
            deadline = started + RECOVERY_LIMIT + 10
            while any(_latest_run_status(database.url, cid) != "completed" for cid in ids):
                assert time.monotonic() < deadline, "the interrupted turns did not recover:\n" + server.output()
                time.sleep(0.1)
            seen.recovery_seconds = time.monotonic() - started
        finally:
            server.stop()
        _, final = probe.run(database, "acknowledge_and_observe", conversation_id=seen.conversations["after_artifact_ack"],
                             conversation_ids=ids)
        seen.ack_again, seen.after_recovery = final["acknowledged"], final["observed"]
        yield seen
    finally:
        database.drop()


def at_crash(lab, boundary):
    return lab.at_crash[lab.conversations[boundary]]


def recovered(lab, boundary):
    return lab.after_recovery[lab.conversations[boundary]]


class TestTheCrashes:
    @pytest.mark.parametrize("boundary", BOUNDARIES)
    def test_the_process_really_died_at_the_boundary(self, lab, boundary):
        assert lab.exit_codes[boundary] == 137

    def test_recovery_finished_within_its_limit(self, lab):
        assert lab.recovery_seconds < RECOVERY_LIMIT + 5


class TestBeforeTheArtifactExists:
    def test_at_the_crash_the_call_is_pending_with_no_artifact(self, lab):
        [call] = at_crash(lab, "before_artifact")["recovery"]

        assert (call["outcome"], call["call_status"], call["artifacts"]) == ("pending", "started", [])

    def test_recovery_runs_the_call_again_and_makes_exactly_one_artifact(self, lab):
        state = recovered(lab, "before_artifact")

        [call] = state["recovery"]
        assert (call["outcome"], call["call_status"]) == ("unacknowledged", "succeeded")
        assert state["artifacts_created"] == 1 and len(state["files"]) == 1
        assert state["replay_ok"]


class TestAfterTheArtifactWasCreated:
    def test_at_the_crash_it_exists_unacknowledged_though_the_call_never_finished(self, lab):
        [call] = at_crash(lab, "after_artifact")["recovery"]

        assert (call["outcome"], call["call_status"], len(call["artifacts"])) == ("unacknowledged", "started", 1)

    def test_recovery_finishes_the_call_with_the_same_artifact_and_no_duplicate(self, lab):
        before = at_crash(lab, "after_artifact")["recovery"][0]["artifacts"][0]
        state = recovered(lab, "after_artifact")

        [call] = state["recovery"]
        assert (call["outcome"], call["call_status"]) == ("unacknowledged", "succeeded")
        assert [a["artifact_id"] for a in call["artifacts"]] == [before["artifact_id"]]
        assert state["artifacts_created"] == 1 and len(state["files"]) == 1
        assert state["replay_ok"]


class TestAfterTheApplicationAcknowledged:
    def test_at_the_crash_the_receipt_is_recorded(self, lab):
        [call] = at_crash(lab, "after_artifact_ack")["recovery"]

        assert call["outcome"] == "acknowledged" and call["artifacts"][0]["acknowledged_by"] == "shop:backend"

    def test_acknowledging_again_after_the_restart_records_nothing_new(self, lab):
        state = recovered(lab, "after_artifact_ack")

        assert lab.ack_again["status"] == "acknowledged"
        assert (state["acknowledgments"], state["artifacts_created"]) == (1, 1)
        assert state["recovery"][0]["outcome"] == "acknowledged" and state["replay_ok"]
