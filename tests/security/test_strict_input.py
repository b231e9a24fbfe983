"""
Bad input that used to get through: a NUL byte in a form field (a 500 from PostgreSQL), a memory
clear whose body is not the object it documents (read as "clear everything"), origins that are not
origins. Each is refused with a 4xx in the contract's shape, and nothing is written.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.models import ChatMessage, Conversation
from apps.ledger import store
from apps.workspaces.models import Memory
from tests.api.conftest import Api
from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def state(cid: str) -> dict:
    return conversation_state(queries.conversation_for(cid))


class TestControlCharactersInForms:
    def test_a_nul_in_a_sent_message_is_refused_on_the_page_and_nothing_is_written(self, start):
        started = start("hello")
        before = store.read(started["conversation_id"])

        response = Client().post(f"/c/{started['conversation_id']}/send", {"token": started["token"], "message": "hi\x00there"})

        assert response.status_code == 422
        assert "must not contain control characters" in response.content.decode()
        assert store.read(started["conversation_id"]) == before

    def test_a_nul_in_a_question_answer_is_refused_and_the_question_stays_open(self, start, make_assistant):
        asking = make_assistant(model={"provider": "scripted", "rules": [{"match": "help", "steps": [
            {"call": "ask_question", "arguments": {"question": "Which order?"}}, {"say": "Thanks: {result}"}]}]})
        started = start("help", assistant=asking)
        cid = started["conversation_id"]
        s = state(cid)
        [call] = s["pending_client_actions"]

        response = Client().post(f"/c/{cid}/answer", {"token": started["token"], "run_id": s["run_id"], "call_id": call["call_id"],
                                                      "answer": "A-\x007"})

        assert response.status_code == 422
        assert state(cid)["pending_client_actions"] == s["pending_client_actions"]

    def test_a_nul_in_reviewed_approval_arguments_is_refused(self, start):
        started = start("refund please")
        cid = started["conversation_id"]
        s = state(cid)
        [call] = s["pending_client_actions"]
        arguments = json.dumps({**call["arguments"], "order_id": "A-1\u0000"})

        response = Client().post(f"/c/{cid}/answer", {"token": started["token"], "run_id": s["run_id"], "call_id": call["call_id"],
                                                      "decision": "approve", "reviewed_tool": call["tool"],
                                                      "reviewed_arguments": arguments})

        assert response.status_code in (400, 409, 422) and response.status_code != 500
        assert state(cid)["run_status"] == "waiting"

    def test_a_nul_in_a_widgets_first_message_is_refused_and_no_conversation_is_made(self, make_assistant):
        assistant = make_assistant()

        response = Client().post(f"/w/{assistant.id}/start", {"message": "hello\x00", "embed": "1"})

        assert response.status_code == 422
        assert not Conversation.objects.exists() and not ChatMessage.objects.exists()

    def test_other_control_characters_are_refused_too_but_tabs_and_line_breaks_are_text(self, start):
        started = start("hello")
        cid = started["conversation_id"]

        refused = Client().post(f"/c/{cid}/send", {"token": started["token"], "message": "ring\x07"})
        kept = Client().post(f"/c/{cid}/send", {"token": started["token"], "message": "line one\r\n\tline two"})

        assert refused.status_code == 422 and kept.status_code == 302


class TestMemoryClearBody:
    @pytest.fixture
    def remembered(self, api: Api, make_assistant):
        assistant = make_assistant(model={"provider": "scripted", "rules": [
            {"match": "remember", "steps": [{"call": "remember", "arguments": {"fact": "Favourite colour: teal"}}, {"say": "Noted."}]},
        ]})
        return api.start("remember my colour", assistant=str(assistant.id))["conversation_id"]

    @pytest.mark.parametrize("body", ["[null,null]", '"x"', "42", "null", '{"bogus":1}', '{"fact_ids": "all"}'])
    def test_a_body_that_is_not_the_documented_object_clears_nothing(self, api: Api, remembered, body):
        response = api.post(f"/v1/agent/conversations/{remembered}/memory/clear", raw=body)

        assert response.status_code in (400, 422)
        assert set(response.json()) == {"error"} and response.json()["error"]["code"]
        assert Memory.objects.filter(conversation_id=remembered, status="active").count() == 1

    def test_an_empty_object_still_clears_every_fact(self, api: Api, remembered):
        response = api.post(f"/v1/agent/conversations/{remembered}/memory/clear", {})

        assert response.status_code == 200
        assert Memory.objects.filter(conversation_id=remembered, status="active").count() == 0


class TestAllowedOrigins:
    @pytest.mark.parametrize("origin", [
        "https://shop.example/", "https://shop.example/path", "https://user:pw@shop.example", "https://shop.example?x=1",
        "https://shop.example#top", "https://*.shop.example", "https://shop.example:99999", "https://shop.example:0",
        "https://shop.example;script-src", "ftp://shop.example", "https://",
    ])
    def test_a_value_that_is_not_scheme_host_and_port_is_refused(self, api: Api, origin):
        response = api.post("/v1/assistants", {**SUPPORT_CONFIG, "allowed_origins": [origin]})

        assert response.status_code == 422 and "allowed_origins" in response.json()["error"]["message"]

    @pytest.mark.parametrize("origin", ["https://shop.example", "http://localhost:8001", "http://127.0.0.1:8001", "https://[::1]:8443"])
    def test_an_origin_is_accepted(self, api: Api, origin):
        assert api.post("/v1/assistants", {**SUPPORT_CONFIG, "allowed_origins": [origin]}).status_code == 201


class TestControlCharactersInPanelForms:
    @pytest.fixture
    def staff_client(self, django_user_model):
        user = django_user_model.objects.create_user(username="ops", password="a long staff password", is_staff=True)
        client = Client()
        client.force_login(user)
        return client

    def test_a_nul_in_an_assistant_form_is_refused_with_a_page_for_people(self, staff_client):
        from apps.agent.models import Assistant

        config = json.dumps({**SUPPORT_CONFIG, "name": "Shop\u0000help"})
        response = staff_client.post("/staff/assistants/new", {"config": config, "allowed_origins": ""})

        assert response.status_code == 422
        assert "must not contain control characters" in response.content.decode()
        assert not Assistant.objects.exists()

    def test_a_raw_nul_in_any_panel_form_field_is_refused_with_a_page_for_people(self, staff_client):
        from apps.agent.models import Assistant

        response = staff_client.post("/staff/assistants/new", {"config": json.dumps(SUPPORT_CONFIG), "allowed_origins": "\x00"})

        assert response.status_code == 422
        assert "cannot be saved (such as NUL)" in response.content.decode() and "Traceback" not in response.content.decode()
        assert not Assistant.objects.exists()

    def test_a_nul_in_a_quarantine_note_is_refused(self, staff_client):
        response = staff_client.post("/staff/quarantine/run_x/resolve", {"resolution": "done", "note": "R-1\x00"})

        assert response.status_code == 422
