"""`conversation_state`: the read every client resumes from."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest
from django.db import connection

from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.errors import TurnConflict
from apps.conversations.models import ChatMessage
from apps.ledger.store import iso

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def state(conversation_id: str, **kwargs) -> dict:
    return conversation_state(queries.conversation_for(conversation_id), **kwargs)


class TestConversationState:
    def test_message_times_read_as_the_log_writes_them(self, start):
        started = start("hello there")
        ChatMessage.objects.filter(conversation_id=started["conversation_id"], role="assistant").update(
            created_at=datetime(2026, 1, 2, 3, 4, 5, 60, tzinfo=UTC)
        )

        messages = state(started["conversation_id"])["messages"]

        stored = dict(ChatMessage.objects.filter(conversation_id=started["conversation_id"]).values_list("id", "created_at"))
        assert [m["created_at"] for m in messages] == [iso(stored[m["id"]]) for m in messages]
        assert messages[1]["created_at"] == "2026-01-02T03:04:05.000060+00:00"

    def test_the_tool_summary_lists_client_calls_then_server_actions_of_the_latest_run(self, start):
        started = start("refund please")

        summary = state(started["conversation_id"])["tool_summary"]

        assert summary == [
            {"tool": "issue_refund", "kind": "approval", "state": "pending"},
            {"tool": "lookup_order", "kind": "server", "state": "succeeded"},
        ]


TURNS = 30


class TestOneSnapshot:
    def test_a_send_at_the_seq_of_the_first_push_that_shows_the_reply_never_conflicts(self, start, clock):
        cid = start("hello")["conversation_id"]
        seen: list[dict] = []  # every state the pushes read, in the order they finished reading
        stop = threading.Event()

        def pushes() -> None:
            try:
                while not stop.is_set():
                    seen.append(state(cid))
            finally:
                connection.close()

        readers = [threading.Thread(target=pushes) for _ in range(3)]
        for reader in readers:
            reader.start()
        conflicts = []
        try:
            expected = state(cid)["seq"]
            for n in range(TURNS):
                try:
                    actions.start_turn(conversation_id=cid, message=f"turn {n}", persona="guest:alice", edge="link",
                                       now=clock(), expected_seq=expected)
                except TurnConflict as exc:
                    conflicts.append(exc.message)
                    expected = state(cid)["seq"]
                    continue
                expected = _first_showing(seen, reply=f"You said: turn {n}")["seq"]
                seen.clear()
        finally:
            stop.set()
            for reader in readers:
                reader.join(timeout=30)

        assert conflicts == []


def _first_showing(seen: list[dict], *, reply: str) -> dict:
    """The first state read that shows `reply` as the finished turn's last message, as a page would act on it."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for read in seen[:]:
            if read["run_status"] == "completed" and read["messages"] and read["messages"][-1]["text"] == reply:
                return read
        time.sleep(0.005)
    raise AssertionError(f"no push showed {reply!r}")
