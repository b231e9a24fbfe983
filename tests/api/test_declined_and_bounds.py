"""Declined answers (`output: {"declined": true}`), date bounds and a tool's words, through the v1 API."""

from __future__ import annotations

import pytest

from apps.ledger import store
from tests.api.test_contract import pending_call
from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

DATE = {"type": "string", "format": "date", "title": "Delivery date", "minimum": "2026-12-01", "maximum": "2026-12-31"}
MODEL = {"provider": "scripted", "rules": [
    {"match": "help", "steps": [{"call": "ask_question", "arguments": {"question": "Which order?"}},
                                {"when": "declined", "say": "Skipped, fine."}, {"say": "Looking at {result.answer}."}]},
    {"match": "when", "steps": [{"call": "pick_date"}, {"when": "declined", "say": "No date then."},
                                {"say": "Booked for {result.date}."}]},
]}
TOOLS = [{"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"date": DATE}}}]


@pytest.fixture
def begin(api):
    assistant = api.create_assistant(model=MODEL, tools=TOOLS)

    def start(message: str) -> tuple[dict, str, str]:
        started = api.start(message, assistant=assistant)
        run_id, call_id = pending_call(api, started["conversation_id"])
        return started, run_id, call_id

    return start


def results(api, started, run_id, call_id, output):
    return api.as_(started["token"]).post(f"/v1/agent/conversations/{started['conversation_id']}/runs/{run_id}/results",
                                          {"results": [{"call_id": call_id, "output": output}]})


class TestDeclining:
    def test_a_declined_question_is_recorded_and_the_model_sees_it(self, api, begin):
        started, run_id, call_id = begin("help me")

        response = results(api, started, run_id, call_id, {"declined": True})

        assert response.status_code == 200
        state = response.json()["state"]
        assert state["messages"][-1]["text"] == "Skipped, fine."
        assert state["answered_client_actions"][0]["output"] == {"declined": True}
        [entry] = [e for e in store.read(started["conversation_id"]) if e.kind == "question_response"]
        assert entry.payload["declined"] is True and entry.payload["answer"] == ""

    def test_a_declined_client_action_is_recorded_and_the_model_sees_it(self, api, begin):
        started, run_id, call_id = begin("when?")

        response = results(api, started, run_id, call_id, {"declined": True})

        assert response.status_code == 200 and response.json()["state"]["messages"][-1]["text"] == "No date then."

    def test_declining_again_is_idempotent_and_answering_after_it_conflicts(self, api, begin):
        started, run_id, call_id = begin("help me")
        results(api, started, run_id, call_id, {"declined": True})

        again = results(api, started, run_id, call_id, {"declined": True})
        other = results(api, started, run_id, call_id, {"answer": "A-1"})

        assert again.status_code == 200 and again.json()["already"] == [call_id]
        assert other.status_code == 409 and other.json()["error"]["code"] == "action_result_conflict"

    def test_an_answered_question_entry_does_not_carry_declined(self, api, begin):
        started, run_id, call_id = begin("help me")

        results(api, started, run_id, call_id, {"answer": "A-1"})

        [entry] = [e for e in store.read(started["conversation_id"]) if e.kind == "question_response"]
        assert "declined" not in entry.payload and api.state(started["conversation_id"])["messages"][-1]["text"] == "Looking at A-1."

    @pytest.mark.parametrize("output", [{"declined": False}, {"declined": "yes"}, {"declined": True, "answer": "x"}])
    def test_a_question_takes_only_an_answer_or_exactly_declined(self, api, begin, output):
        started, run_id, call_id = begin("help me")

        response = results(api, started, run_id, call_id, output)

        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"

    def test_an_approval_cannot_be_declined(self, api):
        started = api.start("refund please")
        run_id, call_id = pending_call(api, started["conversation_id"])

        response = results(api, started, run_id, call_id, {"declined": True})

        assert response.status_code == 422 and api.state(started["conversation_id"])["run_status"] == "waiting"


class TestDateBounds:
    @pytest.mark.parametrize(("date", "message"), [
        ("2026-11-30", "Delivery date must be on or after 2026-12-01"),
        ("2027-01-01", "Delivery date must be on or before 2026-12-31"),
        ("next week", "Delivery date must be a date like 2026-12-24"),
        ("2026-12-32", "Delivery date must be a date like 2026-12-24"),
    ])
    def test_a_date_outside_the_bounds_is_refused_and_nothing_is_recorded(self, api, begin, date, message):
        started, run_id, call_id = begin("when?")
        head = api.state(started["conversation_id"])["seq"]

        response = results(api, started, run_id, call_id, {"date": date})

        assert response.status_code == 422 and response.json()["error"] == {"code": "invalid_request", "message": message}
        assert api.state(started["conversation_id"])["seq"] == head

    @pytest.mark.parametrize("date", ["2026-12-01", "2026-12-31"])
    def test_the_bounds_themselves_are_allowed(self, api, begin, date):
        started, run_id, call_id = begin("when?")

        response = results(api, started, run_id, call_id, {"date": date})

        assert response.status_code == 200 and response.json()["state"]["messages"][-1]["text"] == f"Booked for {date}."

    def test_min_and_max_are_read_too(self, api):
        tools = [{"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {
            "date": {"type": "string", "format": "date", "min": "2026-12-10", "max": "2026-12-11"}}}}]
        started = api.start("when?", assistant=api.create_assistant(model=MODEL, tools=tools))
        run_id, call_id = pending_call(api, started["conversation_id"])

        response = results(api, started, run_id, call_id, {"date": "2026-12-09"})

        assert response.status_code == 422 and response.json()["error"]["message"] == "date must be on or after 2026-12-10"


def create(api, tool: dict):
    return api.post("/v1/assistants", {**SUPPORT_CONFIG, "tools": [*SUPPORT_CONFIG["tools"], tool]})


class TestToolWordsAndBoundsInTheConfiguration:
    def test_a_summary_naming_the_tools_parameters_is_accepted(self, api):
        response = create(api, {"name": "refund", "kind": "server", "action": "echo", "display_name": "Refund",
                                "summary": "Refund {amount} for order {order_id}",
                                "parameters": {"type": "object", "properties": {"amount": {}, "order_id": {}}}})

        assert response.status_code == 201

    @pytest.mark.parametrize(("tool", "problem"), [
        ({"summary": "Refund {amount} for order {order}"},
         "tools[3].summary: names {order}, which is not among the tool's parameters"),
        ({"summary": "Refund {amount"}, "tools[3].summary: malformed template: expected '}' before end of string"),
        ({"summary": "Refund {amount:>10}"},
         "tools[3].summary: malformed template: {amount} is not an argument name (use {order_id}, nothing after it)"),
        ({"summary": "Refund {0}"},
         "tools[3].summary: malformed template: {0} is not an argument name (use {order_id}, nothing after it)"),
        ({"summary": ""}, 'tools[3].summary: a template of 1 to 300 characters, like "Refund {amount} for order {order_id}"'),
        ({"display_name": ["Refund"]}, "tools[3].display_name: text of 1 to 80 characters"),
        ({"parameters": {"type": "object", "properties": {"day": {"type": "string", "format": "date", "minimum": "soon"}}}},
         "tools[3].parameters.properties.day: a date's minimum and maximum must be dates like 2026-12-24, or \"today\""),
        ({"parameters": {"type": "object", "properties": {"day": {"format": "date", "min": "2026-12-02", "max": "2026-12-01"}}}},
         "tools[3].parameters.properties.day: the minimum 2026-12-02 is after the maximum 2026-12-01"),
    ])
    def test_a_bad_summary_display_name_or_date_bound_is_a_clear_422(self, api, tool, problem):
        base = {"name": "refund", "kind": "server", "action": "echo",
                "parameters": {"type": "object", "properties": {"amount": {}, "order_id": {}}}}

        response = create(api, {**base, **tool})

        assert response.status_code == 422
        assert response.json()["error"]["code"] == "invalid_assistant_config"
        assert response.json()["error"]["problems"] == [problem]

    def test_the_openapi_document_describes_display_name_and_summary(self, api):
        document = api.get("/v1/openapi.json").json()

        tool = document["components"]["schemas"]["AssistantConfigIn"]["properties"]["tools"]["items"]["properties"]
        assert tool["display_name"]["type"] == "string" and "placeholders" in tool["summary"]["description"]
