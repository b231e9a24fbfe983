"""
The `openai` provider against a real OpenAI-compatible server: llama-cpp-python's, with SmolLM2-135M.

Every test runs twice, with plain answers and with streamed ones (`"stream": true`). At temperature
0 the model's answers are the same on every run of one build, and each test asserts only what a
135M model reliably does. A model this small rarely calls a tool of its own accord, so the tool
round trip forces one with `tool_choice`.
"""

import json

import pytest

from apps.actions.models import ActionLog
from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger.replay import replay, verify
from apps.runs.models import WorkflowLog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

LOOKUP_ORDER = {"name": "lookup_order", "kind": "server", "action": "echo", "description": "Look an order up by its id",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}


@pytest.fixture(params=[False, True], ids=["plain", "streaming"])
def stream(request):
    return request.param


@pytest.fixture
def assistant(make_assistant, relay, stream):
    def make(**overrides):
        model = {"provider": "openai", "model": "smollm2", "stream": stream, "temperature": 0, "max_output_tokens": 40,
                 "timeout_seconds": 120, **overrides.pop("model", {})}
        return make_assistant(model=model, tools=[LOOKUP_ORDER], step_budget=3, **overrides)

    return make


def state(cid):
    return conversation_state(queries.conversation_for(cid))


def reply(cid):
    return state(cid)["messages"][-1]


def turn(cid, message, clock):
    actions.start_turn(conversation_id=cid, message=message, persona="guest:alice", edge="api", now=clock())


def usage(cid):
    return WorkflowLog.objects.get(run_id=state(cid)["run_id"]).usage


class TestARealServer:
    def test_answers_a_turn_that_verifies_and_replays(self, start, assistant, relay, stream):
        cid = start("Hello! Who are you?", assistant=assistant())["conversation_id"]

        s = state(cid)
        assert s["run_status"] == "completed" and reply(cid)["role"] == "assistant" and reply(cid)["text"].strip()
        assert relay.statuses == [200] and relay.requests[0].get("stream", False) is stream
        assert relay.requests[0]["max_tokens"] == 40 and relay.requests[0]["temperature"] == 0
        if not stream:  # this server reports no usage in a stream, even when asked to
            assert usage(cid)["prompt_tokens"] > 0 and 0 < usage(cid)["completion_tokens"] <= 40
        assert replay(cid).ok and verify(cid).ok

    def test_follows_the_instructions(self, start, assistant, relay):
        bot = assistant(instructions="Your name is Zorblax. You always say your name.")

        cid = start("What is your name?", assistant=bot)["conversation_id"]

        assert relay.requests[0]["messages"][0] == {"role": "system", "content": "Your name is Zorblax. You always say your name."}
        assert "Zorblax" in reply(cid)["text"]

    def test_a_forced_tool_round_trip_runs_the_tool_and_replies_from_its_result(self, start, assistant, relay):
        bot = assistant(model={"tool_choice": "lookup_order"})

        cid = start("Where is my order A-1?", assistant=bot)["conversation_id"]

        [action] = ActionLog.objects.filter(conversation_id=cid)
        assert action.tool == "lookup_order" and action.status == "succeeded" and isinstance(action.arguments["order_id"], str)
        assert relay.statuses == [200, 200]
        assert relay.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}
        assert relay.requests[1]["tool_choice"] == "auto"
        calls, result = relay.requests[1]["messages"][-2:]
        assert calls["content"] == "" and calls["tool_calls"][0]["function"]["name"] == "lookup_order"
        assert result == {"role": "tool", "tool_call_id": calls["tool_calls"][0]["id"], "content": json.dumps(action.arguments)}
        assert state(cid)["run_status"] == "completed" and reply(cid)["text"].strip()
        assert replay(cid).ok and verify(cid).ok

    def test_the_next_turn_carries_the_earlier_ones(self, start, assistant, relay, clock, stream):
        cid = start("My name is Ada.", assistant=assistant())["conversation_id"]
        first_reply, first_usage = reply(cid)["text"], usage(cid)

        turn(cid, "What is my name?", clock)

        assert relay.requests[-1]["messages"] == [
            {"role": "user", "content": "My name is Ada."}, {"role": "assistant", "content": first_reply},
            {"role": "user", "content": "What is my name?"}]
        assert relay.statuses == [200, 200] and reply(cid)["text"].strip()
        if not stream:  # the server read the earlier turn: its prompt holds the first prompt and reply
            assert usage(cid)["prompt_tokens"] > first_usage["prompt_tokens"] + first_usage["completion_tokens"]
        assert replay(cid).ok and verify(cid).ok

    def test_a_tool_round_in_an_earlier_turn_is_accepted_as_history(self, start, assistant, relay, clock):
        cid = start("Where is my order A-1?", assistant=assistant(model={"tool_choice": "lookup_order"}))["conversation_id"]

        turn(cid, "Thanks. Anything else?", clock)

        # The second turn's first round: the first turn's call, its result and reply, then the new message.
        assert [m["role"] for m in relay.requests[2]["messages"]] == ["user", "assistant", "tool", "assistant", "user"]
        assert set(relay.statuses) == {200} and state(cid)["run_status"] == "completed"
        assert replay(cid).ok and verify(cid).ok
