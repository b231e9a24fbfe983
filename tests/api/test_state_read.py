"""The messages read (GET /v1/runner/conversation/{id}/messages): its body and its conditional answer."""

from __future__ import annotations

import pytest

from apps.api.schemas import StateOut
from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def messages_path(conversation_id: str) -> str:
    return f"/v1/runner/conversation/{conversation_id}/messages"


def answered_conversation(api: Api) -> str:
    """A conversation whose latest run has an answered client action and text beyond ASCII."""
    started = api.start("when can you deliver? Zürich ✓")
    state = api.state(started["conversation_id"])
    api.post(
        f"/v1/agent/conversations/{started['conversation_id']}/runs/{state['run_id']}/results",
        {"results": [{"call_id": state["pending_client_actions"][0]["call_id"], "output": {"date": "2026-12-24", "note": "naïve"}}]},
    )
    return started["conversation_id"]


class TestMessagesBody:
    def test_is_what_the_declared_schema_gives_for_answered_actions(self, api):
        conversation_id = answered_conversation(api)

        response = api.get(messages_path(conversation_id))

        body = response.json()
        assert response["Content-Type"] == "application/json; charset=utf-8"
        assert body["answered_client_actions"] and body["messages"][0]["text"] == "when can you deliver? Zürich ✓"
        assert body == StateOut.model_validate(body).model_dump()

    def test_is_what_the_declared_schema_gives_for_server_tools_and_a_pending_approval(self, api):
        started = api.start("refund please")

        body = api.get(messages_path(started["conversation_id"])).json()

        assert body["pending_client_actions"][0]["kind"] == "approval"
        assert {"tool": "lookup_order", "kind": "server", "state": "succeeded"} in body["tool_summary"]
        assert body == StateOut.model_validate(body).model_dump()
