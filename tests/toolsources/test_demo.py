"""
The demo shop's MCP server as `make run` serves it, and the demo assistant's MCP tools: an order's
status read without approval, an address changed, a return refunded after an approval by class, once.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.agent import actions, answers
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.toolsources.demo import demo_server
from tests.fakes.mcp_shop import _free_port, serve

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def demo(settings):
    settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = True
    port = _free_port()
    server, thread = serve(demo_server().streamable_http_app(), port)
    try:
        yield actions.load_demo(base_url="http://127.0.0.1:8000", mcp_url=f"http://127.0.0.1:{port}/mcp")
    finally:
        server.should_exit = True
        thread.join(timeout=5)


def say(assistant, message: str) -> dict:
    started = actions.start_conversation(assistant_id=str(assistant.id), message=message, persona="guest:demo", edge="api",
                                         now=timezone.now())
    return conversation_state(queries.conversation_for(started["conversation_id"]))


def test_the_demo_assistant_uses_the_demo_shop_s_mcp_tools(demo):
    assert say(demo, "Can you track my order?")["messages"][-1]["text"] == "Order A-1 is shipped, on its way to 1 Main St."
    assert say(demo, "Please change my address")["messages"][-1]["text"] == "Done: order A-1 now goes to 221B Baker Street."

    waiting = say(demo, "I want to return it")
    [call] = waiting["pending_client_actions"]
    assert call["kind"] == "approval" and call["tool"] == "return_refund"
    for _ in range(2):  # the same answer twice: accepted once, the refund made once
        answers.accept_results(conversation_id=waiting["conversation_id"], run_id=waiting["run_id"], persona="guest:demo",
                               now=timezone.now(), results=[{"call_id": call["call_id"], "output": {
                                   "decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}}])
    done = conversation_state(queries.conversation_for(waiting["conversation_id"]))
    assert done["messages"][-1]["text"] == "Refund R-1 issued for the return of order A-1."


def test_loading_the_demo_again_keeps_one_source(demo):
    from apps.toolsources.models import ToolSource

    source = ToolSource.objects.get()
    actions.load_demo(base_url="http://127.0.0.1:8000", mcp_url=source.url)

    assert ToolSource.objects.count() == 1
