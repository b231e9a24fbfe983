"""
Approvals in Chromium (PRODUCT.md "Approvals: expiry, edits, approvers"), with two contexts, a
customer and a staff member: Edit and Approve with changes (the shop's refund hook gets the edited
amount), an approval that expires while the page is open, and one the team gives from the
Approvals queue while the customer waits.
"""

from __future__ import annotations

import json

import httpx
from playwright.sync_api import expect

from e2e.conftest import staff_login

DESK = "Approvals desk"


def create_desk(server) -> None:
    hook = server.url + "/demo/hooks/refund"
    config = {
        "name": DESK,
        "model": {"provider": "scripted", "rules": [
            {"match": "quick", "steps": [
                {"call": "quick_refund", "arguments": {"order_id": "A-2", "amount": 5}},
                {"when": "expired", "say": "Nobody approved it in time, so nothing was refunded."}, {"say": "Done."}]},
            {"match": "team", "steps": [
                {"call": "team_refund", "arguments": {"order_id": "A-3", "amount": 80}},
                {"when": "denied", "say": "The team declined it."}, {"say": "The team approved it: refund on its way."}]},
            {"match": "refund", "steps": [
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"when": "denied", "say": "Nothing was refunded."}, {"say": "Done: {result}"}]},
        ], "fallback": [{"say": "Ask for a refund, a quick refund or a team refund."}]},
        "tools": [
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": hook, "requires_approval": True,
             "display_name": "Refund", "summary": "Refund ${amount} for order {order_id}",
             "parameters": {"type": "object", "required": ["order_id", "amount"],
                            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number", "minimum": 1}}},
             "approval": {"editable": ["amount"], "expires_in_seconds": 3600}},
            {"name": "quick_refund", "kind": "server", "action": "echo", "requires_approval": True,
             "summary": "Refund ${amount} for order {order_id}",
             "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
             "approval": {"expires_in_seconds": 4}},
            {"name": "team_refund", "kind": "server", "action": "echo", "requires_approval": True,
             "summary": "Refund ${amount} for order {order_id}",
             "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
             "approval": {"approver": "staff", "editable": ["amount"]}},
        ],
    }
    server.database.manage("shell", "-c", "from apps.agent.actions import create_assistant; import json; "
                           f"create_assistant(config=json.loads({json.dumps(json.dumps(config))}))")


def customer(browser, server, start_conversation, message: str):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    start_conversation(page, server, message, assistant=DESK)
    return page


def test_approve_with_changes_expiry_and_the_team(browser, waypoint_server, start_conversation, accessibility, screenshots):
    create_desk(waypoint_server)

    # Approve with changes: Edit shows the amount beside what was asked for; the shop refunds 15.
    page = customer(browser, waypoint_server, start_conversation, "A refund please")
    card = page.locator("#cards .card.approval")
    expect(card).to_contain_text("Shall I refund $20 for order A-1?", timeout=10_000)
    expect(card).to_contain_text("Answer by")
    page.get_by_role("button", name="Edit").click()
    amount = page.get_by_label("Amount")
    expect(amount).to_be_focused()
    expect(amount).to_have_value("20")
    expect(card).to_contain_text("Asked for: 20")
    screenshots(page, "approval-edit-form")
    accessibility(page)
    amount.fill("15")
    page.get_by_role("button", name="Approve with changes").click()
    log = page.get_by_role("log")
    expect(log).to_contain_text("Approved with changes: amount 20 → 15", timeout=10_000)
    expect(log).to_contain_text("approved with changes: amount 15")
    refunds = httpx.get(waypoint_server.url + "/demo/hooks/refund").json()["refunds"]
    assert [r["amount"] for r in refunds] == [15]
    screenshots(page, "approval-approved-with-changes")
    accessibility(page)

    # An approval nobody answers expires while the page is open: the card becomes a receipt, the assistant goes on.
    page = customer(browser, waypoint_server, start_conversation, "A quick refund please")
    expect(page.locator("#cards .card.approval")).to_contain_text("Answer by", timeout=10_000)
    log = page.get_by_role("log")
    expect(log).to_contain_text("Nobody approved it in time", timeout=20_000)
    expect(log.locator(".receipt.expired")).to_contain_text("Expired")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    screenshots(page, "approval-expired")
    accessibility(page)

    # The team's approval: the customer waits without Approve or Deny; Sam approves from the queue.
    page = customer(browser, waypoint_server, start_conversation, "A team refund please")
    waiting = page.locator("#cards .card.approval.team")
    expect(waiting).to_contain_text("Waiting for approval from the team", timeout=10_000)
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(page.get_by_role("button", name="Deny")).to_have_count(0)
    screenshots(page, "approval-waiting-for-team")
    accessibility(page)

    sam = staff_login(browser, waypoint_server, "sam", "Sam")
    expect(sam.locator("#approvals-count")).to_have_attribute("data-count", "1")
    sam.get_by_role("link", name="Approvals").click()
    queue = sam.get_by_role("region", name="Waiting for approval")
    expect(queue).to_contain_text("Refund $80 for order A-3")
    screenshots(sam, "staff-approvals-queue")
    accessibility(sam)
    queue.get_by_role("button", name="Edit").click()
    sam.get_by_label("Amount").fill("60")
    queue.get_by_role("button", name="Approve with changes").click()
    expect(queue).to_contain_text("No approval is waiting for the team.", timeout=10_000)
    log = page.get_by_role("log")
    expect(log).to_contain_text("The team approved it", timeout=10_000)
    expect(log).to_contain_text("Approved with changes: amount 80 → 60")
    expect(log).to_contain_text("sam (staff)")
    sam.context.close()
