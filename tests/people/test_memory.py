import json

import pytest

from apps.actions.models import ActionLog
from apps.conversations.errors import NotFound
from apps.conversations.queries import conversation_for
from apps.workspaces import actions as workspace
from apps.workspaces.models import Memory
from apps.workspaces.queries import list_memory
from tests.fakes import vendor as wire
from tests.people.conftest import assert_replays, events_of, rules, state, turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

REMEMBERING = rules(
    ("email", [{"call": "remember", "arguments": {"fact": "Prefers email"}}, {"say": "Noted."}]),
    ("invoice", [{"call": "remember", "arguments": {"fact": "Invoices go to ops@acme.test"}}, {"say": "Noted."}]),
    ("know", [{"say": "I remember: {memory}"}]),
    ("blank", [{"call": "remember", "arguments": {}}, {"say": "Tried: {result}"}]),
)


def conversation(make_assistant, start, message="I prefer email"):
    return start(message, assistant=make_assistant(model=REMEMBERING))["conversation_id"]


class TestRemember:
    def test_the_remember_tool_records_a_fact_attributed_to_the_caller(self, start, make_assistant):
        cid = conversation(make_assistant, start)

        [fact] = list_memory(conversation_for(cid))
        assert (fact["text"], fact["persona"]) == ("Prefers email", "guest:alice")
        assert events_of(cid, "memory_remembered")[0].payload["fact_id"] == fact["fact_id"]
        assert ActionLog.objects.get(conversation_id=cid, tool="remember").status == "succeeded"
        assert state(cid)["messages"][-1]["text"] == "Noted."
        assert_replays(cid)

    def test_facts_reach_the_model_in_later_turns(self, start, make_assistant, clock):
        cid = conversation(make_assistant, start)
        turn(cid, "send the invoice to ops", clock)

        turn(cid, "what do you know?", clock)

        assert state(cid)["messages"][-1]["text"] == "I remember: Prefers email; Invoices go to ops@acme.test"

    def test_a_fact_without_text_becomes_an_error_result_and_nothing_is_remembered(self, start, make_assistant):
        cid = conversation(make_assistant, start, "blank")

        assert state(cid)["memory"] == []
        assert state(cid)["messages"][-1]["text"] == 'Tried: {"error": "remember needs {\\"fact\\": \\"<text>\\"}"}'

    def test_memory_belongs_to_one_conversation(self, start, make_assistant, clock):
        assistant = make_assistant(model=REMEMBERING)
        start("I prefer email", assistant=assistant)

        other = start("what do you know?", assistant=assistant)["conversation_id"]

        assert state(other)["messages"][-1]["text"] == "I remember: nothing"


class TestClearMemory:
    def test_clearing_is_a_log_entry_and_the_fact_is_gone_from_the_store(self, start, make_assistant, clock):
        cid = conversation(make_assistant, start)
        fact_id = list_memory(conversation_for(cid))[0]["fact_id"]

        cleared = workspace.clear_memory(conversation_id=cid, persona="guest:alice", now=clock())

        assert cleared == {"cleared": [fact_id]}
        [entry] = events_of(cid, "memory_cleared")
        assert entry.payload == {"fact_ids": [fact_id], "cleared_by": "guest:alice"} and entry.actor == "guest:alice"
        row = Memory.objects.get(fact_id=fact_id)
        assert (row.status, row.text) == ("cleared", "")
        assert_replays(cid)

    def test_a_cleared_fact_no_longer_reaches_the_model(self, start, make_assistant, clock):
        cid = conversation(make_assistant, start)
        workspace.clear_memory(conversation_id=cid, persona="guest:alice", now=clock())

        turn(cid, "what do you know?", clock)

        assert state(cid)["messages"][-1]["text"] == "I remember: nothing"

    def test_clearing_one_fact_keeps_the_others(self, start, make_assistant, clock):
        cid = conversation(make_assistant, start)
        turn(cid, "send the invoice to ops", clock)
        first = list_memory(conversation_for(cid))[0]["fact_id"]

        workspace.clear_memory(conversation_id=cid, persona="staff:ops", now=clock(), fact_ids=[first])

        assert [f["text"] for f in state(cid)["memory"]] == ["Invoices go to ops@acme.test"]

    def test_clearing_a_fact_of_another_conversation_is_not_found(self, start, make_assistant, clock):
        cid = conversation(make_assistant, start)
        other = conversation(make_assistant, start)
        theirs = list_memory(conversation_for(other))[0]["fact_id"]

        with pytest.raises(NotFound):
            workspace.clear_memory(conversation_id=cid, persona="guest:alice", now=clock(), fact_ids=[theirs])

        assert len(list_memory(conversation_for(other))) == 1

    def test_clearing_nothing_records_nothing(self, start, clock):
        cid = start()["conversation_id"]

        assert workspace.clear_memory(conversation_id=cid, persona="guest:alice", now=clock()) == {"cleared": []}
        assert events_of(cid, "memory_cleared") == []


class TestMemoryOnTheWire:
    def test_cleared_memory_never_reaches_the_vendor_again(self, start, make_assistant, settings, clock):
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        with wire.Vendor() as vendor:
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            assistant = make_assistant(model={"provider": "openai", "model": "gpt-4o-mini", "base_url": vendor.base_url})
            vendor.queue(
                wire.completion(tool_calls=[wire.tool_call("call_m1", "remember", '{"fact": "Favourite colour: teal"}')]),
                wire.completion(content="Noted."),
                wire.completion(content="Hello again."),
                wire.completion(content="Hi."),
            )
            cid = start("please keep my colour in mind", assistant=assistant)["conversation_id"]
            turn(cid, "hello again", clock)
            remembered = vendor.requests[2]["messages"]

            workspace.clear_memory(conversation_id=cid, persona="guest:alice", now=clock())
            turn(cid, "and now?", clock)

        assert remembered[0] == {"role": "system", "content": "Facts to remember:\n- Favourite colour: teal"}
        assert "teal" not in json.dumps(vendor.requests[3]["messages"])
        assert {t["function"]["name"] for t in vendor.requests[0]["tools"]} >= {"remember"}
