"""
Bad input and bad servers (issue: tool sources, item 6): each gets an answer in words and loses
nothing. A URL that is not MCP, a 500, a body that is not JSON-RPC, a server that hangs, an answer
larger than allowed, a schema that cannot be offered, a call that times out (re-sent under its key
when that is safe, quarantined when it is not), and a source deleted while its approval waits.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger import store
from apps.toolsources import catalog
from apps.toolsources.models import ToolSource
from tests.api.conftest import Api
from tests.fakes.mcp_shop import McpShop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


class Broken:
    """An HTTP server that answers every POST the same wrong way: `500`, `garbage` or `hang`."""

    def __init__(self, mode: str):
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - the http.server API
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if owner.mode == "hang":
                    time.sleep(5)
                    return
                status, body = (500, b"boom") if owner.mode == "500" else (200, b"<html>hello</html>")
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if owner.mode == "garbage" else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.mode = mode
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/mcp"

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture(autouse=True)
def private(settings):
    settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = True
    settings.WAYPOINT_TOOL_SOURCES_LIST_TIMEOUT_SECONDS = 1.5


@pytest.mark.parametrize(("mode", "words"), [
    ("500", "the server failed (500)"),
    ("garbage", "did not answer as an MCP server"),
    ("hang", "did not answer in time"),
])
def test_a_server_that_is_not_a_working_mcp_server_is_422_in_words(api: Api, mode, words):
    broken = Broken(mode)
    try:
        refused = api.post("/v1/tool-sources", {"name": "x", "url": broken.url})
    finally:
        broken.close()

    assert refused.status_code == 422, refused.content
    assert refused.json()["error"]["code"] == "tool_source_unreachable" and words in refused.json()["error"]["message"]
    assert not ToolSource.objects.exists()


def test_bad_urls_and_headers_are_422(api: Api):
    for body, words in [({"name": "x", "url": "ftp://shop.example/mcp"}, "http(s)"),
                        ({"name": "x", "url": "https://user:pw@shop.example/mcp"}, "user name or password"),
                        ({"name": "x", "url": "https://shop.example/mcp", "headers": {"Idempotency-Key": "mine"}}, "not a header"),
                        ({"name": "x", "url": "https://shop.example/mcp", "headers": {"X-Token": "a\nb"}}, "one line"),
                        ({"name": "x", "url": "https://shop.example/mcp", "headers": {"X-Token": "secret "}}, "no space at either end")]:
        refused = api.post("/v1/tool-sources", body)
        assert refused.status_code == 422 and words in json.dumps(refused.json()), (body, refused.content)


def test_a_tool_whose_input_schema_is_invalid_is_listed_disabled():
    [entry] = catalog.merge([{"name": "t", "description": "", "input_schema": {"type": "object", "properties": {"a": {"type": 5}}},
                              "annotations": {}}], [], {})

    assert not entry["enabled"] and entry["problem"].startswith("its input schema is invalid")


def desk(api: Api, source: str, tool: dict, steps: list) -> str:
    return api.create_assistant(model={"provider": "scripted", "rules": [{"match": "go", "steps": steps}], "fallback": [{"say": "ok"}]},
                                tools=[{"kind": "mcp", "source": source, **tool}])


def added(api: Api, shop: McpShop) -> str:
    made = api.post("/v1/tool-sources", {"name": "Slow shop", "url": shop.url})
    assert made.status_code == 201, made.content
    return made.json()["id"]


def test_a_destructive_call_that_times_out_quarantines_its_turn_and_was_sent_once(api: Api):
    with McpShop() as shop:
        source = added(api, shop)
        shop.delay = 4.0
        assistant = desk(api, source, {"name": "note", "tool": "add_note", "requires_approval": False, "timeout_seconds": 2},
                         [{"call": "note", "arguments": {"order_id": "A-1", "note": "x"}}, {"say": "{result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]  # the runner is inline: the turn has ended
    # Out of the block the shop has stopped, once it finished the call it got: nothing else reached it.

    kinds = [e.kind for e in store.read(cid)]
    assert "turn_ambiguous" in kinds and "action_finished" not in kinds
    assert len(shop.of("add_note")) == 1
    assert conversation_state(queries.conversation_for(cid))["run_status"] == "interrupted"


def test_an_idempotent_call_that_times_out_is_sent_again_under_its_key_then_fails_in_words(api: Api):
    with McpShop() as shop:
        source = added(api, shop)
        shop.delay = 2.0
        assistant = desk(api, source, {"name": "move", "tool": "update_address", "timeout_seconds": 1},
                         [{"call": "move", "arguments": {"order_id": "A-1", "address": "1 Main St"}}, {"say": "{result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]  # the runner is inline: the turn has ended
    # Out of the block the shop has stopped, once it finished the calls it got.

    calls = shop.of("update_address")
    assert len(calls) == 3 and len({c["key"] for c in calls}) == 1
    assert "did not answer" in conversation_state(queries.conversation_for(cid))["messages"][-1]["text"]


def test_an_answer_larger_than_allowed_is_a_failed_call(api: Api, settings):
    settings.WAYPOINT_TOOL_SOURCES_MAX_RESULT_BYTES = 2_000
    with McpShop() as shop:
        source = added(api, shop)
        assistant = desk(api, source, {"name": "lookup", "tool": "lookup_order"},
                         [{"call": "lookup", "arguments": {"order_id": "A" * 5_000}}, {"say": "{result}"}])

        cid = api.start("go", assistant=assistant)["conversation_id"]

    reply = conversation_state(queries.conversation_for(cid))["messages"][-1]["text"]
    assert reply.startswith('{"error": ') and "A" * 5_000 not in reply


def test_a_source_deleted_while_its_approval_waits_fails_the_call_in_words(api: Api):
    with McpShop() as shop:
        source = added(api, shop)
        assistant = desk(api, source, {"name": "refund", "tool": "issue_refund"},
                         [{"call": "refund", "arguments": {"order_id": "A-1", "amount": 5}}, {"say": "{result}"}])
        cid = api.start("go", assistant=assistant)["conversation_id"]
        state = api.state(cid)
        [call] = state["pending_client_actions"]
        assert api.delete(f"/v1/tool-sources/{source}").status_code == 204

        answered = api.post(f"/v1/agent/conversations/{cid}/runs/{state['run_id']}/results", {"results": [{"call_id": call["call_id"],
                            "output": {"decision": "approve", "reviewed": {"tool": "refund", "arguments": call["arguments"]}}}]})

    assert answered.status_code == 200
    assert shop.of("issue_refund") == []
    assert "its tool source was deleted" in answered.json()["state"]["messages"][-1]["text"]


def test_a_source_must_be_https_outside_local_development(api: Api, settings):
    settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE = False

    refused = api.post("/v1/tool-sources", {"name": "x", "url": "http://shop.example/mcp", "headers": {"Authorization": "Bearer s"}})

    assert refused.status_code == 422 and "must be https" in refused.json()["error"]["message"]
