"""
Human handoff against real Daphne processes (PRODUCT.md "Human handoff": the agent falls silent, exactly).

A turn taken over in the middle of its tool rounds stops at its next step boundary; a webhook
already sent when the take-over came finishes on the record, and the run stops there; a pending
approval of a webhook is withdrawn by a request for a person, and its webhook is never sent; a
server killed (SIGKILL) between a take-over (or a customer's request for a person) and the run's
end leaves, after its restart, a run that is handed off and not resumed. The rule under test goes on to a webhook after its sleeps, so a
run that took one more step would reach the receiver.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

RECOVERY_LIMIT = 10.0  # PRODUCT.md "Fault injection": recovery finishes on its own within 10 s of a restart
# How long a stopped run is watched for a step it must not take. Nothing marks the moment such a step
# would have come: the run's last entry gives its lease up in the same commit, and neither the end of a
# drive nor a recovery pass that finds nothing leaves a trace to wait for.
QUIET = 1.5


def handoff_lab(webhook_url: str) -> dict[str, Any]:
    return {
        "name": "Handoff lab",
        "handoff": {"enabled": True, "model_tool": False},
        "model": {"provider": "scripted", "rules": [
            {"match": "check", "steps": [
                {"say": "Checking your order.", "call": "slow_check", "arguments": {"seconds": 1}},
                {"call": "slow_check", "arguments": {"seconds": 4}},
                {"call": "slow_check", "arguments": {"seconds": 1}},
                {"call": "send_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund sent: {result}."},
            ]},
            {"match": "send it", "steps": [
                {"call": "send_refund", "arguments": {"order_id": "A-2", "amount": 5}},
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


class Lab:
    """A server database with conversations of the handoff lab assistant, an API key, and the receiver of its webhooks."""

    def __init__(self, database: ServerDatabase, receiver: Receiver, *, conversations: int):
        self.database, self.receiver = database, receiver
        self.key = database.manage("create_api_key", "handoff-lab").strip().splitlines()[-1]
        self.seeds = probe.run(database, "lab", config=handoff_lab(receiver.url), conversations=conversations,
                               message="hello")["conversations"]

    def desk(self) -> Desk:
        return Desk(self, self.seeds.pop())


class Desk:
    """One conversation of a `Lab`, driven from the outside: the customer, the API, plain SQL reads."""

    def __init__(self, lab: Lab, seed: dict[str, str]):
        self.database, self.receiver, self.key = lab.database, lab.receiver, lab.key
        self.rows = Rows(self.database.url)
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

    def post(self, server: DaphneServer, path: str, body: dict[str, Any], *, credential: str) -> httpx.Response:
        return httpx.post(f"{server.url}/v1/agent/conversations/{self.cid}/{path}", json=body,
                          headers={"Authorization": f"Bearer {credential}"}, timeout=15)

    def take_over(self, server: DaphneServer) -> dict[str, Any]:
        """Dana takes the conversation over through the API, as the embedding application's staff tool would."""
        taken = self.post(server, "control", {"action": "take", "staff": "staff:dana", "name": "Dana"}, credential=self.key)
        assert taken.status_code == 200, taken.text
        return taken.json()["control"]

    def ask_for_a_person(self, server: DaphneServer) -> dict[str, Any]:
        """The customer asks for a person with their conversation token (the SDK's requestHandoff())."""
        asked = self.post(server, "handoff", {"reason": "I want a person"}, credential=self.token)
        assert asked.status_code == 200, asked.text
        return asked.json()["control"]

    def after(self, kind: str) -> list[dict[str, Any]]:
        """The entries after the (one) entry of `kind`."""
        events = self.rows.events(self.cid)
        [at] = [e["seq"] for e in events if e["kind"] == kind]
        return [e for e in events if e["seq"] > at]

    def checked(self) -> dict[str, Any]:
        return probe.run(self.database, "check", conversation_ids=[self.cid])[self.cid]


@contextlib.contextmanager
def a_lab(conversations: int, *, receiver_delay: float = 0.0) -> Iterator[Lab]:
    database = ServerDatabase("handoff")
    try:
        with Receiver(delay=receiver_delay) as receiver:
            yield Lab(database, receiver, conversations=conversations)
    finally:
        database.drop()


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[Lab, DaphneServer]]:
    """One lab and one server for the tests that kill nothing (one conversation each)."""
    with a_lab(conversations=2) as lab:
        server = DaphneServer(lab.database).start()
        try:
            yield lab, server
        finally:
            server.kill()


@pytest.fixture
def desk(shared) -> Desk:
    return shared[0].desk()


@pytest.fixture
def server(shared) -> DaphneServer:
    return shared[1]


@pytest.fixture
def own_desk() -> Iterator[Desk]:
    """A conversation on a lab of its own: its servers are killed and restarted, with no other server to recover it."""
    with a_lab(conversations=1) as lab:
        yield lab.desk()


def test_a_turn_taken_over_between_its_tool_rounds_stops_without_another_model_round(desk, server):
    desk.customer.send(server, "please check my order")
    turn_id = desk.turn_id()
    sleeping = desk.started("slow_check", 2)  # one tool round done, the second sleeping

    control = desk.take_over(server)

    assert control["mode"] == "human" and control["staff"] == {"id": "staff:dana", "name": "Dana"}
    wait_for(lambda: desk.rows.turn_ended(turn_id, "handed_off"), timeout=10, what="the run to be handed off")
    time.sleep(QUIET)
    later = desk.after("control_taken")
    # The sleep that was running finishes on the record; then the run stops: no model round, no other tool.
    assert [e["kind"] for e in later] == ["action_finished", "turn_handed_off"]
    assert later[0]["payload"]["call_id"] == sleeping["payload"]["call_id"]
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

    assert control["mode"] == "queued" and control["reason"] == "I want a person"
    assert desk.rows.run(turn_id)["status"] == "handed_off"
    [withdrawn] = desk.rows.usages(run["run_id"])
    assert (withdrawn["status"], withdrawn["output"]) == ("withdrawn", {"withdrawn": True, "reason": "handed to a person"})
    late = desk.post(server, f"runs/{run['run_id']}/results", {"results": [{"call_id": usage["call_id"], "output": {
        "decision": "approve", "reviewed": {"tool": usage["tool"], "arguments": usage["arguments"]}}}]}, credential=desk.token)
    assert late.status_code == 409 and late.json()["error"]["code"] == "run_not_waiting", late.text
    time.sleep(QUIET)
    assert desk.receiver.deliveries == []
    assert not [e for e in desk.after("handoff_requested") if e["kind"] in ("action_started", "model_round", "approval_response")]
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked


@pytest.fixture
def slow_shop_desk() -> Iterator[Desk]:
    """A conversation whose webhook receiver takes 3 s to answer: a take-over lands while a sent webhook is in flight."""
    with a_lab(conversations=1, receiver_delay=3.0) as lab:
        yield lab.desk()


def test_a_webhook_in_flight_at_the_take_over_finishes_on_the_record_and_the_run_stops(slow_shop_desk):
    desk = slow_shop_desk
    server = DaphneServer(desk.database).start()
    try:
        desk.customer.send(server, "send it please")
        turn_id = desk.turn_id()
        wait_for(lambda: desk.receiver.deliveries, timeout=10, what="the webhook to reach the shop")

        desk.take_over(server)

        wait_for(lambda: desk.rows.turn_ended(turn_id, "handed_off"), timeout=10, what="the run to be handed off")
        time.sleep(QUIET)
    finally:
        server.kill()
    later = desk.after("control_taken")
    # The refund went out before the take-over: its outcome is on the record, and nothing follows it.
    assert [e["kind"] for e in later] == ["action_finished", "turn_handed_off"]
    finished = later[0]["payload"]
    assert (finished["tool"], finished["ok"], finished["output"]) == ("send_refund", True, {"refund_id": "R-1"})
    assert len(desk.receiver.deliveries) == 1
    assert [m["role"] for m in desk.rows.messages(desk.cid)][-1] == "user"  # no "Refund sent" from the assistant
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked

# Control leaves the agent by a take-over (agent → human), or by the customer's request (agent → queued).
LEAVES = {"take_over": ("control_taken", "human"), "ask_for_a_person": ("handoff_requested", "queued")}


@pytest.mark.parametrize("leave", list(LEAVES))
def test_a_server_killed_between_the_change_of_control_and_the_runs_end_leaves_the_run_handed_off_and_not_resumed(own_desk, leave):
    desk, (entry, mode) = own_desk, LEAVES[leave]
    first = DaphneServer(desk.database).start()
    try:
        desk.customer.send(first, "please check my order")
        turn_id = desk.turn_id()
        desk.started("slow_check", 2)  # sleeping for 4 s: the change of control and the kill land inside it
        getattr(desk, leave)(first)
        first.kill()  # SIGKILL: the run's thread dies mid-sleep, before its next step boundary
    finally:
        first.kill()
    at_crash = desk.rows.run(turn_id)
    assert at_crash["status"] == "running"  # the kill did come between the change of control and the run's end
    assert desk.after(entry) == []

    restarted = DaphneServer(desk.database).start()
    started = time.monotonic()  # "after a restart": from the moment the new process answers
    try:
        wait_for(lambda: desk.rows.turn_ended(turn_id, "handed_off"), timeout=RECOVERY_LIMIT + 5,
                 what="the run to be handed off after the restart")
        recovery_seconds = time.monotonic() - started
        time.sleep(QUIET)
        later = desk.after(entry)
        state = httpx.get(f"{restarted.url}/v1/runner/conversation/{desk.cid}/messages",
                          headers={"Authorization": f"Bearer {desk.token}"}, timeout=10).json()
    finally:
        restarted.kill()

    assert recovery_seconds < RECOVERY_LIMIT
    assert [e["kind"] for e in later] == ["turn_handed_off"]
    assert desk.tools_started() == ["slow_check", "slow_check"]
    assert desk.receiver.deliveries == []
    assert state["run_status"] == "handed_off" and state["control"]["mode"] == mode
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked



def test_a_tool_killed_mid_call_after_the_take_over_is_closed_as_interrupted(own_desk):
    desk = own_desk
    first = DaphneServer(desk.database).start()
    try:
        desk.customer.send(first, "please check my order")
        turn_id = desk.turn_id()
        sleeping = desk.started("slow_check", 2)  # sleeping for 4 s: it changes nothing outside, so it is not ambiguous
        desk.take_over(first)
        first.kill()  # SIGKILL mid-sleep: its action never records an outcome
    finally:
        first.kill()

    restarted = DaphneServer(desk.database).start()
    try:
        wait_for(lambda: desk.rows.turn_ended(turn_id, "handed_off"), timeout=RECOVERY_LIMIT + 5,
                 what="the run to be handed off after the restart")
        state = httpx.get(f"{restarted.url}/v1/runner/conversation/{desk.cid}/messages",
                          headers={"Authorization": f"Bearer {desk.token}"}, timeout=10).json()
    finally:
        restarted.kill()

    actions = desk.rows.actions(turn_id)
    assert [(a["call_id"], a["status"]) for a in actions][-1] == (sleeping["payload"]["call_id"], "interrupted")
    assert actions[-1]["finished_at"] is not None
    assert [(s["tool"], s["state"]) for s in state["tool_summary"]] == [("slow_check", "succeeded"),
                                                                        ("slow_check", "interrupted")]
    [handed_off] = desk.after("control_taken")
    assert handed_off["payload"]["interrupted"] == [sleeping["payload"]["call_id"]]
    checked = desk.checked()
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked


def test_a_server_killed_with_a_webhook_in_flight_after_the_take_over_leaves_its_outcome_ambiguous(slow_shop_desk):
    # PRODUCT.md "Human handoff": a side effect already sent finishes or becomes ambiguous exactly as today.
    desk = slow_shop_desk
    faulty = DaphneServer(desk.database, env={"WAYPOINT_FAULT_AT": "during_action"}).start()
    try:
        desk.customer.send(faulty, "send it please")
        turn_id = desk.turn_id()
        wait_for(lambda: desk.receiver.deliveries, timeout=10, what="the webhook to reach the shop")
        desk.take_over(faulty)
        assert faulty.wait_exit(timeout=20) == 137  # the shop answered; the process died before recording it
    finally:
        faulty.kill()

    server = DaphneServer(desk.database).start()
    try:
        wait_for(lambda: desk.rows.run(turn_id)["status"] != "running", timeout=RECOVERY_LIMIT + 5,
                 what="recovery to settle the run")
        time.sleep(QUIET)
    finally:
        server.kill()

    later = desk.after("control_taken")
    assert [(e["kind"], e["payload"].get("tool")) for e in later if e["kind"] == "turn_ambiguous"] == [
        ("turn_ambiguous", "send_refund")]
    assert not [e for e in later if e["kind"] in ("model_round", "action_started", "turn_retried")]
    assert len(desk.receiver.deliveries) == 1
