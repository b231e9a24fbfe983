"""
How a run's steps are grouped into transactions, and a run that meets another writer mid-turn.

Entries of one append share its `created_at`, so the log itself shows which steps committed together.
"""

import contextlib

import pytest
from django.db import connection
from django.utils import timezone

from apps.actions.registry import ACTIONS, Action
from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.ledger.sql import STATEMENT_SEPARATOR
from apps.people import actions as people

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

THREE_ROUNDS = {
    "name": "Rounds",
    "step_budget": 8,
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "order", "steps": [
                {"call": "lookup_order", "arguments": {"round": 1}},
                {"call": "lookup_order", "arguments": {"round": 2}},
                {"call": "lookup_order", "arguments": {"round": 3}},
                {"say": "Done: {result}"},
            ]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [{"name": "lookup_order", "kind": "server", "action": "echo"}],
}
ADMITTING = {
    **THREE_ROUNDS,
    "model": {"provider": "scripted", "rules": [{"match": "admit", "steps": [
        {"call": "admit_colleague", "arguments": {}},
        {"say": "Admitted: {result}"},
    ]}]},
    "tools": [{"name": "admit_colleague", "kind": "server", "action": "admit_colleague"}],
}


def appends(turn_entries) -> list[list[str]]:
    """The turn's entry kinds, grouped by the append that wrote them."""
    groups: list[list[str]] = []
    last = None
    for entry in turn_entries:
        if entry.created_at != last:
            groups.append([])
            last = entry.created_at
        groups[-1].append(entry.kind)
    return groups


def latest_turn(cid: str) -> list:
    entries = store.read(cid)
    turn_id = [e for e in entries if e.kind == "turn_dispatched"][-1].turn_id
    return [e for e in entries if e.turn_id == turn_id]


class TestReadOnlyRounds:
    def test_each_echo_round_commits_with_its_model_round(self, start, make_assistant):
        cid = start("where is my order", assistant=make_assistant(**THREE_ROUNDS))["conversation_id"]

        assert appends(latest_turn(cid)) == [
            ["conversation_started", "turn_dispatched"],  # batch one of the conversation's first turn
            ["model_round", "action_started", "action_finished"],
            ["model_round", "action_started", "action_finished"],
            ["model_round", "action_started", "action_finished"],
            ["model_round"],
            ["turn_complete"],
        ]
        state = conversation_state(queries.conversation_for(cid))
        assert state["messages"][-1]["text"] == 'Done: {"round": 3}'
        assert verify(cid).ok and replay(cid).ok


@contextlib.contextmanager
def commits():
    """The tables each write commit of this thread's connection wrote, in commit order."""
    written: list[set[str]] = []
    pending: set[str] = set()

    def watch(execute, sql, params, many, context):
        tables = set()
        # One query text may hold an append's statements, each checked update inside a WITH.
        for one in sql.split(STATEMENT_SEPARATOR):
            verb, _, rest = one.lstrip().removeprefix("WITH changed AS (").partition(" ")
            if verb.upper() in ("INSERT", "UPDATE", "DELETE"):
                tables.add(rest.replace("INTO ", "", 1).split(None, 1)[0].strip('"'))
        if tables:
            (pending.update(tables) if connection.in_atomic_block else written.append(tables))
        return execute(sql, params, many, context)

    original = connection.commit

    def commit():
        original()
        if pending:
            written.append(set(pending))
            pending.clear()

    connection.commit = commit
    try:
        with connection.execute_wrapper(watch):
            yield written
    finally:
        del connection.commit


class TestCommitsPerTurn:
    def test_the_lease_commits_with_batch_one_and_is_given_up_with_batch_two(self, start, make_assistant):
        cid = start("hello", assistant=make_assistant(**THREE_ROUNDS))["conversation_id"]

        with commits() as written:
            actions.start_turn(conversation_id=cid, message="where is my order", persona="guest:alice", edge="api",
                               now=timezone.now())

        # batch one with the lease, three echo rounds, the reply's model round, batch two with the release
        assert len(written) == 6
        assert {"ledger_event", "conversations_lease"} <= written[0]
        assert {"ledger_event", "conversations_lease"} <= written[-1]
        assert all("conversations_lease" not in tables for tables in written[1:-1])
        assert verify(cid).ok and replay(cid).ok

    def test_a_run_that_pauses_for_an_approval_gives_the_lease_up_with_the_request(self, start, make_assistant):
        approval = {**THREE_ROUNDS, "tools": [{"name": "lookup_order", "kind": "server", "action": "echo",
                                              "requires_approval": True}]}
        cid = start("hello", assistant=make_assistant(**approval))["conversation_id"]

        with commits() as written:
            actions.start_turn(conversation_id=cid, message="where is my order", persona="guest:alice", edge="api",
                               now=timezone.now())

        assert len(written) == 3  # batch one with the lease; the model round; the request with the release
        assert "conversations_lease" not in written[1]
        assert {"ledger_event", "conversations_lease"} <= written[2]
        assert [e.kind for e in latest_turn(cid)][-1] == "approval_request"


class TestAnotherWriterMidTurn:
    def test_a_run_whose_head_moved_under_it_appends_after_the_other_entry(self, start, make_assistant, monkeypatch):
        """An action that admits a participant writes to the log between the run's own appends."""

        def admit(call):
            people.add_participant(conversation_id=call.conversation_id, persona="staff:colleague", by="guest:alice",
                                   now=timezone.now())
            return {"admitted": "staff:colleague"}

        # Not read-only: its start commits first, and the run's next append finds the head moved.
        monkeypatch.setitem(ACTIONS, "admit_colleague", Action("admit_colleague", side_effecting=False, run=admit))
        cid = start("please admit my colleague", assistant=make_assistant(**ADMITTING))["conversation_id"]

        kinds = [e.kind for e in latest_turn(cid)]
        everything = [e.kind for e in store.read(cid)]
        assert kinds == [
            "conversation_started", "turn_dispatched", "model_round", "action_started", "action_finished", "model_round",
            "turn_complete",
        ]
        started = everything.index("action_started")
        assert everything[started:started + 3] == ["action_started", "participant_added", "action_finished"]
        state = conversation_state(queries.conversation_for(cid))
        assert state["run_status"] == "completed"
        assert state["messages"][-1]["text"] == 'Admitted: {"admitted": "staff:colleague"}'
        assert verify(cid).ok and replay(cid).ok
