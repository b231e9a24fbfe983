"""
Continue after an unknown outcome, with a server really killed while a webhook is in flight.

A side-effecting action whose outcome nobody recorded is never done twice: a re-attempt goes out
under its first attempt's Idempotency-Key (and asks again for approval, saying so), and once staff
record that it was done, Continue goes on from the recorded result without sending it again.
"""

from __future__ import annotations

import contextlib
from typing import Any

import httpx
import pytest

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres


def refund_desk(webhook_url: str, *, approval: bool) -> dict[str, Any]:
    return {
        "name": "Refund desk",
        "model": {"provider": "scripted", "rules": [{"match": "refund", "steps": [
            {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
            {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
            {"say": "Refund issued: {result}."},
        ]}], "fallback": [{"say": "You said: {message}"}]},
        "tools": [
            {"name": "lookup_order", "kind": "server", "action": "echo"},
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": webhook_url, "requires_approval": approval},
        ],
    }


class Desk:
    """One conversation on its own server database, whose refund turn a real crash left with an unknown outcome."""

    def __init__(self, database: ServerDatabase, receiver: Receiver, *, approval: bool):
        self.database, self.receiver, self.rows = database, receiver, Rows(database.url)
        [seed] = probe.run(database, "lab", config=refund_desk(receiver.url, approval=approval), conversations=1,
                           message="hello")["conversations"]
        self.customer = Customer(seed["conversation_id"], seed["token"])
        self.cid, self.token = seed["conversation_id"], seed["token"]
        self.seeded = self.rows.events(self.cid)[-1]["seq"]
        faulty = DaphneServer(database, env={"WAYPOINT_FAULT_AT": "during_action"}).start()
        try:
            self.customer.send(faulty, "refund please")
            self.turn_id = wait_for(lambda: self.rows.turns_after(self.cid, self.seeded), timeout=10, what="the turn")[0]
            if approval:
                self.approve(faulty)
            assert faulty.wait_exit(timeout=20) == 137
        finally:
            faulty.kill()
        self.server = DaphneServer(database).start()
        wait_for(lambda: self.rows.turn_ended(self.turn_id, "interrupted"), timeout=15, what="the turn to be quarantined")

    def state(self) -> dict[str, Any]:
        response = httpx.get(f"{self.server.url}/v1/runner/conversation/{self.cid}/messages",
                             headers={"Authorization": f"Bearer {self.token}"}, timeout=10)
        response.raise_for_status()
        return response.json()

    def approve(self, server: DaphneServer) -> None:
        """Approve the pending refund over the API (the process may die while it answers)."""
        run = wait_for(lambda: (r := self.rows.run(self.rows.turns_after(self.cid, self.seeded)[-1])) and r["pending"] and r,
                       timeout=10, what="the approval")
        [usage] = [u for u in self.rows.usages(run["run_id"]) if u["status"] == "pending"]
        # The faulty process may die while the webhook it started is in flight, before it answers.
        with contextlib.suppress(httpx.TransportError):
            httpx.post(
                f"{server.url}/v1/agent/conversations/{self.cid}/runs/{run['run_id']}/results",
                headers={"Authorization": f"Bearer {self.token}"}, timeout=15,
                json={"results": [{"call_id": usage["call_id"], "output": {
                    "decision": "approve", "reviewed": {"tool": usage["tool"], "arguments": usage["arguments"]}}}]},
            ).raise_for_status()

    def follow_up(self) -> str:
        return wait_for(lambda: self.rows.turns_after(self.cid, self.seeded)[1:], timeout=10, what="the next turn")[0]

    def keys(self) -> list[str]:
        return [next(v for k, v in d["headers"].items() if k.lower() == "idempotency-key") for d in self.receiver.deliveries]

    def checked(self) -> dict[str, Any]:
        return probe.run(self.database, "check", conversation_ids=[self.cid])[self.cid]

    def close(self) -> None:
        self.server.kill()


@pytest.fixture
def desk():
    """Make a `Desk` (each on its own database and receiver); everything is stopped and dropped afterwards."""
    made: list[Desk] = []
    with contextlib.ExitStack() as cleanup:
        def make(*, approval: bool) -> Desk:
            database = ServerDatabase("unknown")
            cleanup.callback(database.drop)
            receiver = cleanup.enter_context(Receiver())
            made.append(Desk(database, receiver, approval=approval))
            cleanup.callback(made[-1].close)
            return made[-1]

        yield make


def test_with_approval_continue_asks_again_for_a_reattempt_and_approving_sends_the_first_key(desk):
    d = desk(approval=True)
    first_key = f"{d.turn_id}:call_2_1"
    assert d.keys() == [first_key]

    d.customer.continue_(d.server)
    again = d.follow_up()
    wait_for(lambda: d.rows.turn_ended(again, "waiting"), timeout=10, what="the re-attempt's approval")

    [pending] = d.state()["pending_client_actions"]
    assert pending["tool"] == "issue_refund" and pending["reattempt_of"]["turn_id"] == d.turn_id
    assert pending["reattempt_of"]["call_id"] == "call_2_1" and pending["reattempt_of"]["attempted_at"]
    d.approve(d.server)
    wait_for(lambda: d.rows.turn_ended(again, "completed"), timeout=10, what="the re-attempt's turn")

    assert d.keys() == [first_key, first_key]
    assert d.rows.messages(d.cid)[-1]["text"] == 'Refund issued: {"refund_id": "R-1"}.'
    checked = d.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"]


def test_marked_done_by_staff_then_continue_sends_nothing_again_and_replies_with_the_recorded_result(desk):
    d = desk(approval=False)
    first_key = f"{d.turn_id}:call_2_1"
    assert d.keys() == [first_key]
    run = d.rows.run(d.turn_id)
    assert run["quarantined"]

    probe.run(d.database, "resolve", run_id=run["run_id"], resolution="done", note="R-1 exists in the shop",
              result='{"refund_id": "R-1"}')
    assert "Our team has since confirmed that it went through" in d.customer.page(d.server)
    d.customer.continue_(d.server)
    again = d.follow_up()
    wait_for(lambda: d.rows.turn_ended(again, "completed"), timeout=10, what="the continued turn")

    assert d.keys() == [first_key]
    assert d.rows.messages(d.cid)[-1]["text"] == (
        'Refund issued: {"note": "confirmed by staff after an interruption", "result": {"refund_id": "R-1"}, "status": "done"}.')
    assert not [e for e in d.rows.events(d.cid) if e["turn_id"] == again and e["kind"] == "action_started"]
    checked = d.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"]
