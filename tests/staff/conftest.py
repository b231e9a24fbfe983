from __future__ import annotations

import pytest
from django.db import transaction

from tests.fakes.receiver import Receiver

REFUND_DESK = {
    "name": "Refund desk",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "refund", "steps": [
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund issued: {result}."},
            ]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [{"name": "issue_refund", "kind": "server", "action": "webhook", "url": "", "requires_approval": True}],
}


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # The default hasher is slow on purpose; these tests check who may log in, not hashing strength.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


HTMX = {"HX-Request": "true"}  # what htmx sends with each of its requests


def logged_in_staff(username: str, first_name: str = ""):
    """A test client logged in as a new staff member, `first_name` the name customers see."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model().objects.create_user(username, f"{username}@example.com", "pw", is_staff=True,
                                                first_name=first_name)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def dana():
    return logged_in_staff("dana", "Dana")


@pytest.fixture
def sam():
    return logged_in_staff("sam", "Sam")


@pytest.fixture
def long_queued(start, make_assistant, clock):
    """A conversation of some eighty entries and fifty messages whose customer asked for a person."""
    from django.utils import timezone

    from apps.agent import actions, handoff

    cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    for n in range(25):
        actions.start_turn(conversation_id=cid, message=f"message {n}", persona="guest:alice", edge="api", now=clock())
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())
    return cid


@pytest.fixture
def staff_user(db, django_user_model):
    return django_user_model.objects.create_user(username="ops", password="a long staff password", is_staff=True)


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.fixture
def receiver():
    with Receiver() as hook:
        yield hook


def state(conversation_id: str) -> dict:
    from apps.agent.state import conversation_state
    from apps.conversations import queries

    return conversation_state(queries.conversation_for(conversation_id))


@pytest.fixture
def quarantined(db, settings, clock, receiver):
    """
    Make a conversation whose approved refund turn is quarantined, the way a crash leaves it.

    The refund webhook is approved; the process that runs it records `action_started` and dies
    before the outcome is recorded (nothing runs the turn meanwhile: the runner is switched off).
    Recovery then drives the orphaned run and the planner marks the turn ambiguous.
    """
    from apps.agent import actions, answers, runner
    from apps.agent.actions import create_assistant
    from apps.conversations.models import Conversation
    from apps.ledger import store
    from apps.ledger.types import ActionStarted

    settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True

    def make(message: str = "I want a refund for order A-1", persona: str = "guest:alice") -> dict:
        config = {**REFUND_DESK, "tools": [{**REFUND_DESK["tools"][0], "url": receiver.url}]}
        assistant = create_assistant(config=config)
        started = actions.start_conversation(assistant_id=str(assistant.id), message=message, persona=persona,
                                             edge="api", now=clock())
        cid = started["conversation_id"]
        paused = state(cid)
        [call] = paused["pending_client_actions"]
        settings.WAYPOINT_RUNNER = "off"
        answers.accept_results(
            conversation_id=cid, run_id=paused["run_id"], persona=persona, now=clock(),
            results=[{"call_id": call["call_id"], "output": {"decision": "approve",
                                                             "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}}],
        )
        with transaction.atomic():
            conversation = Conversation.objects.select_for_update(no_key=True).get(id=cid)
            store.append(conversation, turn_id=started["turn_id"], actor="agent", now=clock(),
                events=[ActionStarted(run_id=started["run_id"], call_id=call["call_id"], tool="issue_refund", action="webhook",
                                      arguments=call["arguments"], side_effecting=True,
                                      idempotency_key=f"{started['turn_id']}:{call['call_id']}")],
            )
        settings.WAYPOINT_RUNNER = "inline"
        runner.drive(cid, recovering=True)
        return {**started, "call_id": call["call_id"], "persona": persona}

    return make
