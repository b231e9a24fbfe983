"""The OpenAPI document says what the API accepts, so a request valid by the document is not refused."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def document(api: Api) -> dict:
    return api.get("/v1/openapi.json").json()["components"]["schemas"]


def test_assistant_settings_are_typed_and_not_nullable_where_the_server_refuses_null(document):
    props = document["AssistantConfigIn"]["properties"]

    assert props["step_budget"]["type"] == "integer" and (props["step_budget"]["minimum"], props["step_budget"]["maximum"]) == (1, 64)
    assert props["mode"]["enum"] == ["agent", "simple"]
    assert props["allowed_origins"]["type"] == "array" and "pattern" in props["allowed_origins"]["items"]
    assert props["required_approver"]["type"] == "string" and props["name"]["type"] == "string"
    assert props["model"]["required"] == ["provider"]


def test_the_documented_constraints_of_turns_results_and_participants(document):
    seq = document["TurnIn"]["properties"]["expected_seq"]["anyOf"][0]
    assert seq == {"description": "a log position (`seq`)", "minimum": 0, "type": "integer"}
    assert document["ResultsIn"]["properties"]["results"]["uniqueItems"] is True
    assert document["ParticipantIn"]["properties"]["permissions"]["contains"] == {"const": "view"}  # arrays only: null passes


def test_a_whole_number_written_as_7_0_is_a_seq_and_a_numeric_string_is_not(api: Api):
    started = api.start("hello")
    path = f"/v1/agent/conversations/{started['conversation_id']}/turns"
    head = api.state(started["conversation_id"])["seq"]

    assert api.post(path, {"message": "text seq", "expected_seq": str(head)}).status_code == 422
    assert api.post(path, {"message": "float seq", "expected_seq": float(head)}).status_code == 202


def test_the_ag_ui_endpoint_is_listed_with_its_event_stream(api: Api):
    operation = api.get("/v1/openapi.json").json()["paths"]["/v1/ag-ui/{assistant_id}"]["post"]

    assert "text/event-stream" in operation["responses"]["200"]["content"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/RunAgentInputIn")
    assert operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
