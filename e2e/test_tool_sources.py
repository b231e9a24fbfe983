"""
MCP tool sources in Chromium (PRODUCT.md "Tool sources: MCP"): a destructive MCP tool's approval
card names its source and says what its class means, and the staff Tool sources page shows the
catalog, refreshes it, and confirms a tool that changed on its server.
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from e2e.conftest import staff_login
from tests.fakes.mcp_shop import McpShop
from tests.servers import DaphneServer, ServerDatabase

DESK = "MCP desk"
SECRET = "sk-e2e-shop"


@pytest.fixture(scope="module")
def shop():
    with McpShop(token=SECRET) as running:
        yield running


@pytest.fixture(scope="module")
def server(shop):
    database = ServerDatabase("e2e-mcp")
    running = DaphneServer(database, env={"WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE": "1"})
    database.manage("load_demo", "--base-url", f"http://127.0.0.1:{running.port}")
    running.start()
    try:
        key = database.manage("create_api_key", "e2e-mcp").strip().splitlines()[-1]
        api = {"Authorization": f"Bearer {key}"}
        source = httpx.post(running.url + "/v1/tool-sources", headers=api, timeout=30, json={
            "name": "Acme shop", "url": shop.url, "headers": {"Authorization": f"Bearer {SECRET}"}}).json()
        made = httpx.post(running.url + "/v1/assistants", headers=api, timeout=30, json={
            "name": DESK, "model": {"provider": "scripted", "rules": [{"match": "refund", "steps": [
                {"call": "lookup", "arguments": {"order_id": "A-1"}},
                {"call": "refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"when": "denied", "say": "Nothing was refunded."}, {"say": "Refunded: {result}"}]}], "fallback": [{"say": "ok"}]},
            "tools": [{"name": "lookup", "kind": "mcp", "source": source["id"], "tool": "lookup_order", "display_name": "Order lookup"},
                      {"name": "refund", "kind": "mcp", "source": source["id"], "tool": "issue_refund",
                       "summary": "Refund ${amount} for order {order_id}"}]})
        assert made.status_code == 201, made.text
        yield running
    finally:
        # A setup that failed half-way leaves no server behind: it would hold a port and the CPU.
        running.stop()
        database.drop()


def test_an_mcp_approval_card_and_the_tool_sources_page(browser, server, shop, start_conversation, screenshots, accessibility):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    start_conversation(page, server, "A refund please", assistant=DESK)
    card = page.locator("#cards .card.approval")
    expect(card).to_contain_text("Shall I refund $20 for order A-1?", timeout=10_000)
    expect(card).to_contain_text("This changes data in Acme shop and cannot be undone.")
    assert len(shop.of("lookup_order")) == 1 and shop.of("issue_refund") == []  # read: no approval; destructive: waits
    screenshots(page, "mcp-approval-card")
    accessibility(page)
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("log")).to_contain_text("Refunded:", timeout=10_000)
    [refund] = shop.of("issue_refund")
    assert refund["key"] == refund["meta_key"] and refund["key"].startswith("turn_")

    staff = staff_login(browser, server, "ops", "Ops")
    staff.get_by_role("link", name="Tool sources").click()
    source = staff.get_by_role("article", name="Acme shop")
    expect(source).to_contain_text("issue_refund")
    expect(source).to_contain_text("destructive")
    expect(source).to_contain_text(DESK)
    expect(staff.locator("body")).not_to_contain_text(SECRET)
    expect(staff.get_by_role("region", name="Last calls")).to_contain_text("succeeded")
    screenshots(staff, "staff-tool-sources")
    accessibility(staff)

    # The server changes a tool: Refresh disables it until someone confirms it.
    shop.server._tool_manager._tools["lookup_order"].description = "Look an order up and email its owner"
    source.get_by_role("button", name="Refresh").click()
    expect(staff.get_by_role("button", name="Confirm lookup_order")).to_be_visible()
    expect(source).to_contain_text("Changed: disabled until confirmed")
    screenshots(staff, "staff-tool-sources-changed")
    staff.get_by_role("button", name="Confirm lookup_order").click()
    expect(staff.get_by_role("button", name="Confirm lookup_order")).to_have_count(0)
    staff.context.close()
    page.context.close()
