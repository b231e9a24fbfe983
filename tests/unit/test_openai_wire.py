"""
Receiving tolerantly: real servers' answers (tests/fakes/payloads/) read by the `openai` provider.

Each payload is served by the fake vendor over HTTP and read by the real `openai` client, as in
production; a variant that is not in a recording is made from one, and says how.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from apps.agent.providers import (
    ModelFailed,
    ModelRequest,
    OpenAIProvider,
    PastRound,
    ToolCall,
    openai_messages,
)
from tests.fakes import vendor as wire

PAYLOADS = Path(__file__).resolve().parent.parent / "fakes" / "payloads"
TOOLS = [{"name": "lookup_order", "kind": "server", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


def payload(name: str) -> dict:
    return json.loads((PAYLOADS / f"{name}.json").read_text())


def answer(*records: dict, stream: bool = False, rounds: tuple = (), drafts: list | None = None):
    """The provider's reading of each recorded answer, one model round each."""
    with wire.Vendor() as vendor:
        for record in records:
            vendor.queue((record["status"], record["stream"] if "stream" in record else record["response"]))
        provider = OpenAIProvider({"model": "m", "stream": stream}, api_key="k", base_url=vendor.base_url, retry_seconds=0)
        request = ModelRequest(history=[], message="Where is order A-1?", rounds=list(rounds), tools=TOOLS)
        return [provider.complete(request, on_draft=(drafts.append if drafts is not None else lambda _: None))
                for _ in records]


def one(record: dict, **kwargs):
    [round_] = answer(record, **kwargs)
    return round_


class TestLlamaCppPython:
    def test_a_named_tool_answer_with_both_tool_calls_and_function_call_is_one_call(self):
        record = payload("llama_cpp_python_named_tool")

        round_ = one(record)

        [call] = round_.calls
        vendor_id = record["response"]["choices"][0]["message"]["tool_calls"][0]["id"]
        assert (call.call_id, call.tool, call.arguments, call.vendor_id) == ("call_1_1", "lookup_order", {"order_id": "A-1"}, vendor_id)
        assert round_.text == "" and round_.usage == {"prompt_tokens": 29, "completion_tokens": 11}

    def test_a_streamed_tool_call_that_repeats_its_name_in_every_delta_keeps_the_name_once(self):
        round_ = one(payload("llama_cpp_python_named_tool_stream"), stream=True)

        [call] = round_.calls
        assert (call.tool, call.arguments) == ("lookup_order", {"order_id": "A-1"})
        assert call.vendor_id.startswith("call__0_lookup_order_")

    def test_a_stream_without_usage_is_read_without_usage(self):
        drafts: list[str] = []

        round_ = one(payload("llama_cpp_python_text_stream"), stream=True, drafts=drafts)

        assert round_.text.startswith("I'm sorry for any misunderstanding") and round_.usage == {} and round_.calls == []
        assert drafts[-1] == round_.text and all(b.startswith(a) for a, b in zip(drafts, drafts[1:], strict=False))

    def test_an_answer_cut_off_by_max_tokens_keeps_its_text(self):
        round_ = one(payload("llama_cpp_python_length"))

        assert round_.text == "I'm sorry" and round_.calls == []

    def test_a_call_id_longer_than_the_call_id_column_is_kept_only_for_the_wire(self):
        record = payload("llama_cpp_python_long_tool_name")

        [call] = one(record).calls

        assert len(call.vendor_id) > 100 and call.call_id == "call_1_1"

    def test_the_refused_null_content_is_never_sent(self):
        refused = payload("llama_cpp_python_null_content_refused")
        assert refused["status"] == 500 and refused["request"]["messages"][2]["content"] is None
        called = PastRound("", [ToolCall("call_1_1", "lookup_order", {"order_id": "A-1"}, "call_1")], {"call_1_1": {"status": "shipped"}})

        sent = openai_messages(ModelRequest(history=[], message="Where is order A-1?", rounds=[called], tools=TOOLS))

        assert sent[1] == {**refused["request"]["messages"][2], "content": ""}
        assert sent[2] == refused["request"]["messages"][3]


class TestOtherServers:
    def test_llama_server_sends_the_name_once_and_the_arguments_in_index_only_deltas(self):
        [call] = one(payload("llama_server_tool_stream"), stream=True).calls

        assert (call.tool, call.arguments, call.vendor_id) == ("lookup_order", {"order_id": "A-1"}, "v2dhQx7m1PzKcT0bLr8sNw3yUe5aGf6J")

    def test_ollama_sends_parallel_calls_whole_one_per_chunk(self):
        calls = one(payload("ollama_parallel_tool_stream"), stream=True).calls

        assert [(c.call_id, c.arguments, c.vendor_id) for c in calls] == [
            ("call_1_1", {"order_id": "A-1"}, "call_wteop8bt"), ("call_1_2", {"order_id": "A-2"}, "call_rk2xye1l")]

    def test_two_calls_sent_whole_at_the_same_index_are_two_calls(self):
        record = payload("ollama_parallel_tool_stream")  # as older servers do: every call at index 0
        record["stream"][1]["choices"][0]["delta"]["tool_calls"][0]["index"] = 0

        calls = one(record, stream=True).calls

        assert [c.arguments["order_id"] for c in calls] == ["A-1", "A-2"]

    def test_openais_legacy_function_call_is_a_call(self):
        [call] = one(payload("openai_legacy_function_call")).calls

        assert (call.call_id, call.tool, call.arguments, call.vendor_id) == ("call_1_1", "lookup_order", {"order_id": "A-1"}, "")

    def test_a_streamed_legacy_function_call_is_a_call(self):
        record = payload("llama_cpp_python_named_tool_stream")  # its function_call deltas alone
        for chunk in record["stream"]:
            chunk["choices"][0]["delta"].pop("tool_calls", None)

        [call] = one(record, stream=True).calls

        assert (call.tool, call.arguments, call.vendor_id) == ("lookup_order", {"order_id": "A-1"}, "")


class TestIds:
    def test_a_missing_id_gives_no_vendor_id_and_the_wire_uses_waypoints(self):
        record = payload("llama_cpp_python_named_tool")
        del record["response"]["choices"][0]["message"]["tool_calls"][0]["id"]

        [call] = one(record).calls
        sent = openai_messages(ModelRequest(history=[], message="x", rounds=[PastRound("", [call], {call.call_id: {}})], tools=TOOLS))

        assert call.vendor_id == "" and sent[1]["tool_calls"][0]["id"] == sent[2]["tool_call_id"] == "call_1_1"

    def test_an_id_repeated_across_rounds_gets_a_new_waypoint_id_each_round(self):
        record = payload("llama_cpp_python_named_tool")
        first = one(record).calls[0]
        earlier = PastRound("", [first], {first.call_id: {"order_id": "A-1"}})

        [again] = one(record, rounds=(earlier,)).calls

        assert (first.call_id, again.call_id) == ("call_1_1", "call_2_1") and again.vendor_id == first.vendor_id

    def test_an_id_repeated_within_a_round_is_kept_once(self):
        record = payload("ollama_parallel_tool_stream")
        record["stream"][1]["choices"][0]["delta"]["tool_calls"][0]["id"] = "call_wteop8bt"

        calls = one(record, stream=True).calls

        assert [(c.call_id, c.vendor_id) for c in calls] == [("call_1_1", "call_wteop8bt"), ("call_1_2", "")]

    def test_an_absurdly_long_id_is_not_kept(self):
        record = payload("llama_cpp_python_named_tool")
        record["response"]["choices"][0]["message"]["tool_calls"][0]["id"] = "call_" + "9" * 5000

        [call] = one(record).calls

        assert call.vendor_id == "" and call.call_id == "call_1_1"


class TestBadCalls:
    def test_a_name_longer_than_any_tools_is_cut_and_names_no_tool(self):
        record = payload("llama_cpp_python_named_tool")
        record["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = "lookup_order" * 20

        [call] = one(record).calls

        assert len(call.tool) == 65 and call.tool.endswith("…")

    def test_arguments_longer_than_100_kb_are_not_kept(self):
        record = payload("llama_cpp_python_named_tool")
        arguments = json.dumps({"x": "y" * 100_000})
        record["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = arguments

        [call] = one(record).calls

        assert call.arguments == {"_oversized_arguments": len(arguments)}

    def test_arguments_that_are_not_json_are_kept_to_tell_the_model(self):
        record = payload("llama_cpp_python_named_tool_stream")  # cut off before its closing brace
        del record["stream"][-3:-1]

        [call] = one(record, stream=True).calls

        assert call.arguments == {"_malformed_arguments": '{"order_id": "A-1'}

    def test_arguments_sent_as_an_object_are_read(self):
        record = payload("llama_cpp_python_named_tool")
        record["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {"order_id": "A-1"}

        assert one(record).calls[0].arguments == {"order_id": "A-1"}

    def test_nul_characters_are_dropped_from_text_and_arguments(self):
        record = payload("llama_cpp_python_named_tool")
        message = record["response"]["choices"][0]["message"]
        message["content"] = "Let me look\u0000."
        message["tool_calls"][0]["function"]["arguments"] = '{"order_id": "A-\\u00001"}'

        round_ = one(record)

        assert round_.text == "Let me look." and round_.calls[0].arguments == {"order_id": "A-1"}


class TestStreamedArgumentJoining:
    def _stream(self, pieces: list[str]) -> dict:
        record = payload("llama_server_tool_stream")
        first, calls, last = record["stream"][:2], record["stream"][2], record["stream"][-1]
        deltas = []
        for piece in pieces:
            chunk = copy.deepcopy(calls)
            chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = piece
            deltas.append(chunk)
        return {**record, "stream": [*first, *deltas, last]}

    def test_arguments_sent_whole_in_every_delta_are_taken_once(self):
        [call] = one(self._stream(['{"order_id": "A-1"}'] * 3), stream=True).calls

        assert call.arguments == {"order_id": "A-1"}

    def test_arguments_sent_as_the_text_so_far_are_taken_once(self):
        [call] = one(self._stream(['{"order', '{"order_id": "A', '{"order_id": "A-1"}']), stream=True).calls

        assert call.arguments == {"order_id": "A-1"}

    def test_parts_that_happen_to_repeat_the_text_so_far_are_joined(self):
        [call] = one(self._stream(['{"x":', '{"x": 1}}']), stream=True).calls

        assert call.arguments == {"x": {"x": 1}}

    def test_arguments_sent_in_parts_then_whole_again_are_taken_once(self):
        [call] = one(self._stream(['{"order_id"', ': "A-1"}', '{"order_id": "A-1"}']), stream=True).calls

        assert call.arguments == {"order_id": "A-1"}


class TestFinishReasonsAndFailures:
    @pytest.mark.parametrize("reason", ["tool_calls", "stop", "function_call", "length", None, "eos"])
    def test_tool_calls_are_read_whatever_the_finish_reason(self, reason):
        record = payload("llama_cpp_python_named_tool")
        record["response"]["choices"][0]["finish_reason"] = reason

        assert [c.tool for c in one(record).calls] == ["lookup_order"]

    def test_an_answer_without_usage_has_none(self):
        record = payload("llama_cpp_python_text")
        del record["response"]["usage"]

        assert one(record).usage == {}

    def test_an_answer_without_choices_fails_the_round_with_a_safe_message(self):
        record = payload("llama_cpp_python_text")
        record["response"]["choices"] = []

        with pytest.raises(ModelFailed, match="no answer"):
            one(record)

    def test_a_body_that_is_no_chat_completion_fails_the_round(self):
        with pytest.raises(ModelFailed, match="did not answer with a chat completion"):
            one({"status": 200, "response": "<html>Sign in to the proxy</html>"})
