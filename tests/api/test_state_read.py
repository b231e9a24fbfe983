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


class TestConditionalRead:
    def test_an_unchanged_head_is_answered_from_the_head_alone(self, api):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        started = api.start()
        path = messages_path(started["conversation_id"])
        etag = api.get(path)["ETag"]

        with CaptureQueriesContext(connection) as queries:
            response = api.as_(started["token"]).get(path, headers={"If-None-Match": etag})

        assert response.status_code == 304 and response["ETag"] == etag and response.content == b""
        assert len(queries) == 2  # the token, the head
        assert not any("chat_messages" in q["sql"] or "workflow_logs" in q["sql"] for q in queries)

    def test_an_etag_for_an_unknown_conversation_is_not_found(self, api):
        response = api.get(messages_path("5f0c5a52-5b38-4d59-9a4b-7f3f0e6e8a01"), headers={"If-None-Match": '"4"'})

        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"

    def test_a_token_of_another_conversation_learns_nothing_from_an_etag(self, api):
        mine, other = api.start(), api.start()
        etag = api.get(messages_path(other["conversation_id"]))["ETag"]

        response = api.as_(mine["token"]).get(messages_path(other["conversation_id"]), headers={"If-None-Match": etag})

        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"

    def test_a_changed_head_gets_the_whole_state_with_the_new_etag(self, api):
        started = api.start()
        path = messages_path(started["conversation_id"])
        etag = api.get(path)["ETag"]
        api.post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "again"})

        response = api.get(path, headers={"If-None-Match": etag})

        assert response.status_code == 200 and response["ETag"] == f'"{response.json()["seq"]}"' != etag
        assert response.json()["messages"][-1]["text"] == "You said: again"


class TestResultsBody:
    def test_is_what_the_declared_schema_gives(self, api):
        from apps.api.schemas import ResultsOut

        started = api.start("when can you deliver? Zürich ✓")
        state = api.state(started["conversation_id"])

        response = api.post(
            f"/v1/agent/conversations/{started['conversation_id']}/runs/{state['run_id']}/results",
            {"results": [{"call_id": state["pending_client_actions"][0]["call_id"], "output": {"date": "2026-12-24"}}]},
        )

        body = response.json()
        assert response.status_code == 200 and response["Content-Type"] == "application/json; charset=utf-8"
        assert body["state"]["answered_client_actions"] and body["run_resumes"] is True
        assert body == ResultsOut.model_validate(body).model_dump()


class TestMessageFields:
    def test_the_schema_declares_each_field_a_message_is_shown_with(self):
        from apps.agent.message_fields import MESSAGE_FIELDS
        from apps.api.schemas import MessageOut

        declared = list(MessageOut.model_fields)

        assert declared == [shown.name for shown in MESSAGE_FIELDS]

    def test_a_message_of_the_state_has_each_field_once(self, api):
        from apps.agent.message_fields import MESSAGE_FIELDS

        started = api.start("hello")

        [message] = api.state(started["conversation_id"])["messages"][:1]
        assert list(message) == [shown.name for shown in MESSAGE_FIELDS]
