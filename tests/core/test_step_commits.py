"""
How a run's steps are grouped into transactions, and a run that meets another writer mid-turn.

Entries of one append share its `created_at`, so the log itself shows which steps committed together.
"""

import pytest
from django.utils import timezone

from apps.actions.registry import ACTIONS, Action
from apps.agent import config
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import store
from apps.ledger.replay import replay, verify
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


class TestAnotherWriterMidTurn:
    def test_a_run_whose_head_moved_under_it_appends_after_the_other_entry(self, start, make_assistant, monkeypatch):
        """An action that admits a participant writes to the log between the run's own appends."""

        def admit(call):
            people.add_participant(conversation_id=call.conversation_id, persona="staff:colleague", by="guest:alice",
                                   now=timezone.now())
            return {"admitted": "staff:colleague"}

        # Not read-only: its start commits first, and the run's next append finds the head moved.
        monkeypatch.setitem(ACTIONS, "admit_colleague", Action("admit_colleague", side_effecting=False, run=admit))
        monkeypatch.setattr(config, "ACTIONS", config.ACTIONS | {"admit_colleague"})
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
