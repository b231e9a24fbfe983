from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.conftest import SUPPORT_CONFIG

SHOP = "https://shop.example"


@pytest.fixture
def client() -> Client:
    return Client()


@pytest.fixture
def settle(django_capture_on_commit_callbacks):
    """Run what commits inside the block (turns the inline runner starts on commit) as it exits."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture
def started(start, settle):
    """Start a conversation and let its first turn run to its first stop."""

    def begin(message: str = "hello", **kwargs):
        with settle():
            return start(message, **kwargs)

    return begin


@pytest.fixture
def embeddable(make_assistant):
    """An assistant the demo shop origin may embed."""
    return make_assistant(allowed_origins=[SHOP])


@pytest.fixture
def page(client):
    """GET a conversation page (or any path) and return the response."""

    def get(started: dict, **query):
        params = {"token": started["token"], **query}
        return client.get(f"/c/{started['conversation_id']}", params)

    return get


@pytest.fixture
def answer(client):
    """Post a card's form the way a browser without JavaScript does."""

    def post(started: dict, state: dict, *, htmx: bool = False, **fields):
        data = {"token": started["token"], "run_id": state["run_id"], "call_id": state["pending_client_actions"][0]["call_id"], **fields}
        headers = {"HX-Request": "true"} if htmx else {}
        return client.post(f"/c/{started['conversation_id']}/answer", data, headers=headers)

    return post


def enabled_inputs(html: str) -> list[str]:
    """Text inputs, text areas and buttons that are not disabled (hidden inputs, Close and Copy link excluded: they write nothing)."""
    tags = re.findall(r"<(?:input|textarea|button)\b[^>]*>", html)
    return [t for t in tags if 'type="hidden"' not in t and " disabled" not in t and "data-close-widget" not in t
            and "data-copy-link" not in t]


def frame_ancestors(response) -> str:
    csp = response.headers.get("Content-Security-Policy", "")
    return next((d.strip() for d in csp.split(";") if d.strip().startswith("frame-ancestors")), "")


__all__ = ["SHOP", "SUPPORT_CONFIG", "enabled_inputs", "frame_ancestors"]
