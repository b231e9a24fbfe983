"""The scripted model's `when` steps and readable placeholders (PRODUCT.md "Scripted semantics")."""

from __future__ import annotations

import pytest

from apps.agent.config import ConfigError, check_config
from apps.agent.providers import ModelRequest, PastRound, PastTurn, ScriptedProvider, ToolCall

REFUND = {"order_id": "A-1", "amount": 20}
TOOLS = [{"name": "issue_refund", "requires_approval": True}, {"name": "pick_date"}, {"name": "lookup_order"}]
REFUND_RULE = {"rules": [{"match": "refund", "steps": [
    {"call": "issue_refund", "arguments": REFUND},
    {"when": "approved", "say": "Refund issued."},
    {"when": "denied", "say": "The refund was declined."},
    {"when": "failed", "say": "The refund failed: {result.error}."},
]}]}
DATE_RULE = {"rules": [{"match": "when", "steps": [
    {"call": "pick_date", "arguments": {}},
    {"when": "declined", "say": "No date booked."},
    {"say": "Booked for {result.date}."},
]}]}


def after(script: dict, message: str, tool: str, result, *, earlier: list[PastRound] = ()) -> str:
    """The text the model answers with after one call of `tool` that had `result`."""
    rounds = [*earlier, PastRound("", [ToolCall("call_1_1", tool, {})], {"call_1_1": result})]
    answer = ScriptedProvider(script).complete(ModelRequest(history=[], message=message, rounds=rounds, tools=TOOLS))
    return answer.text


class TestWhen:
    def test_after_an_approved_call_takes_the_approved_step(self):
        assert after(REFUND_RULE, "refund", "issue_refund", {"refund_id": "R-1"}) == "Refund issued."

    def test_after_a_denial_takes_the_denied_step_and_passes_the_approved_one_over(self):
        assert after(REFUND_RULE, "refund", "issue_refund", {"denied": True, "answered_by": "guest:a"}) == "The refund was declined."

    def test_after_a_failure_takes_the_failed_step(self):
        assert after(REFUND_RULE, "refund", "issue_refund", {"error": "HTTP 500"}) == "The refund failed: HTTP 500."

    def test_after_a_declined_answer_takes_the_declined_step(self):
        assert after(DATE_RULE, "when?", "pick_date", {"declined": True}) == "No date booked."

    def test_a_step_without_when_follows_when_no_when_matches(self):
        assert after(DATE_RULE, "when?", "pick_date", {"date": "2026-12-24"}) == "Booked for 2026-12-24."

    def test_a_call_that_needs_no_approval_is_not_approved(self):
        script = {"rules": [{"match": "x", "steps": [
            {"call": "lookup_order"}, {"when": "approved", "say": "approved"}, {"say": "looked up"}]}]}

        assert after(script, "x", "lookup_order", {"order_id": "A-1"}) == "looked up"

    def test_a_rule_whose_when_steps_all_miss_runs_out_of_steps(self):
        script = {"rules": [{"match": "refund", "steps": REFUND_RULE["rules"][0]["steps"][:2]}]}

        assert after(script, "refund", "issue_refund", {"denied": True}) == ""

    def test_a_when_step_before_any_call_never_applies(self):
        script = {"rules": [{"match": "x", "steps": [{"when": "failed", "say": "failed"}, {"say": "first"}]}]}

        answer = ScriptedProvider(script).complete(ModelRequest(history=[], message="x", rounds=[], tools=TOOLS))

        assert answer.text == "first"

    def test_the_outcome_is_the_previous_rounds_not_an_older_one(self):
        script = {"rules": [{"match": "x", "steps": [
            {"call": "issue_refund", "arguments": REFUND},
            {"when": "denied", "say": "denied", "call": "lookup_order"},
            {"when": "denied", "say": "denied twice"},
            {"say": "looked up after a denial"},
        ]}]}
        denied = PastRound("", [ToolCall("call_1_1", "issue_refund", REFUND)], {"call_1_1": {"denied": True}})

        text = after(script, "x", "lookup_order", {"order_id": "A-1"}, earlier=[denied])

        assert text == "looked up after a denial"

    def test_call_ids_follow_the_step_taken(self):
        script = {"rules": [{"match": "x", "steps": [
            {"call": "issue_refund"}, {"when": "approved", "say": "one", "call": "lookup_order"},
            {"when": "denied", "say": "two", "call": "lookup_order"}]}]}
        rounds = [PastRound("", [ToolCall("call_1_1", "issue_refund", {})], {"call_1_1": {"denied": True}})]

        answer = ScriptedProvider(script).complete(ModelRequest(history=[], message="x", rounds=rounds, tools=TOOLS))

        assert (answer.text, [c.call_id for c in answer.calls]) == ("two", ["call_3_1"])

    def test_the_same_history_gives_the_same_round(self):
        rounds = [PastRound("", [ToolCall("call_1_1", "issue_refund", REFUND)], {"call_1_1": {"denied": True}})]
        request = ModelRequest(history=[], message="refund", rounds=rounds, tools=TOOLS)

        assert ScriptedProvider(REFUND_RULE).complete(request) == ScriptedProvider(REFUND_RULE).complete(request)

    def test_a_continuation_after_staff_confirmed_an_approved_call_takes_the_approved_step(self):
        interrupted = PastTurn("T1", "refund", False, [PastRound(
            "", [ToolCall("call_1_1", "issue_refund", REFUND)], {"call_1_1": {"status": "done", "note": "checked"}})], "", "interrupted")

        answer = ScriptedProvider(REFUND_RULE).complete(
            ModelRequest(history=[interrupted], message="", rounds=[], tools=TOOLS, continuation=True))

        assert answer.text == "Refund issued."

    def test_an_unknown_outcome_is_none_of_them(self):
        interrupted = PastTurn("T1", "refund", False, [PastRound(
            "", [ToolCall("call_1_1", "issue_refund", REFUND)], {"call_1_1": {"outcome": "unknown"}})], "", "interrupted")

        answer = ScriptedProvider(REFUND_RULE).complete(
            ModelRequest(history=[interrupted], message="", rounds=[], tools=TOOLS, continuation=True))

        assert [c.tool for c in answer.calls] == ["issue_refund"]


class TestPlaceholders:
    def test_a_missing_field_reads_as_nothing(self):
        assert after(DATE_RULE, "when?", "pick_date", {"label": "x"}) == "Booked for ."

    def test_a_field_that_is_not_text_reads_as_json(self):
        assert after(DATE_RULE, "when?", "pick_date", {"date": 3}) == "Booked for 3."

    def test_a_message_or_result_holding_a_placeholder_is_not_read_as_one(self):
        script = {"rules": [{"match": "x", "steps": [{"call": "pick_date"}, {"say": "{message} / {result.date} / {result}"}]}]}

        text = after(script, "x {result}", "pick_date", {"date": "{message}"})

        assert text == 'x {result} / {message} / {"date": "{message}"}'


def check(step: dict) -> list[str]:
    config = {"name": "x", "model": {"provider": "scripted", "rules": [{"match": "x", "steps": [step]}]}}
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    return caught.value.problems


class TestWhenInTheConfiguration:
    @pytest.mark.parametrize("outcome", ["approved", "denied", "declined", "failed"])
    def test_accepts_each_outcome_on_a_say_step(self, outcome):
        config = {"name": "x", "model": {"provider": "scripted", "rules": [{"match": "x", "steps": [{"when": outcome, "say": "ok"}]}]}}

        assert check_config(config)["model"]["rules"][0]["steps"][0]["when"] == outcome

    @pytest.mark.parametrize("value", ["answered", "", None, ["denied"], 1])
    def test_rejects_an_unknown_outcome(self, value):
        assert check({"when": value, "say": "ok"}) == ["model.rules[0].steps[0].when: must be one of approved, denied, declined, failed, expired, found, not_found"]

    def test_rejects_when_on_a_step_that_says_nothing(self):
        assert check({"when": "denied", "call": "ask_question"}) == [
            "model.rules[0].steps[0].when: only a step that says something can depend on an outcome"]
