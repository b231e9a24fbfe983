"""Who may call the API: bearer credentials only, never cookies; and rate limits per credential and address."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from apps.workspaces.keys import create_api_key, revoke_api_key
from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

CONFIG = {"name": "Tiny", "model": {"provider": "scripted", "rules": []}}


class TestAuthentication:
    @pytest.mark.parametrize("authorization", [None, "Bearer", "Bearer wp_not-a-key", "Bearer forged.token", "Basic Zm9vOmJhcg=="])
    def test_a_missing_or_invalid_credential_is_unauthorized(self, authorization):
        headers = {"Authorization": authorization} if authorization else {}

        response = Client().post("/v1/assistants", CONFIG, content_type="application/json", headers=headers)

        assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"

    def test_a_revoked_api_key_is_unauthorized(self):
        key, raw = create_api_key(name="old")
        revoke_api_key(key=key)

        response = Api(raw).post("/v1/assistants", CONFIG)

        assert response.status_code == 401

    def test_an_api_key_is_not_accepted_in_the_query_string(self, api_key):
        response = Client().post(f"/v1/assistants?token={api_key}", CONFIG, content_type="application/json")

        assert response.status_code == 401

    def test_a_staff_session_cookie_is_not_a_credential(self):
        client = Client()
        client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))

        response = client.post("/v1/assistants", CONFIG, content_type="application/json")

        assert response.status_code == 401

    def test_bearer_requests_need_no_csrf_token(self, api_key):
        client = Client(enforce_csrf_checks=True)

        response = client.post("/v1/assistants", CONFIG, content_type="application/json", headers={"Authorization": f"Bearer {api_key}"})

        assert response.status_code == 201

    def test_the_openapi_document_and_docs_are_public(self):
        client = Client()

        document = client.get("/v1/openapi.json")
        docs = client.get("/v1/docs")

        assert document.status_code == 200 and document.json()["openapi"].startswith("3.")
        assert docs.status_code == 200 and b"swagger" in docs.content.lower()


class TestCrossOrigin:
    def test_a_preflight_is_answered_for_any_origin(self):
        response = Client().options("/v1/agent/conversations", headers={
            "Origin": "https://shop.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, idempotency-key"})

        assert response.status_code == 204
        assert response["Access-Control-Allow-Origin"] == "*"
        assert "Idempotency-Key" in response["Access-Control-Allow-Headers"]

    def test_responses_are_readable_cross_origin_but_never_with_credentials(self, api):
        response = api.post("/v1/assistants", CONFIG, headers={"Origin": "https://shop.example"})

        assert response["Access-Control-Allow-Origin"] == "*"
        assert "ETag" in response["Access-Control-Expose-Headers"]
        assert "Access-Control-Allow-Credentials" not in response

    def test_an_unknown_path_is_a_json_404_even_for_a_post_without_csrf(self):
        response = Client(enforce_csrf_checks=True).post("/v1/nothing/here", {}, content_type="application/json")

        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


class TestRateLimits:
    def test_a_credential_over_its_limit_gets_429_with_retry_after(self, api, settings):
        settings.WAYPOINT_RATE_LIMIT_PER_CREDENTIAL = 2
        api.post("/v1/assistants", CONFIG)
        api.post("/v1/assistants", CONFIG)

        response = api.post("/v1/assistants", CONFIG)

        assert response.status_code == 429 and response.json()["error"]["code"] == "rate_limited"
        assert 1 <= int(response["Retry-After"]) <= settings.WAYPOINT_RATE_LIMIT_WINDOW_SECONDS

    def test_another_credential_from_elsewhere_is_not_affected(self, api, settings):
        settings.WAYPOINT_RATE_LIMIT_PER_CREDENTIAL = 1
        api.post("/v1/assistants", CONFIG)
        _, other = create_api_key(name="other")

        response = Api(other).client.post("/v1/assistants", CONFIG, content_type="application/json",
                                           headers={"Authorization": f"Bearer {other}"}, REMOTE_ADDR="10.1.2.3")

        assert response.status_code == 201

    def test_an_address_over_its_limit_gets_429_whatever_the_credential(self, api, settings):
        settings.WAYPOINT_RATE_LIMIT_PER_IP = 2
        api.post("/v1/assistants", CONFIG)
        api.as_(None).post("/v1/assistants", CONFIG)

        response = api.as_("wp_another").post("/v1/assistants", CONFIG)

        assert response.status_code == 429 and "Retry-After" in response
