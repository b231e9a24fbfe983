"""Fixtures of the people, workspace and lifecycle tests: a workspace directory per test and helpers."""

from __future__ import annotations

import pytest

from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import store
from apps.ledger.replay import replay


@pytest.fixture(autouse=True)
def workspace_dir(settings, tmp_path):
    """Every test gets its own workspace root, so files never leak between tests."""
    settings.WAYPOINT_WORKSPACE_DIR = tmp_path / "workspaces"
    return settings.WAYPOINT_WORKSPACE_DIR


def state(conversation_id: str) -> dict:
    return conversation_state(queries.conversation_for(conversation_id))


def kinds(conversation_id: str) -> list[str]:
    return [e.kind for e in store.read(conversation_id)]


def events_of(conversation_id: str, kind: str) -> list:
    return [e for e in store.read(conversation_id) if e.kind == kind]


def assert_replays(conversation_id: str) -> None:
    report = replay(conversation_id)
    assert report.ok, report.differences


def turn(conversation_id: str, message: str, clock, persona: str = "guest:alice", **kwargs) -> dict:
    return actions.start_turn(conversation_id=conversation_id, message=message, persona=persona, edge="api", now=clock(), **kwargs)


def rules(*pairs, fallback=None):
    return {"provider": "scripted", "rules": [{"match": m, "steps": s} for m, s in pairs],
            "fallback": fallback or [{"say": "ok"}]}
