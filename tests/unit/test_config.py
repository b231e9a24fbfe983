import pytest

from apps.agent.config import ConfigError, check_config
from tests.conftest import SUPPORT_CONFIG


def problems(config) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        check_config(config)
    return caught.value.problems


class TestCheckConfig:
    def test_fills_in_the_documented_defaults(self):
        config = check_config({"name": "x", "model": {"provider": "scripted", "rules": []}})

        assert config["allow_conversation_completion"] is False and config["step_budget"] == 8

    def test_rejects_an_unknown_tool_kind(self):
        config = {**SUPPORT_CONFIG, "tools": [{"name": "t", "kind": "magic"}]}

        assert any("unknown tool kind" in p for p in problems(config))

    def test_rejects_a_bad_regular_expression(self):
        config = {**SUPPORT_CONFIG, "model": {"provider": "scripted", "rules": [{"match": "(", "steps": [{"say": "x"}]}]}}

        assert any("bad regular expression" in p for p in problems(config))

    def test_rejects_approval_on_a_client_tool(self):
        config = {**SUPPORT_CONFIG, "tools": [{"name": "t", "kind": "client", "requires_approval": True}]}

        assert any("only server tools" in p for p in problems(config))

    def test_rejects_an_unknown_action(self):
        config = {**SUPPORT_CONFIG, "tools": [{"name": "t", "kind": "server", "action": "rm_rf"}]}

        assert any("unknown action" in p for p in problems(config))

    def test_rejects_a_rule_calling_an_undefined_tool(self):
        config = {**SUPPORT_CONFIG, "tools": []}

        assert any("calls unknown tool 'lookup_order'" in p for p in problems(config))


def openai_model(**settings):
    return {**SUPPORT_CONFIG, "model": {"provider": "openai", "model": "gpt-4o-mini", **settings}}


class TestInstructionsAndModelSettings:
    def test_accepts_every_documented_setting(self):
        config = check_config({**openai_model(temperature=0.2, max_output_tokens=300, tool_choice="lookup_order",
                                              timeout_seconds=30, stream=True), "instructions": "You are Acme's agent."})

        assert config["instructions"] == "You are Acme's agent." and config["model"]["tool_choice"] == "lookup_order"

    @pytest.mark.parametrize("choice", ["auto", "none", "required", "complete_conversation"])
    def test_accepts_each_tool_choice_mode_and_built_in_tools(self, choice):
        assert check_config(openai_model(tool_choice=choice))["model"]["tool_choice"] == choice

    @pytest.mark.parametrize("value", ["0.5", -0.1, 2.5, True, None, float("nan")])
    def test_rejects_a_temperature_that_is_not_a_number_from_0_to_2(self, value):
        assert problems(openai_model(temperature=value)) == ["model.temperature: must be a number from 0 to 2"]

    @pytest.mark.parametrize("value", [0, -3, 1.5, "100", True])
    def test_rejects_max_output_tokens_that_is_not_a_positive_whole_number(self, value):
        assert problems(openai_model(max_output_tokens=value)) == [
            "model.max_output_tokens: must be a whole number of at least 1"]

    @pytest.mark.parametrize("value", ["sometimes", "issue_refunds", 3, ["auto"], {"type": "function"}])
    def test_rejects_a_tool_choice_that_is_no_mode_and_no_tool_of_the_assistant(self, value):
        assert problems(openai_model(tool_choice=value)) == [
            "model.tool_choice: must be auto, none, required or the name of one of the assistant's tools"]

    @pytest.mark.parametrize("value", [0, -1, "60", False, float("inf"), 3601])
    def test_rejects_a_timeout_that_is_not_a_positive_number_of_seconds(self, value):
        assert problems(openai_model(timeout_seconds=value)) == [
            "model.timeout_seconds: must be a number of seconds above 0 (at most 3600)"]

    @pytest.mark.parametrize("value", [42, ["be nice"], {"text": "x"}, "x" * 20_001])
    def test_rejects_instructions_that_are_not_text_of_a_sane_length(self, value):
        assert problems({**SUPPORT_CONFIG, "instructions": value}) == [
            "instructions: must be text of at most 20000 characters"]

    def test_reports_every_wrong_setting_at_once(self):
        found = problems({**openai_model(temperature="hot", max_output_tokens=0, stream="yes"), "instructions": 1})

        assert [p.split(":")[0] for p in found] == [
            "instructions", "model.temperature", "model.max_output_tokens", "model.stream"]

    def test_applies_to_the_scripted_provider_too(self):
        config = {**SUPPORT_CONFIG, "model": {**SUPPORT_CONFIG["model"], "temperature": 7}}

        assert problems(config) == ["model.temperature: must be a number from 0 to 2"]
