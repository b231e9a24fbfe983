"""
MCP calls across a crash (PRODUCT.md "Tool sources: MCP", "Fault injection"): a real Daphne process
hard-exits (`WAYPOINT_FAULT_AT=during_action`, exit 137) after an MCP call went out and before its
outcome was recorded; after a restart, an idempotent call is sent again under the same key and the
turn completes, while a destructive one is quarantined and reached the server at most once.
"""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.mcp_shop import McpShop
from tests.process import probe
from tests.process.outside import Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

RECOVERY_LIMIT = 10.0
SECRET = "sk-crash-42"
PRIVATE = {"WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE": "1"}


class Desk:
    def __init__(self, database: ServerDatabase, shop: McpShop):
        self.database, self.shop, self.rows = database, shop, Rows(database.url)
        self.key = database.manage("create_api_key", "mcp-crash").strip().splitlines()[-1]

    def call(self, server: DaphneServer, method: str, path: str, body=None) -> httpx.Response:
        return httpx.request(method, server.url + path, json=body, headers={"Authorization": f"Bearer {self.key}"}, timeout=30)

    def setup(self, server: DaphneServer) -> str:
        made = self.call(server, "POST", "/v1/tool-sources", {"name": "Acme shop", "url": self.shop.url,
                                                                "headers": {"Authorization": f"Bearer {SECRET}"}})
        assert made.status_code == 201, made.text
        source = made.json()["id"]
        assistant = self.call(server, "POST", "/v1/assistants", {"name": "MCP crash desk", "model": {"provider": "scripted", "rules": [
            {"match": "address", "steps": [{"call": "move", "arguments": {"order_id": "A-1", "address": "1 Main St"}},
                                           {"say": "Moved: {result}"}]},
            {"match": "refund", "steps": [{"call": "refund", "arguments": {"order_id": "A-1", "amount": 20}},
                                          {"say": "Refunded: {result}"}]}]},
            "tools": [{"name": "move", "kind": "mcp", "source": source, "tool": "update_address"},
                      {"name": "refund", "kind": "mcp", "source": source, "tool": "issue_refund"}]})
        assert assistant.status_code == 201, assistant.text
        return assistant.json()["id"]

    def waiting(self, server: DaphneServer, cid: str) -> dict | None:
        state = self.call(server, "GET", f"/v1/runner/conversation/{cid}/messages").json()
        return state if state["pending_client_actions"] else None

    def start(self, server: DaphneServer, assistant: str, message: str) -> str:
        started = self.call(server, "POST", "/v1/agent/conversations", {"assistant": assistant, "message": message})
        assert started.status_code == 201, started.text
        return started.json()["conversation_id"]


def test_an_idempotent_call_is_sent_again_under_its_key_and_a_destructive_one_is_quarantined():
    database = ServerDatabase("mcp-crash")
    try:
        with McpShop(token=SECRET) as shop:
            desk = Desk(database, shop)
            faulty = DaphneServer(database, env={**PRIVATE, "WAYPOINT_FAULT_AT": "during_action"}).start()
            assistant = desk.setup(faulty)

            # Idempotent: the call went out, the process died before recording its outcome.
            moving = desk.start(faulty, assistant, "change my address")
            assert faulty.wait_exit() == 137
            [first] = shop.of("update_address")

            healthy = DaphneServer(database, env=PRIVATE).start()
            try:
                wait_for(lambda: desk.rows.messages(moving)[-1]["role"] == "assistant", timeout=RECOVERY_LIMIT,
                         what="the address change to finish after the restart")
                refunding = desk.start(healthy, assistant, "refund please")
                state = wait_for(lambda: desk.waiting(healthy, refunding), timeout=15, what="the refund's approval")
            finally:
                healthy.kill()
            again = shop.of("update_address")
            assert len(again) == 2 and again[1]["key"] == first["key"] == again[1]["meta_key"]
            assert desk.rows.messages(moving)[-1]["text"].startswith("Moved:")

            # Destructive: approved on a faulty server, which dies right after sending it.
            [pending] = state["pending_client_actions"]
            assert pending["kind"] == "approval" and shop.of("issue_refund") == []  # destructive: approved by class
            second = DaphneServer(database, env={**PRIVATE, "WAYPOINT_FAULT_AT": "during_action"}).start()
            desk.call(second, "POST", f"/v1/agent/conversations/{refunding}/runs/{state['run_id']}/results", {"results": [
                {"call_id": pending["call_id"], "output": {"decision": "approve", "reviewed": {"tool": "refund",
                                                                                             "arguments": pending["arguments"]}}}]})
            assert second.wait_exit() == 137
            assert len(shop.of("issue_refund")) == 1

            after = DaphneServer(database, env=PRIVATE).start()
            try:
                wait_for(lambda: any(e["kind"] == "turn_ambiguous" for e in desk.rows.events(refunding)), timeout=RECOVERY_LIMIT,
                         what="the refund to be quarantined")
            finally:
                after.kill()
            assert len(shop.of("issue_refund")) == 1  # at most once: quarantined, never sent again
            checked = probe.run(database, "check", conversation_ids=[moving, refunding])
            assert all(c["replay"]["ok"] and c["verify"]["ok"] for c in checked.values()), checked
    finally:
        database.drop()
