"""The v1 contract (PRODUCT.md "Public HTTP contract"): each endpoint, each status and error code."""

from __future__ import annotations

import uuid

import pytest

from apps.agent.models import Assistant
from apps.conversations.models import ChatMessage
from apps.runs.models import ToolUsageLog
from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

NOBODY = "00000000-0000-4000-8000-00000000dead"  # no row has it: ids are random uuid4s


def error_code(response) -> str:
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"]["message"], str), body
    return body["error"]["code"]


def pending_call(api: Api, conversation_id: str) -> tuple[str, str]:
    state = api.state(conversation_id)
    return state["run_id"], state["pending_client_actions"][0]["call_id"]


class TestCreateAssistant:
    def test_creates_an_assistant_from_its_json_configuration(self, api):
        response = api.post("/v1/assistants", {"name": "Tiny", "model": {"provider": "scripted", "rules": []}})

        assert response.status_code == 201
        assert uuid.UUID(response.json()["id"])

    def test_keeps_every_key_of_the_configuration(self, api):
        response = api.post("/v1/assistants", {"name": "Tiny", "mode": "simple", "required_approver": "shop:boss",
                                               "model": {"provider": "scripted", "rules": []}})

        config = Assistant.objects.get(id=response.json()["id"]).config
        assert config["mode"] == "simple" and config["required_approver"] == "shop:boss"

    def test_lists_every_problem_of_an_invalid_configuration(self, api):
        response = api.post("/v1/assistants", {"name": "", "step_budget": 0, "model": {"provider": "magic"}})

        assert response.status_code == 422
        assert error_code(response) == "invalid_assistant_config"
        problems = response.json()["error"]["problems"]
        assert any(p.startswith("name:") for p in problems) and any(p.startswith("step_budget:") for p in problems)
        assert any(p.startswith("model.provider:") for p in problems)

    def test_a_wrongly_typed_model_setting_is_a_problem_of_its_own(self, api):
        response = api.post("/v1/assistants", {"name": "Tiny", "instructions": ["be nice"], "model": {
            "provider": "openai", "model": "gpt-4o-mini", "temperature": "warm", "max_output_tokens": 0,
            "tool_choice": "teleport", "timeout_seconds": -5}})

        assert response.status_code == 422 and error_code(response) == "invalid_assistant_config"
        assert sorted(p.split(":")[0] for p in response.json()["error"]["problems"]) == [
            "instructions", "model.max_output_tokens", "model.temperature", "model.timeout_seconds", "model.tool_choice"]

    def test_keeps_the_instructions_and_model_settings(self, api):
        model = {"provider": "openai", "model": "gpt-4o-mini", "temperature": 0, "max_output_tokens": 64,
                 "tool_choice": "required", "timeout_seconds": 12.5}

        response = api.post("/v1/assistants", {"name": "Tiny", "instructions": "Be brief.", "model": model})

        config = Assistant.objects.get(id=response.json()["id"]).config
        assert config["instructions"] == "Be brief." and config["model"] == model

    def test_the_openapi_document_describes_instructions_and_the_model_settings(self, api):
        schema = api.get("/v1/openapi.json").json()["components"]["schemas"]["AssistantConfigIn"]

        assert "system message" in schema["properties"]["instructions"]["description"]
        described = schema["properties"]["model"]["description"]
        assert all(name in described for name in ("temperature", "max_output_tokens", "tool_choice", "timeout_seconds"))
        example = next(e for e in schema["examples"] if e["model"]["provider"] == "openai")
        assert example["instructions"] and {"temperature", "max_output_tokens", "tool_choice"} <= set(example["model"])

    def test_refuses_a_conversation_token(self, api):
        started = api.start()

        response = api.as_(started["token"]).post("/v1/assistants", {"name": "x", "model": {"provider": "scripted"}})

        assert response.status_code == 403 and error_code(response) == "forbidden"


class TestStartConversation:
    def test_returns_the_ids_and_a_token_and_commits_the_first_turn(self, api):
        started = api.start("hello there")

        assert set(started) >= {"conversation_id", "turn_id", "run_id", "token"}
        state = api.as_(started["token"]).state(started["conversation_id"])
        assert [m["text"] for m in state["messages"]] == ["hello there", "You said: hello there"]

    def test_attributes_the_turn_to_the_api_keys_identity_by_default(self, api):
        started = api.start()

        first = ChatMessage.objects.get(conversation_id=started["conversation_id"], role="user")
        assert first.author == "api:backend"

    def test_attributes_the_turn_to_the_persona_it_names(self, api):
        started = api.start(persona="shop:eu:customer-42")

        assert api.state(started["conversation_id"])["messages"][0]["author"] == {
            "kind": "customer", "id": "shop:eu:customer-42", "name": "customer-42"}

    def test_refuses_a_malformed_persona(self, api):
        response = api.post("/v1/agent/conversations", {"assistant": api.create_assistant(), "message": "hi", "persona": "nobody"})

        assert response.status_code == 422 and error_code(response) == "invalid_request"

    @pytest.mark.parametrize("assistant", [NOBODY, "not-a-uuid"])
    def test_an_unknown_or_malformed_assistant_id_is_not_found(self, api, assistant):
        response = api.post("/v1/agent/conversations", {"assistant": assistant, "message": "hi"})

        assert response.status_code == 404 and error_code(response) == "not_found"

    def test_an_empty_message_is_invalid(self, api):
        response = api.post("/v1/agent/conversations", {"assistant": api.create_assistant(), "message": "   "})

        assert response.status_code == 422 and error_code(response) == "invalid_request"

    def test_a_retry_with_the_same_idempotency_key_returns_the_same_conversation(self, api):
        body = {"assistant": api.create_assistant(), "message": "hello"}
        first = api.post("/v1/agent/conversations", body, headers={"Idempotency-Key": "order-1"})

        again = api.post("/v1/agent/conversations", body, headers={"Idempotency-Key": "order-1"})

        assert again.status_code == 201
        assert again.json()["conversation_id"] == first.json()["conversation_id"]
        assert again.json()["turn_id"] == first.json()["turn_id"]

    def test_the_same_idempotency_key_with_another_body_is_refused(self, api):
        assistant = api.create_assistant()
        api.post("/v1/agent/conversations", {"assistant": assistant, "message": "one"}, headers={"Idempotency-Key": "k"})

        response = api.post("/v1/agent/conversations", {"assistant": assistant, "message": "two"}, headers={"Idempotency-Key": "k"})

        assert response.status_code == 422 and error_code(response) == "idempotency_key_reused"


class TestTurns:
    def test_accepts_a_message_and_the_reply_follows(self, api):
        started = api.start()

        response = api.as_(started["token"]).post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "again"})

        assert response.status_code == 202
        assert set(response.json()) >= {"turn_id", "run_id"}
        assert api.state(started["conversation_id"])["messages"][-1]["text"] == "You said: again"

    def test_a_token_for_another_conversation_gets_not_found(self, api):
        one, two = api.start(), api.start()

        response = api.as_(one["token"]).post(f"/v1/agent/conversations/{two['conversation_id']}/turns", {"message": "x"})

        assert response.status_code == 404 and error_code(response) == "not_found"

    def test_a_stale_expected_seq_is_a_turn_conflict(self, api):
        started = api.start()

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "x", "expected_seq": 1})

        assert response.status_code == 409 and error_code(response) == "turn_conflict"

    def test_a_turn_while_a_client_action_is_pending_declines_it_and_is_the_next_turn(self, api):
        started = api.start("when can you deliver?")
        [waiting] = api.state(started["conversation_id"])["pending_client_actions"]

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "hello?"})

        assert response.status_code == 202, response.content
        state = api.state(started["conversation_id"])
        assert state["run_id"] == response.json()["run_id"] and state["messages"][-1]["text"] == "You said: hello?"
        usage = ToolUsageLog.objects.get(call_id=waiting["call_id"], conversation_id=started["conversation_id"])
        assert (usage.status, usage.output) == ("declined", {"declined": True, "reason": "hello?"})

    def test_a_turn_with_a_stale_expected_seq_declines_nothing_while_a_client_action_waits(self, api):
        started = api.start("when can you deliver?")
        cid = started["conversation_id"]
        head = api.state(cid)["seq"]

        response = api.post(f"/v1/agent/conversations/{cid}/turns", {"message": "hello?", "expected_seq": head - 1})

        assert response.status_code == 409 and error_code(response) == "turn_conflict"
        assert api.state(cid)["run_status"] == "waiting" and api.state(cid)["seq"] == head

    def test_a_completed_conversation_refuses_new_turns(self, api):
        started = api.start("bye")

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "one more"})

        assert api.state(started["conversation_id"])["conversation_status"] == "completed"
        assert response.status_code == 409 and error_code(response) == "conversation_completed"

    def test_an_exact_retry_with_the_same_idempotency_key_returns_the_same_turn(self, api):
        started = api.start()
        path = f"/v1/agent/conversations/{started['conversation_id']}/turns"
        first = api.post(path, {"message": "again"}, headers={"Idempotency-Key": "t-1"})

        again = api.post(path, {"message": "again"}, headers={"Idempotency-Key": "t-1"})

        assert again.status_code == 202 and again.json()["turn_id"] == first.json()["turn_id"]
        assert [m["text"] for m in api.state(started["conversation_id"])["messages"]].count("again") == 1

    def test_the_same_idempotency_key_with_another_message_is_refused(self, api):
        started = api.start()
        path = f"/v1/agent/conversations/{started['conversation_id']}/turns"
        api.post(path, {"message": "again"}, headers={"Idempotency-Key": "t-1"})

        response = api.post(path, {"message": "something else"}, headers={"Idempotency-Key": "t-1"})

        assert response.status_code == 422 and error_code(response) == "idempotency_key_reused"

    def test_a_token_cannot_speak_for_another_persona(self, api):
        started = api.start()

        response = api.as_(started["token"]).post(
            f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "x", "persona": "shop:someone-else"}
        )

        assert response.status_code == 403 and error_code(response) == "forbidden"

    def test_only_an_api_key_may_send_an_ingress_directive(self, api):
        started = api.start()
        path = f"/v1/agent/conversations/{started['conversation_id']}/turns"

        by_token = api.as_(started["token"]).post(path, {"message": "x", "directive": {"step_budget": 2}})
        by_key = api.post(path, {"message": "x", "directive": {"step_budget": 2}})

        assert by_token.status_code == 403
        assert by_key.status_code == 202


class TestMessages:
    def test_returns_messages_and_every_reconnect_field(self, api):
        started = api.start("when can you deliver?")

        state = api.state(started["conversation_id"])

        assert state["conversation_status"] == "active" and state["completed_at"] is None
        assert state["run_id"] == started["run_id"] and state["run_status"] == "waiting"
        assert state["pending_client_actions"][0].keys() >= {"call_id", "kind", "tool", "arguments", "requested_at"}
        assert state["pending_client_actions"][0]["kind"] == "client_tool"
        assert state["tool_summary"] == [{"tool": "pick_date", "kind": "client_tool", "state": "pending"}]
        assert state["progress"] and isinstance(state["seq"], int)

    def test_an_unchanged_conversation_answers_304_to_its_etag(self, api):
        started = api.start()
        path = f"/v1/runner/conversation/{started['conversation_id']}/messages"
        first = api.get(path)

        again = api.get(path, headers={"If-None-Match": first["ETag"]})

        assert first["ETag"] == f'"{first.json()["seq"]}"'
        assert again.status_code == 304 and again["ETag"] == first["ETag"]

    def test_a_new_turn_changes_the_etag(self, api):
        started = api.start()
        path = f"/v1/runner/conversation/{started['conversation_id']}/messages"
        first = api.get(path)
        api.post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "again"})

        again = api.get(path, headers={"If-None-Match": first["ETag"]})

        assert again.status_code == 200 and again["ETag"] != first["ETag"]

    def test_after_seq_returns_only_later_messages(self, api):
        started = api.start()
        seen = api.state(started["conversation_id"])["seq"]
        api.post(f"/v1/agent/conversations/{started['conversation_id']}/turns", {"message": "again"})

        response = api.get(f"/v1/runner/conversation/{started['conversation_id']}/messages", after_seq=seen)

        assert [m["text"] for m in response.json()["messages"]] == ["again", "You said: again"]

    def test_a_token_may_come_in_the_query_string(self, api):
        started = api.start()

        response = api.as_(None).get(f"/v1/runner/conversation/{started['conversation_id']}/messages", token=started["token"])

        assert response.status_code == 200

    @pytest.mark.parametrize("conversation_id", [NOBODY, "not-a-uuid", "../../etc"])
    def test_an_unknown_or_malformed_conversation_id_is_not_found(self, api, conversation_id):
        response = api.get(f"/v1/runner/conversation/{conversation_id}/messages")

        assert response.status_code == 404 and error_code(response) == "not_found"

    def test_a_negative_after_seq_is_invalid(self, api):
        started = api.start()

        response = api.get(f"/v1/runner/conversation/{started['conversation_id']}/messages", after_seq=-1)

        assert response.status_code == 422 and error_code(response) == "invalid_request"


class TestResults:
    def test_a_client_tool_result_continues_the_run_and_returns_the_state(self, api):
        started = api.start("when can you deliver?")
        run_id, call_id = pending_call(api, started["conversation_id"])

        response = api.as_(started["token"]).post(
            f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results",
            {"results": [{"call_id": call_id, "output": {"date": "2026-12-24"}}]},
        )

        assert response.status_code == 200
        assert response.json()["accepted"] == [call_id] and response.json()["run_resumes"] is True
        assert response.json()["state"]["messages"][-1]["text"] == 'Booked for {"date": "2026-12-24"}.'

    def test_an_identical_retry_is_accepted_again(self, api):
        started = api.start("when can you deliver?")
        run_id, call_id = pending_call(api, started["conversation_id"])
        path = f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results"
        api.post(path, {"results": [{"call_id": call_id, "output": {"date": "2026-12-24"}}]})

        again = api.post(path, {"results": [{"call_id": call_id, "output": {"date": "2026-12-24"}}]})

        assert again.status_code == 200 and again.json()["already"] == [call_id]

    def test_a_different_answer_is_a_conflict_that_names_the_accepted_answer(self, api):
        started = api.start("when can you deliver?")
        run_id, call_id = pending_call(api, started["conversation_id"])
        path = f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results"
        api.post(path, {"results": [{"call_id": call_id, "output": {"date": "2026-12-24"}}], "persona": "shop:alice"})

        response = api.post(path, {"results": [{"call_id": call_id, "output": {"date": "2027-01-02"}}], "persona": "shop:bob"})

        assert response.status_code == 409 and error_code(response) == "action_result_conflict"
        accepted = response.json()["error"]["accepted"]
        assert accepted["output"] == {"date": "2026-12-24"} and accepted["answered_by"] == "shop:alice"
        assert isinstance(accepted["seq"], int) and accepted["answered_at"]

    def test_an_approval_for_other_arguments_is_refused(self, api):
        started = api.start("I want a refund")
        run_id, call_id = pending_call(api, started["conversation_id"])

        response = api.post(
            f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results",
            {"results": [{"call_id": call_id, "output": {"decision": "approve",
                                                        "reviewed": {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 2000}}}}]},
        )

        assert response.status_code == 422 and error_code(response) == "approval_mismatch"

    def test_a_view_only_token_may_not_answer(self, api):
        started = api.start("when can you deliver?")
        run_id, call_id = pending_call(api, started["conversation_id"])
        api.post(f"/v1/agent/conversations/{started['conversation_id']}/participants",
                 {"persona": "shop:viewer", "permissions": ["view"]})
        issued = api.post(f"/v1/agent/conversations/{started['conversation_id']}/tokens", {"persona": "shop:viewer"}).json()

        response = api.as_(issued["token"]).post(
            f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results",
            {"results": [{"call_id": call_id, "output": {"date": "2026-12-24"}}]},
        )

        assert response.status_code == 403 and error_code(response) == "forbidden"

    def test_an_answer_after_a_simple_runs_expiry_is_refused(self, api, settings):
        settings.WAYPOINT_SIMPLE_EXPIRY_SECONDS = 0
        started = api.start("when can you deliver?", assistant=api.create_assistant(mode="simple"))
        run_id, call_id = pending_call(api, started["conversation_id"])

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results",
                            {"results": [{"call_id": call_id, "output": {"date": "2026-12-24"}}]})

        assert response.status_code == 409 and error_code(response) == "run_expired"

    @pytest.mark.parametrize("run_id", ["run_0000", "has%20space", "x" * 100])
    def test_an_unknown_run_is_not_found(self, api, run_id):
        started = api.start()

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results",
                            {"results": [{"call_id": "c", "output": 1}]})

        assert response.status_code == 404 and error_code(response) == "not_found"


class TestContinue:
    def test_continues_after_a_failed_run(self, api, settings):
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0
        settings.WAYPOINT_OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there: the run fails
        assistant = api.create_assistant(model={"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
        started = api.start("hello", assistant=assistant)
        assert api.state(started["conversation_id"])["run_status"] == "failed"

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/continue")

        assert response.status_code == 202 and response.json()["run_id"] != started["run_id"]

    def test_there_is_nothing_to_continue_after_a_completed_run(self, api):
        started = api.start()

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/continue")

        assert response.status_code == 409 and error_code(response) == "nothing_to_continue"

    def test_a_completed_conversation_cannot_be_continued(self, api):
        started = api.start("bye")

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/continue")

        assert response.status_code == 409 and error_code(response) == "conversation_completed"


class TestTokens:
    def test_an_issued_token_reads_the_conversation_as_its_persona(self, api):
        started = api.start()
        api.post(f"/v1/agent/conversations/{started['conversation_id']}/participants", {"persona": "shop:agent-7"})

        issued = api.post(f"/v1/agent/conversations/{started['conversation_id']}/tokens", {"persona": "shop:agent-7"})

        assert issued.status_code == 201 and issued.json()["persona"] == "shop:agent-7"
        assert api.as_(issued.json()["token"]).get(f"/v1/runner/conversation/{started['conversation_id']}/messages").status_code == 200

    def test_a_revoked_token_is_no_longer_accepted(self, api):
        started = api.start()
        path = f"/v1/runner/conversation/{started['conversation_id']}/messages"

        revoked = api.post(f"/v1/agent/conversations/{started['conversation_id']}/tokens/revoke", {"token": started["token"]})

        assert revoked.status_code == 200 and revoked.json() == {"revoked": True}
        response = api.as_(started["token"]).get(path)
        assert response.status_code == 401 and error_code(response) == "unauthorized"


class TestPeople:
    def test_a_private_conversation_gives_no_token_to_a_stranger(self, api):
        started = api.start()

        response = api.post(f"/v1/agent/conversations/{started['conversation_id']}/tokens", {"persona": "shop:stranger"})

        assert response.status_code == 403 and error_code(response) == "forbidden"

    def test_a_participant_gets_no_more_than_it_was_admitted_with(self, api):
        started = api.start()
        path = f"/v1/agent/conversations/{started['conversation_id']}"
        admitted = api.post(f"{path}/participants", {"persona": "shop:viewer", "permissions": ["view"]})

        response = api.post(f"{path}/tokens", {"persona": "shop:viewer", "permissions": ["view", "approve"]})

        assert admitted.status_code == 201 and api.state(started["conversation_id"])["visibility"] == "shared"
        assert response.status_code == 403 and error_code(response) == "forbidden"

    def test_removing_a_participant_revokes_its_token(self, api):
        started = api.start()
        path = f"/v1/agent/conversations/{started['conversation_id']}"
        api.post(f"{path}/participants", {"persona": "shop:agent-7"})
        token = api.post(f"{path}/tokens", {"persona": "shop:agent-7"}).json()["token"]

        removed = api.post(f"{path}/participants/remove", {"persona": "shop:agent-7"})

        assert removed.status_code == 200 and removed.json()["revoked_tokens"] == 1
        assert api.as_(token).get(f"/v1/runner/conversation/{started['conversation_id']}/messages").status_code == 401


class TestMemory:
    def test_remembered_facts_are_listed_and_cleared(self, api):
        assistant = api.create_assistant(model={"provider": "scripted", "rules": [
            {"match": "remember", "steps": [{"call": "remember", "arguments": {"fact": "prefers email"}}, {"say": "Noted."}]}],
            "fallback": [{"say": "I remember: {memory}"}]})
        started = api.start("remember this", assistant=assistant)
        path = f"/v1/agent/conversations/{started['conversation_id']}/memory"
        listed = api.get(path).json()

        cleared = api.post(f"{path}/clear", {})

        assert [f["text"] for f in listed] == ["prefers email"]
        assert cleared.status_code == 200 and api.get(path).json() == []
