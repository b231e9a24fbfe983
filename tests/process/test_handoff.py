"""
Human handoff against real Daphne processes (PRODUCT.md "Human handoff": the agent falls silent, exactly).

A turn taken over in the middle of its tool rounds stops at its next step boundary; a pending
approval of a webhook is withdrawn by a request for a person, and its webhook is never sent; a
server killed (SIGKILL) between the take-over and the run's end leaves, after its restart, a run
that is handed off and not resumed. The rule under test goes on to a webhook after its sleeps, so a
run that took one more step would reach the receiver.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

RECOVERY_LIMIT = 10.0  # PRODUCT.md "Fault injection": recovery finishes on its own within 10 s of a restart
QUIET = 1.5  # how long a stopped run is watched for a step it must not take


def handoff_lab(webhook_url: str) -> dict[str, Any]:
    return {
        "name": "Handoff lab",
        "handoff": {"enabled": True, "model_tool": False},
        "model": {"provider": "scripted", "rules": [
            {"match": "check", "steps": [
                {"say": "Checking your order.", "call": "slow_check", "arguments": {"seconds": 1}},
                {"call": "slow_check", "arguments": {"seconds": 6}},
                {"call": "slow_check", "arguments": {"seconds": 1}},
                {"call": "send_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund sent: {result}."},
            ]},
            {"match": "refund", "steps": [
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund issued: {result}."},
            ]},
        ], "fallback": [{"say": "You said: {message}"}]},
        "tools": [
            {"name": "slow_check", "kind": "server", "action": "sleep"},
            {"name": "send_refund", "kind": "server", "action": "webhook", "url": webhook_url},
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": webhook_url, "requires_approval": True},
        ],
    }


class Desk:
    """One conversation with the handoff lab assistant on a server database of its own, and a receiver for its webhooks."""

    def __init__(self, database: ServerDatabase, receiver: Receiver):
        self.database, self.receiver, self.rows = database, receiver, Rows(database.url)
        [seed] = probe.run(database, "lab", config=handoff_lab(receiver.url), conversations=1, message="hello")["conversations"]
        self.cid, self.token = seed["conversation_id"], seed["token"]
        self.customer = Customer(self.cid, self.token)
        self.seeded = self.rows.events(self.cid)[-1]["seq"]

    def turn_id(self) -> str:
        return wait_for(lambda: self.rows.turns_after(self.cid, self.seeded), timeout=10, what="the turn")[0]

    def started(self, tool: str, nth: int = 1) -> dict[str, Any]:
        """Wait until the `nth` action_started of `tool` is committed; that entry."""
        def found():
            started = [e for e in self.rows.events(self.cid) if e["kind"] == "action_started" and e["payload"]["tool"] == tool]
            return started[nth - 1] if len(started) >= nth else None

        return wait_for(found, timeout=15, what=f"action {nth} of {tool} to start")

    def tools_started(self) -> list[str]:
        return [e["payload"]["tool"] for e in self.rows.events(self.cid) if e["kind"] == "action_started"]

    def take_over(self, server: DaphneServer) -> dict[str, Any]:
        return probe.run(self.database, "take_control", conversation_id=self.cid, staff="staff:dana", staff_name="Dana")

    def ask_for_a_person(self, server: DaphneServer) -> dict[str, Any]:
        return probe.run(self.database, "request_handoff", conversation_id=self.cid)

    def after(self, kind: str) -> list[dict[str, Any]]:
        """The entries after the (one) entry of `kind`."""
        events = self.rows.events(self.cid)
        [at] = [e["seq"] for e in events if e["kind"] == kind]
        return [e for e in events if e["seq"] > at]

    def checked(self) -> dict[str, Any]:
        return probe.run(self.database, "check", conversation_ids=[self.cid])[self.cid]


@pytest.fixture
def desk():
    database = ServerDatabase("handoff")
    try:
        with Receiver() as receiver:
            yield Desk(database, receiver)
    finally:
        database.drop()


@pytest.fixture
def server(desk):
    running = DaphneServer(desk.database).start()
    yield running
    running.kill()


def test_a_turn_taken_over_between_its_tool_rounds_stops_without_another_model_round(desk, server):
    desk.customer.send(server, "please check my order")
    turn_id = desk.turn_id()
    desk.started("slow_check", 2)  # one tool round done, the second sleeping

    control = desk.take_over(server)

    assert control["mode"] == "human" and control["staff"] == {"id": "staff:dana", "name": "Dana"}
    wait_for(lambda: desk.rows.turn_ended(turn_id, "handed_off"), timeout=10, what="the run to be handed off")
    time.sleep(QUIET)
    later = desk.after("control_taken")
    assert [e["kind"] for e in later] == ["turn_handed_off"]
    assert desk.rows.run(turn_id)["status"] == "handed_off"
    assert desk.tools_started() == ["slow_check", "slow_check"]
    assert desk.receiver.deliveries == []
    assert [m["text"] for m in desk.rows.messages(desk.cid)][-1] == "please check my order"
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked


def test_a_pending_webhook_approval_is_withdrawn_and_its_late_approval_refused(desk, server):
    desk.customer.send(server, "refund please")
    turn_id = desk.turn_id()
    wait_for(lambda: desk.rows.turn_ended(turn_id, "waiting"), timeout=10, what="the approval")
    run = desk.rows.run(turn_id)
    [usage] = desk.rows.usages(run["run_id"])

    control = desk.ask_for_a_person(server)

    assert control["mode"] == "queued"
    assert desk.rows.run(turn_id)["status"] == "handed_off"
    [withdrawn] = desk.rows.usages(run["run_id"])
    assert (withdrawn["status"], withdrawn["output"]) == ("withdrawn", {"withdrawn": True, "reason": "handed to a person"})
    late = httpx.post(
        f"{server.url}/v1/agent/conversations/{desk.cid}/runs/{run['run_id']}/results",
        headers={"Authorization": f"Bearer {desk.token}"}, timeout=15,
        json={"results": [{"call_id": usage["call_id"], "output": {
            "decision": "approve", "reviewed": {"tool": usage["tool"], "arguments": usage["arguments"]}}}]},
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "run_not_waiting", late.text
    time.sleep(QUIET)
    assert desk.receiver.deliveries == []
    assert not [e for e in desk.after("handoff_requested") if e["kind"] in ("action_started", "model_round", "approval_response")]
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked


def test_a_server_killed_between_the_take_over_and_the_runs_end_leaves_it_handed_off_and_not_resumed(desk):
    first = DaphneServer(desk.database).start()
    try:
        desk.customer.send(first, "please check my order")
        turn_id = desk.turn_id()
        desk.started("slow_check", 2)  # sleeping for 6 s: the take-over and the kill land inside it
        desk.take_over(first)
        first.kill()  # SIGKILL: the run's thread dies mid-sleep, before its next step boundary
    finally:
        first.kill()
    at_crash = desk.rows.run(turn_id)
    assert at_crash["status"] == "running"  # the kill did come between the take-over and the run's end
    assert desk.after("control_taken") == []

    restarted = DaphneServer(desk.database).start()
    started = time.monotonic()  # "after a restart": from the moment the new process answers
    try:
        wait_for(lambda: desk.rows.turn_ended(turn_id, "handed_off"), timeout=RECOVERY_LIMIT + 5,
                 what="the run to be handed off after the restart")
        recovery_seconds = time.monotonic() - started
        time.sleep(QUIET)
        later = desk.after("control_taken")
        state = httpx.get(f"{restarted.url}/v1/runner/conversation/{desk.cid}/messages",
                          headers={"Authorization": f"Bearer {desk.token}"}, timeout=10).json()
    finally:
        restarted.kill()

    assert recovery_seconds < RECOVERY_LIMIT
    assert [e["kind"] for e in later] == ["turn_handed_off"]
    assert desk.tools_started() == ["slow_check", "slow_check"]
    assert desk.receiver.deliveries == []
    assert state["run_status"] == "handed_off" and state["control"]["mode"] == "human"
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked

