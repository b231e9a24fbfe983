"""The demo assistant of `make run`: scripted by default, or the same agent on a real model."""

import pytest
from django.core.management import call_command

from apps.actions.models import ActionLog
from apps.agent.actions import load_demo
from apps.agent.demo import DEMO_INSTRUCTIONS
from apps.agent.models import Assistant
from apps.conversations import actions, queries
from tests.core.test_agent_loop import recorded
from tests.fakes import vendor as wire

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


class TestTheDemo:
    def test_is_scripted_and_has_instructions_by_default(self):
        config = load_demo(base_url="http://127.0.0.1:8000").config

        assert config["model"]["provider"] == "scripted" and config["instructions"] == DEMO_INSTRUCTIONS

    def test_a_model_name_puts_the_same_agent_on_the_deployments_endpoint(self, settings, clock):
        with wire.Vendor() as vendor:
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            vendor.queue(recorded("llama_cpp_python_named_tool_stream"), recorded("llama_cpp_python_text_stream"))
            demo = load_demo(base_url="http://127.0.0.1:8000", model="llama3.2")

            started = actions.start_conversation(assistant_id=str(demo.id), message="Where is my order A-1?",
                                                 persona="guest:alice", edge="api", now=clock())

        first = vendor.requests[0]
        assert (first["model"], first["stream"]) == ("llama3.2", True)
        assert first["messages"][0] == {"role": "system", "content": DEMO_INSTRUCTIONS}
        assert {"lookup_order", "issue_refund", "pick_date"} <= {t["function"]["name"] for t in first["tools"]}
        assert ActionLog.objects.get(conversation_id=started["conversation_id"]).tool == "lookup_order"
        state = queries.conversation_state(queries.conversation_for(started["conversation_id"]))
        assert state["run_status"] == "completed"

    def test_the_command_takes_the_model_from_the_environment_setting(self, settings, capsys):
        settings.WAYPOINT_OPENAI_BASE_URL = "http://127.0.0.1:11434/v1"
        settings.WAYPOINT_DEMO_MODEL = "llama3.2"

        call_command("load_demo", "--base-url", "http://127.0.0.1:8000")

        assert Assistant.objects.get(is_demo=True).config["model"]["model"] == "llama3.2"
        assert "model 'llama3.2' at http://127.0.0.1:11434/v1" in capsys.readouterr().out
