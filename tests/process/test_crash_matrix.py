"""
The crash matrix: a real server process hard-killed (`WAYPOINT_FAULT_AT`, exit 137) at every boundary
of a turn, restarted without the fault, and the contract checked from the outside.

Each boundary gets its own conversation on one shared server database. The crash and the recovery
run once per boundary (`CrashLab.observe`); the tests below assert on what was observed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

RECOVERY_LIMIT = 10.0  # PRODUCT.md "Fault injection": recovery finishes on its own within 10 s of a restart


@dataclass(frozen=True)
class Scenario:
    message: str
    outcome: str  # how the crashed turn ends: completed | interrupted | never_dispatched
    answer: dict[str, str] | None = None  # a client-tool result posted before the crash


SCENARIOS = {
    "before_batch_one": Scenario("hello again", "never_dispatched"),
    "after_batch_one": Scenario("hello again", "completed"),
    "after_model_round": Scenario("hello again", "completed"),
    "during_action": Scenario("refund please", "interrupted"),
    "after_result_accepted": Scenario("when can you deliver?", "completed", answer={"label": "2026-12-24"}),
    "before_batch_two": Scenario("hello again", "completed"),
    "after_batch_two": Scenario("hello again", "completed"),
}
RETRIED = ["after_batch_one", "after_model_round", "after_result_accepted", "before_batch_two"]


def crash_lab_config(webhook_url: str) -> dict[str, Any]:
    return {
        "name": "Crash lab",
        "model": {
            "provider": "scripted",
            "rules": [
                {"match": "refund", "steps": [
                    {"say": "Refunding now.", "call": "issue_refund", "arguments": {"order_id": "A-1"}},
                    {"say": "Refund issued: {result}."},
                ]},
                {"match": "when", "steps": [
                    {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                    {"say": "Booked for {result}."},
                ]},
            ],
            "fallback": [{"say": "You said: {message}"}],
        },
        "tools": [
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": webhook_url},
            {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
        ],
    }


@dataclass
class Observed:
    """Everything one crash-and-restart showed, for the tests to assert on."""

    boundary: str
    customer: Customer
    seeded_seq: int
    exit_code: int | None = None
    turn_id: str = ""  # the turn the crash interrupted ("" when it never dispatched)
    at_crash: dict[str, Any] = field(default_factory=dict)
    recovery_seconds: float = 0.0
    page: str = ""
    recovered: dict[str, Any] = field(default_factory=dict)  # after recovery, before any follow-up
    followup_turn_id: str = ""
    final: dict[str, Any] = field(default_factory=dict)
    webhooks: list[dict[str, Any]] = field(default_factory=list)


class CrashLab:
    def __init__(self, database: ServerDatabase, receiver: Receiver):
        self.database, self.receiver, self.rows = database, receiver, Rows(database.url)
        made = probe.run(database, "lab", config=crash_lab_config(receiver.url), conversations=len(SCENARIOS), message="hello")
        self.seeds = dict(zip(SCENARIOS, made["conversations"], strict=True))
        self.observed: dict[str, Observed] = {}
        self.checked: dict[str, dict[str, Any]] = {}

    def snapshot(self, conversation_id: str, turn_id: str) -> dict[str, Any]:
        run = self.rows.run(turn_id) if turn_id else None
        return {
            "events": self.rows.events(conversation_id),
            "messages": self.rows.messages(conversation_id),
            "run": run,
            "usages": self.rows.usages(run["run_id"]) if run else [],
        }

    def observe(self, boundary: str) -> Observed:
        if boundary not in self.observed:
            self.observed[boundary] = self._crash_and_recover(boundary)
        return self.observed[boundary]

    def _crash_and_recover(self, boundary: str) -> Observed:
        scenario, seed = SCENARIOS[boundary], self.seeds[boundary]
        cid = seed["conversation_id"]
        seen = Observed(boundary, Customer(cid, seed["token"]), seeded_seq=self.rows.events(cid)[-1]["seq"])

        faulty = DaphneServer(self.database, env={"WAYPOINT_FAULT_AT": boundary}).start()
        try:
            seen.customer.send(faulty, scenario.message)
            if scenario.answer is not None:
                turn_id = wait_for(lambda: self.rows.turns_after(cid, seen.seeded_seq), timeout=10, what="the turn")[0]
                wait_for(lambda: self.rows.turn_ended(turn_id, "waiting"), timeout=10, what="the client action")
                run = self.rows.run(turn_id)
                seen.customer.answer(faulty, run_id=run["run_id"], call_id=run["pending"][0], fields=scenario.answer)
            seen.exit_code = faulty.wait_exit(timeout=20)
        finally:
            faulty.kill()

        turns = self.rows.turns_after(cid, seen.seeded_seq)
        seen.turn_id = turns[0] if turns else ""
        seen.at_crash = self.snapshot(cid, seen.turn_id)

        server = DaphneServer(self.database).start()
        started = time.monotonic()  # "after a restart": from the moment the new process answers
        try:
            if scenario.outcome == "never_dispatched":
                seen.customer.send(server, scenario.message)
                seen.turn_id = wait_for(lambda: self.rows.turns_after(cid, seen.seeded_seq), timeout=10, what="the resent turn")[0]
            wait_for(lambda: self.rows.turn_ended(seen.turn_id, scenario.outcome.replace("never_dispatched", "completed")),
                     timeout=RECOVERY_LIMIT + 5, what=f"the turn to end {scenario.outcome}")
            seen.recovery_seconds = time.monotonic() - started
            seen.page = seen.customer.page(server)
            seen.recovered = self.snapshot(cid, seen.turn_id)
            if boundary == "during_action":
                self._follow_up(seen, lambda: seen.customer.continue_(server))
            elif boundary == "after_batch_two":
                self._follow_up(seen, lambda: seen.customer.send(server, "and again"))
        finally:
            server.kill()  # everything has settled; a graceful stop only costs time
        seen.final = self.snapshot(cid, seen.turn_id)
        seen.webhooks = [
            {"idempotency_key": next(v for k, v in d["headers"].items() if k.lower() == "idempotency-key"), "path": d["path"]}
            for d in list(self.receiver.deliveries)
        ]
        return seen

    def check(self, boundary: str) -> dict[str, Any]:
        """`conversation replay` and `verify` of the boundary's conversation, run once for every one observed so far."""
        self.observe(boundary)
        if boundary not in self.checked:
            ids = {self.seeds[b]["conversation_id"]: b for b in self.observed if b not in self.checked}
            for cid, result in probe.run(self.database, "check", conversation_ids=list(ids)).items():
                self.checked[ids[cid]] = result
        return self.checked[boundary]

    def _follow_up(self, seen: Observed, act) -> None:
        """Start the turn after the crashed one (`act`) and wait until it completes."""
        cid = seen.customer.conversation_id
        act()
        seen.followup_turn_id = wait_for(lambda: self.rows.turns_after(cid, seen.seeded_seq)[1:], timeout=10, what="the next turn")[0]
        wait_for(lambda: self.rows.turn_ended(seen.followup_turn_id, "completed"), timeout=15, what="the next turn to complete")


@pytest.fixture(scope="module")
def lab():
    database = ServerDatabase("crash")
    try:
        with Receiver() as receiver:
            yield CrashLab(database, receiver)
    finally:
        database.drop()


def of_turn(snapshot: dict[str, Any], turn_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [e for e in snapshot["events"] if e["turn_id"] == turn_id and (kind is None or e["kind"] == kind)]


def committed_turns(snapshot: dict[str, Any]) -> set[str]:
    kinds: dict[str, set[str]] = {}
    for e in snapshot["events"]:
        kinds.setdefault(e["turn_id"], set()).add(e["kind"])
    return {t for t, k in kinds.items() if {"turn_dispatched", "turn_complete"} <= k}


ALL = list(SCENARIOS)


class TestEveryBoundary:
    def test_the_boundaries_under_test_are_exactly_the_fault_injection_boundaries(self):
        from apps.conversations.faults import BOUNDARIES

        assert sorted(SCENARIOS) == sorted(BOUNDARIES)

    @pytest.mark.parametrize("boundary", ALL)
    def test_the_server_process_dies_with_exit_code_137(self, lab, boundary):
        seen = lab.observe(boundary)

        assert seen.exit_code == 137

    @pytest.mark.parametrize("boundary", ALL)
    def test_the_turn_settles_within_ten_seconds_of_the_restart(self, lab, boundary):
        seen = lab.observe(boundary)

        assert seen.recovery_seconds < RECOVERY_LIMIT

    @pytest.mark.parametrize("boundary", ALL)
    def test_assistant_text_appears_only_for_turns_with_both_markers(self, lab, boundary):
        seen = lab.observe(boundary)

        for snapshot in (seen.at_crash, seen.final):
            committed = committed_turns(snapshot)
            assert all(m["turn_id"] in committed for m in snapshot["messages"] if m["role"] == "assistant")
        drafts = [e["payload"]["text"] for e in of_turn(seen.final, seen.turn_id, "model_round") if e["payload"]["text"]]
        if seen.turn_id not in committed_turns(seen.final):
            assert drafts and not any(text in seen.page for text in drafts)

    @pytest.mark.parametrize("boundary", ALL)
    def test_the_user_message_is_stored_once(self, lab, boundary):
        seen = lab.observe(boundary)

        texts = [m["text"] for m in seen.final["messages"] if m["role"] == "user"]
        assert texts.count(SCENARIOS[boundary].message) == 1

    @pytest.mark.parametrize("boundary", ALL)
    def test_the_log_verifies_and_replays_to_the_stored_state(self, lab, boundary):
        checked = lab.check(boundary)

        assert checked["verify"]["ok"], checked["verify"]["output"]
        assert checked["replay"]["ok"], checked["replay"]["output"]


class TestOrphanedTurns:
    @pytest.mark.parametrize("boundary", RETRIED)
    def test_the_interrupted_turn_completes_under_its_original_turn_id(self, lab, boundary):
        seen = lab.observe(boundary)

        assert seen.at_crash["run"]["status"] in ("running", "waiting") and not of_turn(seen.at_crash, seen.turn_id, "turn_complete")
        assert len(of_turn(seen.final, seen.turn_id, "turn_dispatched")) == 1
        assert len(of_turn(seen.final, seen.turn_id, "turn_complete")) == 1
        assert lab.rows.turns_after(seen.customer.conversation_id, seen.seeded_seq) == [seen.turn_id]

    @pytest.mark.parametrize("boundary", RETRIED)
    def test_the_retry_is_recorded_after_the_last_committed_step(self, lab, boundary):
        seen = lab.observe(boundary)

        last_before = of_turn(seen.at_crash, seen.turn_id)[-1]["seq"]
        retried = of_turn(seen.final, seen.turn_id, "turn_retried")
        assert [(e["seq"], e["payload"]["attempt"], e["payload"]["after_seq"]) for e in retried] == [(last_before + 1, 1, last_before)]

    @pytest.mark.parametrize("boundary", ["after_model_round", "before_batch_two"])
    def test_a_committed_model_round_is_not_asked_again(self, lab, boundary):
        seen = lab.observe(boundary)

        rounds = of_turn(seen.final, seen.turn_id, "model_round")
        assert [e["seq"] for e in rounds] == [e["seq"] for e in of_turn(seen.at_crash, seen.turn_id, "model_round")]
        assert seen.final["messages"][-1]["text"] == "You said: hello again"

    def test_a_crash_before_batch_one_commits_nothing(self, lab):
        seen = lab.observe("before_batch_one")

        assert seen.at_crash["events"][-1]["seq"] == seen.seeded_seq
        assert [m["text"] for m in seen.at_crash["messages"]] == ["hello", "You said: hello"]
        assert not of_turn(seen.final, seen.turn_id, "turn_retried")

    def test_a_turn_that_completed_before_the_crash_is_not_retried(self, lab):
        seen = lab.observe("after_batch_two")

        assert of_turn(seen.at_crash, seen.turn_id, "turn_complete")
        assert not [e for e in seen.final["events"] if e["kind"] == "turn_retried"]

    def test_the_next_turn_after_a_crash_that_kept_the_lease_runs_without_recovery(self, lab):
        seen = lab.observe("after_batch_two")

        assert lab.rows.run(seen.followup_turn_id)["status"] == "completed"
        assert not of_turn(lab.snapshot(seen.customer.conversation_id, ""), seen.followup_turn_id, "turn_retried")


class TestAmbiguousAction:
    def test_a_crash_during_a_side_effecting_action_quarantines_the_turn(self, lab):
        seen = lab.observe("during_action")

        run = seen.recovered["run"]
        assert (run["status"], run["quarantined"]) == ("interrupted", True)
        assert [e["payload"]["tool"] for e in of_turn(seen.final, seen.turn_id, "turn_ambiguous")] == ["issue_refund"]
        assert not of_turn(seen.final, seen.turn_id, "turn_retried")
        assert not of_turn(seen.final, seen.turn_id, "turn_complete")

    def test_every_delivery_of_the_action_carries_the_first_attempts_idempotency_key(self, lab):
        seen = lab.observe("during_action")

        # Once from the process that died, once more as the re-attempt after Continue: one identity.
        assert [w["idempotency_key"] for w in seen.webhooks if w["idempotency_key"].startswith(seen.turn_id + ":")] == [
            f"{seen.turn_id}:call_1_1"] * 2
        assert not [w for w in seen.webhooks if w["idempotency_key"].startswith(seen.followup_turn_id + ":")]
        assert [e["payload"]["attempt"] for e in of_turn(seen.final, seen.turn_id, "action_started")] == [1]

    def test_the_log_links_the_reattempt_to_the_first_attempt(self, lab):
        seen = lab.observe("during_action")

        [first] = of_turn(seen.final, seen.turn_id, "action_started")
        [again] = of_turn(seen.final, seen.followup_turn_id, "action_started")
        assert again["payload"]["idempotency_key"] == first["payload"]["idempotency_key"] == f"{seen.turn_id}:call_1_1"
        link = again["payload"]["reattempt_of"]
        assert (link["turn_id"], link["call_id"]) == (seen.turn_id, "call_1_1") and link["attempted_at"]
        assert lab.check("during_action")["replay"]["ok"] and lab.check("during_action")["verify"]["ok"]

    def test_continue_completes_a_new_turn_from_the_stored_history(self, lab):
        seen = lab.observe("during_action")

        new_turn = of_turn(seen.final, seen.followup_turn_id)
        assert new_turn[0]["kind"] == "turn_dispatched" and new_turn[0]["payload"]["continuation"] is True
        assert lab.rows.run(seen.followup_turn_id)["status"] == "completed"
        # The receiver answers a repeated key with its first refund: there is one refund, R-1.
        assert seen.final["messages"][-1]["text"] == 'Refund issued: {"refund_id": "R-1"}.'
        assert "Refunding now." not in [m["text"] for m in seen.final["messages"]]

    def test_the_successful_reattempt_settles_the_quarantine(self, lab):
        seen = lab.observe("during_action")

        # The re-attempt went through, so nothing is left for staff to decide: the log says so.
        [settled] = of_turn(seen.final, seen.followup_turn_id, "quarantine_settled")
        assert (settled["payload"]["run_id"], settled["payload"]["call_id"]) == (seen.recovered["run"]["run_id"], "call_1_1")
        assert (seen.final["run"]["status"], seen.final["run"]["quarantined"]) == ("interrupted", False)


class TestAcceptedResults:
    def test_an_accepted_result_is_kept_unchanged_through_the_crash(self, lab):
        seen = lab.observe("after_result_accepted")

        fields = ("call_id", "status", "output", "answered_by", "answered_at", "accepted_seq")
        before = [{k: u[k] for k in fields} for u in seen.at_crash["usages"]]
        after = [{k: u[k] for k in fields} for u in seen.final["usages"]]
        assert before == after and before[0]["output"] == {"label": "2026-12-24"}
        assert len(of_turn(seen.final, seen.turn_id, "client_result_accepted")) == 1
        assert seen.final["messages"][-1]["text"] == 'Booked for {"label": "2026-12-24"}.'
