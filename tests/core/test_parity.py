import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from apps.agent import actions, runner
from apps.conversations.models import Conversation
from apps.ledger import repair, store
from apps.ledger.replay import replay, verify
from apps.ledger.types import KINDS, ActionStarted, ModelRound
from apps.staff.actions import resolve_quarantine
from tests.conftest import SUPPORT_CONFIG
from tests.core.logs import answer, approve, corrupt_payload, state, turn
from tests.fakes import vendor as wire

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]

# The kinds of the turn core (issue "Durable turn core") that the tour below produces.
TOURED = {
    "conversation_started", "turn_dispatched", "ingress_directive", "model_round", "action_started",
    "action_finished", "client_action_requested", "client_result_accepted", "approval_request",
    "approval_response", "question_request", "question_response", "completion_requested", "turn_complete",
    "turn_failed", "turn_expired", "turn_retried", "turn_ambiguous", "quarantine_resolved",
    "conversation_completed", "repair",
}

TOUR_CONFIG = {
    **SUPPORT_CONFIG,
    "model": {
        **SUPPORT_CONFIG["model"],
        "rules": [
            *SUPPORT_CONFIG["model"]["rules"],
            {"match": "help", "steps": [{"call": "ask_question", "arguments": {"question": "Which order?"}},
                                        {"say": "Thanks: {result}"}]},
            {"match": "maybe", "steps": [{"calls": [{"call": "complete_conversation"},
                                                    {"call": "lookup_order", "arguments": {"order_id": "A-2"}}]},
                                         {"say": "Not finished yet."}]},
            {"match": "notify", "steps": [{"call": "notify", "arguments": {"text": "hi"}}, {"say": "Notified."}]},
        ],
    },
    "tools": [
        *SUPPORT_CONFIG["tools"],
        {"name": "notify", "kind": "server", "action": "webhook", "url": "http://127.0.0.1:9/hook"},
    ],
}


class Tour:
    """Drives conversations through the turn core and checks parity after every step."""

    def __init__(self, clock):
        self.clock = clock
        self.conversations: list[str] = []

    def step(self, cid: str) -> None:
        if cid not in self.conversations:
            self.conversations.append(cid)
        report = replay(cid)
        assert report.ok, (store.read(cid)[-1].kind, report.differences)

    def kinds(self) -> set[str]:
        return {e.kind for cid in self.conversations for e in store.read(cid)}


def crashed_mid_action(cid: str, tool: str, arguments: dict) -> None:
    """Leave the latest run as a writer that died inside a side-effecting action leaves it: started, no outcome."""
    run = state(cid)
    turn_id = [e.turn_id for e in store.read(cid) if e.kind == "turn_dispatched"][-1]
    call = {"call_id": "call_1_1", "tool": tool, "arguments": arguments}
    with transaction.atomic():
        conversation = Conversation.objects.select_for_update(no_key=True).get(id=cid)
        store.append(conversation, turn_id=turn_id, actor="agent", now=timezone.now(),
            events=[
                ModelRound(run_id=run["run_id"], round=1, calls=[call]),
                ActionStarted(run_id=run["run_id"], call_id="call_1_1", tool=tool, action="webhook", arguments=arguments,
                              side_effecting=True, idempotency_key=f"{turn_id}:call_1_1"),
            ],
        )


class TestParity:
    def test_a_tour_of_every_kind_replays_to_the_stored_state_after_each_step(self, make_assistant, clock, settings):
        tour = Tour(clock)
        assistant = make_assistant(**TOUR_CONFIG)

        cid = actions.start_conversation(assistant_id=str(assistant.id), message="hello", persona="guest:alice", edge="api",
                                         now=clock(), directive={"step_budget": 6})["conversation_id"]
        tour.step(cid)
        turn(cid, "I want a refund", clock)
        tour.step(cid)
        approve(cid, clock)
        tour.step(cid)
        turn(cid, "when can you deliver?", clock)
        tour.step(cid)
        answer(cid, {"label": "2026-12-24"}, clock)
        tour.step(cid)
        turn(cid, "help me", clock)
        tour.step(cid)
        answer(cid, {"answer": "A-1"}, clock)
        tour.step(cid)
        turn(cid, "maybe we are done", clock)
        tour.step(cid)

        settings.WAYPOINT_RUNNER = "off"  # batch one commits, nobody runs the turn: a server that died
        turn(cid, "hello again", clock)
        tour.step(cid)
        runner.drive(cid, recovering=True)
        tour.step(cid)
        turn(cid, "notify the team", clock)
        crashed_mid_action(cid, "notify", {"text": "hi"})
        tour.step(cid)
        runner.drive(cid, recovering=True)
        tour.step(cid)
        settings.WAYPOINT_RUNNER = "inline"
        resolve_quarantine(run_id=state(cid)["run_id"], resolution="done", note="the team got it", actor="staff:ops:bob",
                           now=clock())
        tour.step(cid)

        corrupt_payload(cid, next(e.seq for e in store.read(cid) if e.kind == "model_round"))
        assert not replay(cid).ok
        repair.repair(conversation_id=cid, actor="ops:alice", now=clock())
        tour.step(cid)
        turn(cid, "bye", clock)
        tour.step(cid)

        with wire.Vendor() as vendor:
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            vendor.queue(wire.error(401, "Incorrect API key provided", "invalid_request_error"),
                         wire.completion(content="Hello again!"))
            openai = make_assistant(model={"provider": "openai", "model": "gpt-4o-mini", "base_url": vendor.base_url})
            failed = actions.start_conversation(assistant_id=str(openai.id), message="hi", persona="guest:alice", edge="api",
                                                now=clock())["conversation_id"]
            tour.step(failed)
            actions.continue_conversation(conversation_id=failed, persona="guest:alice", edge="api", now=clock())
            tour.step(failed)

        simple = make_assistant(mode="simple")
        expiring = actions.start_conversation(assistant_id=str(simple.id), message="when?", persona="guest:alice", edge="api",
                                              now=clock())["conversation_id"]
        tour.step(expiring)
        runner.expire_requests(now=timezone.now() + timedelta(minutes=16))
        tour.step(expiring)

        assert tour.kinds() >= TOURED, TOURED - tour.kinds()
        outcomes = {e.payload["outcome"] for e in store.read(cid) if e.kind == "completion_requested"}
        assert outcomes == {"completed", "not_completed"}
        assert [state(c)["run_status"] for c in tour.conversations] == ["completed", "completed", "expired"]
        for c in tour.conversations:
            out = io.StringIO()
            call_command("conversation", "replay", c, "--actor", "ops:alice", stdout=out)
            assert out.getvalue().startswith(f"OK conv-{c}:")
            assert verify(c).ok

    def test_every_kind_of_the_log_is_appended_by_some_code(self):
        types = ROOT / "apps" / "ledger" / "types"  # where the kinds are declared, which writes none
        sources = "\n".join(p.read_text() for p in (ROOT / "apps").rglob("*.py")
                             if p.name != "projection.py" and types not in p.parents)

        never = {kind for kind, cls in KINDS.items() if not re.search(rf"\b{cls.__name__}\(", sources)}

        assert never == set(), f"{never} are never appended: a kind no code writes is one no tour can check"
