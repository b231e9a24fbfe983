from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from tests.conftest import SUPPORT_CONFIG


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    """Rate-limit windows live in the (per-process) cache; each test starts with empty counters."""
    cache.clear()
    yield
    cache.clear()


class Api:
    """The v1 API through Django's test client, authenticated with one credential."""

    def __init__(self, credential: str | None):
        self.client = Client()
        self.credential = credential

    def as_(self, credential: str | None) -> Api:
        return Api(credential)

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str]:
        out = {"Authorization": f"Bearer {self.credential}"} if self.credential else {}
        return {**out, **(headers or {})}

    def post(self, path: str, body: Any = None, *, raw: bytes | str | None = None, headers: dict | None = None,
             content_type: str = "application/json"):
        data = raw if raw is not None else (json.dumps(body) if body is not None else b"")
        return self.client.post(path, data=data, content_type=content_type, headers=self._headers(headers))

    def get(self, path: str, *, headers: dict | None = None, **params):
        return self.client.get(path, params, headers=self._headers(headers))

    def delete(self, path: str, *, headers: dict | None = None):
        return self.client.delete(path, headers=self._headers(headers))

    def create_assistant(self, **overrides) -> str:
        response = self.post("/v1/assistants", {**SUPPORT_CONFIG, **overrides})
        assert response.status_code == 201, response.content
        return response.json()["id"]

    def start(self, message: str = "hello", **fields) -> dict:
        assistant = fields.pop("assistant", None) or self.create_assistant()
        response = self.post("/v1/agent/conversations", {"assistant": assistant, "message": message, **fields})
        assert response.status_code == 201, response.content
        return response.json()

    def state(self, conversation_id: str) -> dict:
        response = self.get(f"/v1/runner/conversation/{conversation_id}/messages")
        assert response.status_code == 200, response.content
        return response.json()


@pytest.fixture
def api_key(db) -> str:
    from apps.workspaces.keys import create_api_key

    _, raw = create_api_key(name="backend")
    return raw


@pytest.fixture
def api(api_key) -> Api:
    return Api(api_key)
