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
