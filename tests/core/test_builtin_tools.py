"""A built-in tool is one entry of the table in apps/agent/calls.py: offered, reserved, run and recorded from it."""

from __future__ import annotations

import pytest

from apps.agent import calls
from apps.agent.config import ConfigError, check_config
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger.replay import replay, verify
from apps.ledger.types import ActionFinished, ActionStarted

pytestmark = pytest.mark.django_db(transaction=True)

HOURS = {"type": "object", "properties": {"day": {"type": "string"}}}
ASKS_FOR_HOURS = {
    "model": {"provider": "scripted", "rules": [
        {"match": "open", "steps": [
            {"call": "opening_hours", "arguments": {"day": "monday"}},
            {"say": "We are open {result}"},
        ]},
    ]},
}


def opening_hours(call: calls.Call) -> calls.Ran:
    key = f"{call.run.turn_id}:{call.call.call_id}"
    started = ActionStarted(run_id=call.run.run_id, call_id=call.call.call_id, tool=call.call.tool, action="",
                            arguments=call.call.arguments, side_effecting=False, idempotency_key=key, attempt=call.attempt)
    hours = {"monday": "9 to 5"}.get(call.call.arguments.get("day"), "closed")
    return calls.Ran([started, ActionFinished(run_id=call.run.run_id, call_id=call.call.call_id, tool=call.call.tool,
                                              ok=True, output={"hours": hours})])


@pytest.fixture
def hours_tool(monkeypatch):
    entry = calls.Builtin("opening_hours", HOURS, description="The shop's opening hours on a day", run=opening_hours)
    monkeypatch.setitem(calls.BUILTINS, "opening_hours", entry)
    return entry


def test_an_entry_is_offered_to_the_model_with_its_schema(hours_tool):
    offered = {t["name"]: t for t in calls.offered_builtins({})}

    assert offered["opening_hours"] == {"name": "opening_hours", "kind": "builtin",
                                        "description": "The shop's opening hours on a day", "parameters": HOURS}
    assert "handoff_to_human" not in offered  # offered only when the assistant's handoff says so
    assert "handoff_to_human" in {t["name"] for t in calls.offered_builtins({"handoff": {"enabled": True, "model_tool": True}})}


def test_an_entrys_name_is_reserved_in_an_assistants_configuration(hours_tool):
    with pytest.raises(ConfigError, match="opening_hours.*built in"):
        check_config({"name": "Shop", "model": {"provider": "scripted"},
                      "tools": [{"name": "opening_hours", "kind": "client"}]})


def test_a_call_runs_the_entry_and_records_what_it_returns(hours_tool, start, make_assistant):
    cid = start("when are you open?", assistant=make_assistant(**ASKS_FOR_HOURS))["conversation_id"]

    state = conversation_state(queries.conversation_for(cid))
    assert state["run_status"] == "completed"
    assert state["messages"][-1]["text"] == 'We are open {"hours": "9 to 5"}'
    assert verify(cid).ok and replay(cid).ok


class TestToolClasses:
    def test_a_server_tool_takes_its_actions_class_unless_it_sets_its_own(self):
        assert calls.tool_class({"kind": "server", "action": "echo"}) == "read"
        assert calls.tool_class({"kind": "server", "action": "write_file"}) == "idempotent"
        assert calls.tool_class({"kind": "server", "action": "webhook"}) == "write"
        assert calls.tool_class({"kind": "server", "action": "webhook", "class": "destructive"}) == "destructive"

    def test_only_write_and_destructive_calls_leave_their_outcome_in_doubt(self):
        assert not calls.side_effecting({"kind": "server", "action": "webhook", "class": "idempotent"})
        assert calls.side_effecting({"kind": "server", "action": "echo", "class": "write"})

    def test_a_class_outside_the_four_is_refused(self):
        with pytest.raises(ConfigError, match=r"tools\[0\]\.class"):
            check_config({"name": "Shop", "model": {"provider": "scripted"},
                          "tools": [{"name": "refund", "kind": "server", "action": "echo", "class": "harmless"}]})
