"""
The real llama.cpp model calls a tool of an MCP tool source (PRODUCT.md "Tool sources: MCP"): the
request tells it the server's description and input schema, the call reaches the MCP server (built
with the `mcp` package) with its key, and the model's next round carries the server's result.
"""

import json

import pytest

from apps.actions.models import ActionLog
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger.replay import replay, verify
from apps.toolsources import actions as sources
from tests.fakes.mcp_shop import McpShop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
def test_the_model_calls_an_mcp_tool_and_reads_its_result(start, make_assistant, relay, settings, stream):
    settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = True
    with McpShop() as shop:
        source = sources.create_source(name="Acme shop", url=shop.url)
        bot = make_assistant(
            model={"provider": "openai", "model": "smollm2", "stream": stream, "temperature": 0, "max_output_tokens": 40,
                   "timeout_seconds": 120, "tool_choice": "lookup"},
            tools=[{"name": "lookup", "kind": "mcp", "source": str(source.id), "tool": "lookup_order"}], step_budget=3)

        cid = start("Where is my order A-1?", assistant=bot)["conversation_id"]

    offered = relay.requests[0]["tools"][0]["function"]
    assert offered["name"] == "lookup" and offered["description"] == "Look an order up by its id"
    assert offered["parameters"]["properties"]["order_id"]["type"] == "string"
    [call] = shop.of("lookup_order")
    log = ActionLog.objects.get(conversation_id=cid)
    assert call["key"] == f"{log.turn_id}:{log.call_id}" and log.status == "succeeded"
    calls, result = relay.requests[1]["messages"][-2:]
    assert calls["tool_calls"][0]["function"]["name"] == "lookup"
    assert result["role"] == "tool" and json.loads(result["content"])["status"] == "shipped"
    state = conversation_state(queries.conversation_for(cid))
    assert state["run_status"] == "completed" and state["messages"][-1]["text"].strip()
    assert replay(cid).ok and verify(cid).ok
