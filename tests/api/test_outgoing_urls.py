"""Every URL the API takes for an outgoing call is checked: a malformed or refused one is a 422, never a 500."""

from __future__ import annotations

import pytest
from django.test import override_settings

from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

MALFORMED = ["https://[::1/x", "https://127.0.0.1:99999/", "https://[::1]:70000/"]
NOT_GLOBAL = ["https://[::127.0.0.1]/", "https://[64:ff9b::7f00:1]/", "https://[2002:7f00:1::]/", "https://224.0.0.1/"]
WITH_CREDENTIALS = ["https://shop:s3cret@127.0.0.1/hook", "https://token@127.0.0.1/hook"]


def webhook_tool(url: str) -> dict:
    return {"name": "issue_refund", "kind": "server", "action": "webhook", "url": url}


def with_tool(tool: dict) -> dict:
    return {**SUPPORT_CONFIG, "tools": [t for t in SUPPORT_CONFIG["tools"] if t["name"] != tool["name"]] + [tool]}


def assert_contract_422(answer, code: str) -> dict:
    assert answer.status_code == 422, answer.content
    error = answer.json()["error"]
    assert error["code"] == code and error["message"]
    return error


class TestWebhookEndpointUrls:
    @pytest.mark.parametrize("url", MALFORMED)
    @override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
    def test_a_malformed_url_is_422_even_where_private_addresses_are_allowed(self, api, url):
        answer = api.post("/v1/webhook-endpoints", {"url": url})

        assert_contract_422(answer, "invalid_request")

    @pytest.mark.parametrize("url", MALFORMED + NOT_GLOBAL)
    def test_a_malformed_url_or_one_that_is_not_global_unicast_is_422(self, api, url):
        answer = api.post("/v1/webhook-endpoints", {"url": url})

        assert_contract_422(answer, "invalid_request")

    @pytest.mark.parametrize("url", WITH_CREDENTIALS)
    @override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
    def test_a_user_name_or_password_is_422_pointing_to_the_signature(self, api, url):
        answer = api.post("/v1/webhook-endpoints", {"url": url})

        error = assert_contract_422(answer, "invalid_request")
        assert "signature" in error["message"] and "s3cret" not in answer.content.decode()

    @override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
    def test_a_query_string_is_accepted(self, api):
        answer = api.post("/v1/webhook-endpoints", {"url": "http://127.0.0.1:8080/hook?token=abc"})

        assert answer.status_code == 201, answer.content


class TestAssistantUrls:
    @pytest.mark.parametrize("url", MALFORMED)
    def test_a_malformed_webhook_action_url_is_422(self, api, url):
        answer = api.post("/v1/assistants", with_tool(webhook_tool(url)))

        error = assert_contract_422(answer, "invalid_assistant_config")
        assert any(p.startswith("tools[2].url: ") for p in error["problems"]), error

    @pytest.mark.parametrize("url", WITH_CREDENTIALS)
    def test_a_webhook_action_url_with_a_user_name_or_password_is_422(self, api, url):
        answer = api.post("/v1/assistants", with_tool(webhook_tool(url)))

        error = assert_contract_422(answer, "invalid_assistant_config")
        assert any("signature" in p for p in error["problems"]), error

    @pytest.mark.parametrize("origin", ["https://[::1", "https://[::1/x", "https://shop.example:99999"])
    def test_a_malformed_allowed_origin_is_422(self, api, origin):
        answer = api.post("/v1/assistants", {**SUPPORT_CONFIG, "allowed_origins": [origin]})

        assert_contract_422(answer, "invalid_assistant_config")
