from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime, timedelta

import pytest

from tests.servers import is_postgres

needs_postgres = pytest.mark.skipif(
    not is_postgres(), reason="needs PostgreSQL: set DATABASE_URL (make test does when PostgreSQL answers)"
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("postgres") and not is_postgres():
            item.add_marker(needs_postgres)


@pytest.fixture
def clock():
    """Injected time: each call moves one millisecond on, so log entries have distinct times."""
    start = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    ticks = itertools.count()
    return lambda: start + timedelta(milliseconds=next(ticks))


SUPPORT_CONFIG = {
    "name": "Acme support",
    "allow_conversation_completion": True,
    "step_budget": 8,
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "refund", "steps": [
                {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund issued for {result}."},
            ]},
            {"match": "when", "steps": [
                {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                {"say": "Booked for {result}."},
            ]},
            {"match": "bye", "steps": [{"say": "Goodbye!", "call": "complete_conversation", "arguments": {}}]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [
        {"name": "lookup_order", "kind": "server", "action": "echo"},
        {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True},
        {"name": "pick_date", "kind": "client",
         "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
    ],
}


@pytest.fixture
def staff_online(db):
    """A member of the team at the panel now (a live presence socket), so a customer asking for a person is promised one."""
    from django.utils import timezone

    from apps.people import presence

    presence.seen("test-socket", "staff:dana", active=True, now=timezone.now())
    return "staff:dana"


@pytest.fixture
def make_assistant(db):
    from apps.agent.actions import create_assistant

    def make(**overrides):
        config = {**SUPPORT_CONFIG, **overrides}
        return create_assistant(config=config)

    return make


@pytest.fixture
def start(make_assistant, clock):
    """Start a conversation on a fresh support assistant; returns the `start_conversation` answer."""
    from apps.agent import actions

    def begin(message: str = "hello", assistant=None, persona: str = "guest:alice", **kwargs):
        assistant = assistant or make_assistant()
        return actions.start_conversation(
            assistant_id=str(assistant.id), message=message, persona=persona, edge="api", now=clock(), **kwargs
        )

    return begin


os.environ.setdefault("WAYPOINT_TEST", "1")
