"""Bad input of every kind gets the contract's error shape and a 4xx, never a 500."""

from __future__ import annotations

import json

import pytest
from asgiref.testing import ApplicationCommunicator
from django.core.asgi import get_asgi_application
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from apps.agent.config import ConfigError, check_config
from tests.api.conftest import Api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
STEP = st.fixed_dictionaries({}, optional={k: JSON for k in ("say", "call", "arguments", "calls", "stream")})
RULE = st.fixed_dictionaries({}, optional={"match": JSON | st.text(), "steps": st.lists(STEP, max_size=3) | JSON})
MODEL = st.fixed_dictionaries({}, optional={
    "provider": st.sampled_from(["scripted", "openai"]) | JSON, "rules": st.lists(RULE, max_size=3) | JSON,
    "fallback": st.lists(STEP, max_size=2) | JSON, "model": JSON, "base_url": JSON,
})
TOOL = st.fixed_dictionaries({}, optional={
    k: JSON for k in ("name", "kind", "action", "url", "requires_approval", "answered_by", "parameters")
})
CONFIG = st.fixed_dictionaries({}, optional={
    **{k: JSON for k in ("name", "allow_conversation_completion", "step_budget", "mode", "idle_timeout_seconds",
                         "allowed_origins", "required_approver")},
    "tools": st.lists(TOOL | JSON, max_size=3) | JSON, "model": MODEL | JSON,
})

GARBAGE: list[bytes] = [
    b"", b"{", b"}", b"not json", b"\xff\xfe\x00", b"null", b"[]", b"42", b'"text"', b"true", b"{}",
    b'{"message": "x",}', b"{'message': 'x'}", b'{"message": NaN}', b'{"message": "x", "expected_seq": Infinity}',
    b'{"message": "x", "expected_seq": 1e400}', b'{"message": "x", "metadata": {"n": 123456789012345678901234567890}}',
    b'{"message": "a\\u0000b"}', b'{"message": "\\ud800"}', b'{"message": "x", "metadata": {"\\u0000": 1}}',
    b"[" * 5000 + b"]" * 5000, b'{"metadata": ' + b'{"a": ' * 200 + b"1" + b"}" * 200 + b"}",
    b'{"message": null}', b'{"message": 5}', b'{"message": ["a"]}', b'{"message": {"a": 1}}',
    json.dumps({"message": "x" * 30_000}).encode(), b'{"message": "x", "expected_seq": "1"}',
    b'{"message": "x", "expected_seq": -1}', b'{"message": "x", "expected_seq": 1.5}', b'{"message": "x", "expected_seq": true}',
    b'{"message": "x", "expected_seq": 99999999999999999999999}',
    b'{"message": "x", "directive": {"step_budget": 0}}', b'{"message": "x", "directive": "fast"}',
    b'{"message": "x", "directive": {"unknown": 1}}', b'{"message": "x", "persona": 7}', b'{"message": "x", "persona": "a:b:c:d"}',
    b'{"assistant": 1, "message": "x"}', b'{"assistant": null, "message": "x"}', b'{"assistant": "../x", "message": "x"}',
    b'{"message": "x", "metadata": [1]}', json.dumps({"message": "x", "metadata": {"k": "v" * 20_000}}).encode(),
    b'{"results": "x"}', b'{"results": []}', b'{"results": [1, 2]}', b'{"results": [{"call_id": 1, "output": 1}]}',
    b'{"results": [{"call_id": "c"}]}', b'{"results": [{"call_id": "", "output": 1}]}',
    b'{"results": [{"call_id": "c", "output": 1}, {"call_id": "c", "output": 2}]}',
    b'{"results": [{"call_id": "\\u0000", "output": 1}]}', b'{"token": 5}', b'{"token": ""}',
    b'{"persona": "", "permissions": ["root"]}', b'{"persona": "shop:x", "permissions": "view"}',
    b'{"name": {"x": 1}, "model": 3, "tools": "all"}', b'{"name": "x", "model": {"provider": "scripted", "rules": [{"match": "("}]}}',
]


@pytest.fixture
def unlimited(settings):
    """Hundreds of requests in a few seconds: keep the rate limiter from answering in their place."""
    settings.WAYPOINT_RATE_LIMIT_PER_IP = 0
    settings.WAYPOINT_RATE_LIMIT_PER_CREDENTIAL = 0


@pytest.fixture
def paused(api: Api) -> dict:
    started = api.start("when can you deliver?")
    return {**started, "state": api.state(started["conversation_id"])}


def post_paths(paused: dict) -> list[str]:
    cid, run_id = paused["conversation_id"], paused["state"]["run_id"]
    return [
        "/v1/assistants",
        "/v1/agent/conversations",
        f"/v1/agent/conversations/{cid}/turns",
        f"/v1/agent/conversations/{cid}/runs/{run_id}/results",
        f"/v1/agent/conversations/{cid}/continue",
        f"/v1/agent/conversations/{cid}/tokens",
        f"/v1/agent/conversations/{cid}/tokens/revoke",
    ]


def assert_contract_error(response, context) -> None:
    assert 400 <= response.status_code < 500 and response.status_code != 429, (context, response.status_code, response.content[:300])
    body = response.json()
    assert set(body) == {"error"}, (context, body)
    assert isinstance(body["error"]["code"], str) and body["error"]["code"].islower(), (context, body)
    assert isinstance(body["error"]["message"], str), (context, body)


class TestGarbage:
    def test_no_garbage_body_on_any_endpoint_gets_a_server_error(self, api, paused, unlimited):
        for path in post_paths(paused):
            for body in GARBAGE:
                for content_type in ("application/json", "text/plain"):
                    response = api.post(path, raw=body, content_type=content_type)

                    if response.status_code < 400:
                        # {} is a complete request for the endpoints that take no body or only optional fields;
                        # a body with a valid message (unknown keys are ignored, as everywhere) is a turn,
                        # which declines what the paused run waits for.
                        sent = json.loads(body) if response.status_code == 202 else None
                        assert body == b"{}" or path.endswith("/continue") or (
                            path.endswith("/turns") and isinstance(sent, dict) and isinstance(sent.get("message"), str)
                        ), (path, body, response.status_code)
                        continue
                    assert_contract_error(response, (path, body[:80]))

    def test_malformed_json_is_a_400_malformed_json(self, api):
        response = api.post("/v1/agent/conversations", raw=b'{"assistant": ')

        assert response.status_code == 400 and response.json()["error"]["code"] == "malformed_json"

    def test_a_schema_violation_is_a_422_invalid_request_that_says_where(self, api):
        response = api.post("/v1/agent/conversations", {"assistant": "a", "message": 5})

        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"
        assert any(p.startswith("message:") for p in response.json()["error"]["problems"])

    def test_garbage_in_queries_headers_and_paths_gets_4xx(self, api, paused, unlimited):
        cid = paused["conversation_id"]
        messages = f"/v1/runner/conversation/{cid}/messages"
        cases = [
            api.get(messages, after_seq="abc"), api.get(messages, after_seq="99999999999999999999"),
            api.get(messages, after_seq="1e3"), api.as_(None).get(messages, token="\x00"),
            api.as_(None).get(messages, token="x" * 5000),
            api.as_("\x00").get(messages), api.as_("wp_" + "x" * 10_000).get(messages),
            api.get(messages, headers={"Authorization": "Basic Zm9vOmJhcg=="}),
            api.get("/v1/runner/conversation/%00/messages"), api.get(f"/v1/runner/conversation/{cid}%00/messages"),
            api.post(f"/v1/agent/conversations/{cid}/runs/%00/results", {"results": [{"call_id": "c", "output": 1}]}),
            api.post(f"/v1/agent/conversations/{cid}/turns", {"message": "x"}, headers={"Idempotency-Key": "k" * 500}),
            api.post(f"/v1/agent/conversations/{cid}/turns", {"message": "x"}, headers={"Idempotency-Key": "ключ"}),
            api.get("/v1/agent/conversations"), api.client.delete("/v1/assistants"), api.get("/v1/no/such/path"),
        ]

        for i, response in enumerate(cases):
            assert_contract_error(response, i)


class TestAssistantConfigurations:
    @pytest.mark.django_db(False)
    @hypothesis_settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(config=CONFIG)
    def test_a_configuration_of_any_shape_is_accepted_or_refused_with_problems(self, config):
        try:
            check_config(config)
        except ConfigError as exc:
            assert exc.problems and all(isinstance(p, str) for p in exc.problems)


class TestBodySize:
    def test_a_body_over_the_limit_is_a_413(self, api, settings):
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000

        response = api.post("/v1/agent/conversations", {"assistant": "x", "message": "x" * 20_000})

        assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"

    def test_the_limit_is_checked_before_authentication(self, api, settings):
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000

        response = api.as_(None).post("/v1/assistants", raw=b"x" * 20_000)

        assert response.status_code == 413

    async def test_a_chunked_body_without_content_length_is_measured_as_received(self, api_key, settings):
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10_000
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
            "path": "/v1/assistants", "raw_path": b"/v1/assistants", "query_string": b"", "root_path": "",
            "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"),
                        (b"authorization", f"Bearer {api_key}".encode())],
            "client": ("127.0.0.1", 5000), "server": ("testserver", 80),
        }
        app = ApplicationCommunicator(get_asgi_application(), scope)
        for _ in range(4):
            await app.send_input({"type": "http.request", "body": b"x" * 5_000, "more_body": True})
        await app.send_input({"type": "http.request", "body": b"", "more_body": False})

        start = await app.receive_output(timeout=10)
        body = await app.receive_output(timeout=10)

        assert start["status"] == 413
        assert json.loads(body["body"])["error"]["code"] == "payload_too_large"
