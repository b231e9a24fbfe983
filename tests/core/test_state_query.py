"""`conversation_state`: the read every client resumes from."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from apps.conversations import queries
from apps.conversations.models import ChatMessage
from apps.ledger.store import iso

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def state(conversation_id: str, **kwargs) -> dict:
    return queries.conversation_state(queries.conversation_for(conversation_id), **kwargs)


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
