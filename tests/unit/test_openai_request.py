"""What the `openai` provider sends: the request body of a model round, built without any network."""

from apps.agent.providers import ModelRequest, OpenAIProvider, PastRound, PastTurn, ToolCall, openai_messages

TOOLS = [{"name": "lookup_order", "kind": "server", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


def provider(**model):
    return OpenAIProvider({"model": "m", **model}, api_key="k", base_url="http://127.0.0.1:9/v1")


def request(**fields):
    return ModelRequest(**{"history": [], "message": "where is A-1?", "rounds": [], "tools": TOOLS, **fields})


class TestInstructions:
    def test_are_the_first_system_message_and_remembered_facts_follow_them(self):
        messages = openai_messages(request(instructions="You are Acme's agent.", memory=["likes tea"]))

        assert messages[:3] == [
            {"role": "system", "content": "You are Acme's agent."},
            {"role": "system", "content": "Facts to remember:\n- likes tea"},
            {"role": "user", "content": "where is A-1?"},
        ]

    def test_come_before_the_earlier_turns(self):
        earlier = PastTurn("t1", "hi", False, [], "Hello!", "completed")

        messages = openai_messages(request(history=[earlier], instructions="Be brief."))

        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]

    def test_no_instructions_send_no_system_message(self):
        assert [m["role"] for m in openai_messages(request())] == ["user"]


class TestModelSettings:
    def test_are_sent_under_their_wire_names(self):
        body = provider(temperature=0.3, max_output_tokens=120, tool_choice="required").request_body(request())

        assert (body["temperature"], body["max_tokens"], body["tool_choice"]) == (0.3, 120, "required")
        assert "max_completion_tokens" not in body

    def test_unset_settings_are_left_to_the_server(self):
        body = provider().request_body(request())

        assert set(body) == {"model", "messages", "tools"}

    def test_a_tool_name_is_sent_as_a_named_tool_choice(self):
        body = provider(tool_choice="lookup_order").request_body(request())

        assert body["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}

    def test_a_forced_tool_is_no_longer_forced_once_the_turn_called_a_tool(self):
        called = PastRound("", [ToolCall("call_1_1", "lookup_order", {"order_id": "A-1"})], {"call_1_1": {"order_id": "A-1"}})

        body = provider(tool_choice="lookup_order").request_body(request(rounds=[called]))

        assert body["tool_choice"] == "auto"

    def test_none_stays_none_after_a_tool_call(self):
        called = PastRound("", [ToolCall("call_1_1", "lookup_order", {})], {"call_1_1": {}})

        assert provider(tool_choice="none").request_body(request(rounds=[called]))["tool_choice"] == "none"

    def test_the_closing_attempt_sends_neither_tools_nor_a_tool_choice(self):
        body = provider(tool_choice="required").request_body(request(closing=True))

        assert "tools" not in body and "tool_choice" not in body

    def test_a_stream_asks_for_usage_in_its_last_chunk(self):
        body = provider(stream=True).request_body(request())

        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_arguments_a_log_cannot_hold_become_a_malformed_call_the_model_is_told_of():
    from apps.agent.providers import _arguments

    assert _arguments('{"order_id": "A-1\x00"') == {"_malformed_arguments": '{"order_id": "A-1"'}
    assert "_malformed_arguments" in _arguments('{"amount": NaN}')
    assert "_malformed_arguments" in _arguments('{"amount": 123456789012345678901234}')
    assert _arguments('{"note": "a\\u0000b"}') == {"note": "ab"}


def chatter(n: int, words: int = 60) -> list[PastTurn]:
    """n earlier turns, each a question and a reply of about `words` words."""
    return [PastTurn(f"t{i}", f"question {i}: " + "lorem ipsum " * (words // 2), False, [], f"answer {i}: " + "dolor sit " * (words // 2),
                     "completed") for i in range(n)]


class TestBoundedContext:
    def test_without_a_bound_every_earlier_turn_is_sent(self):
        body = provider().request_body(request(history=chatter(200)))

        assert sum(1 for m in body["messages"] if m["role"] == "user") == 201

    def test_the_newest_turns_that_fit_are_kept_and_one_line_says_what_was_left_out(self):
        history = chatter(200)
        body = provider(context_tokens=4096, max_output_tokens=256).request_body(
            request(history=history, instructions="You are Acme's agent."))
        messages = body["messages"]

        from apps.agent.providers import _openai_tools, estimate_tokens

        assert estimate_tokens(messages) + estimate_tokens(_openai_tools(TOOLS)) + 256 <= 4096
        assert messages[0] == {"role": "system", "content": "You are Acme's agent."}
        assert messages[-1] == {"role": "user", "content": "where is A-1?"}
        [line] = [m for m in messages if m["content"].startswith("Left out here")]
        kept = [m["content"].split(":")[0] for m in messages if m["role"] == "user"][:-1]
        assert kept == [f"question {i}" for i in range(200 - len(kept), 200)]  # the newest, in order
        assert line["content"].startswith(f"Left out here to fit the model's context: {200 - len(kept)} earlier turns")
        assert messages.index(line) == 1

    def test_an_action_whose_outcome_is_unknown_is_never_left_out(self):
        unknown = PastRound("", [ToolCall("c1", "issue_refund", {"order_id": "A-1"})],
                            {"c1": {"outcome": "unknown", "attempted_at": "2026-12-01T10:00:00Z", "note": "may have gone through"}})
        history = [PastTurn("old", "refund A-1", False, [unknown], "", "interrupted"), *chatter(200)]

        messages = provider(context_tokens=2048).request_body(request(history=history))["messages"]

        assert {"role": "user", "content": "refund A-1"} in messages
        assert any(m.get("tool_calls") and m["tool_calls"][0]["function"]["name"] == "issue_refund" for m in messages)
        assert "question 0:" not in str(messages) and "question 199:" in str(messages)

    def test_the_deployments_default_applies_when_the_model_sets_none(self):
        bounded = OpenAIProvider({"model": "m"}, api_key="k", base_url="http://127.0.0.1:9/v1", context_tokens=2048)

        messages = bounded.request_body(request(history=chatter(200)))["messages"]

        assert any(m["content"].startswith("Left out here") for m in messages)
