"""A server process killed mid-turn, as the customer sees it after the restart: the team checks first."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import expect

from tests.servers import DaphneServer, ServerDatabase


@pytest.fixture(scope="module")
def crashing_server():
    """The demo on a server that dies (exit 137) once a side-effecting action has been sent."""
    database = ServerDatabase("e2e_crash")
    server = DaphneServer(database)
    database.manage("load_demo", "--base-url", server.url)
    server.start(env={"WAYPOINT_FAULT_AT": "during_action"})
    yield server
    server.stop()
    database.drop()


def test_a_server_killed_mid_turn_tells_the_customer_the_team_checks_first_and_asking_again_is_a_named_reattempt(
    browser, crashing_server, start_conversation, screenshots, accessibility
):
    # Far from UTC, so a time the card shows in UTC cannot pass for the viewer's.
    context = browser.new_context(timezone_id="Asia/Kolkata")
    page = context.new_page()
    link = start_conversation(page, crashing_server, "I want a refund")
    page.get_by_role("button", name="Approve").click(timeout=10_000)
    assert crashing_server.wait_exit(timeout=30) == 137

    crashing_server.start()

    cards = page.locator("#cards")
    expect(cards).to_contain_text("The reply was interrupted", timeout=20_000)
    # In the customer's words: what happened, what the team checks, what they can do; no Continue
    # before staff have settled whether the refund went through (docs/durability.md).
    expect(cards).to_contain_text("Something went wrong on our side while “Refund” was under way, so we don’t know yet "
                                  "whether it went through.")
    expect(cards).to_contain_text("We are checking whether it went through: our team is looking at what the system "
                                  "that handles it received. Nothing is tried again until they have.")
    expect(cards).to_contain_text("You don’t need to do anything. This page updates as soon as they have checked")
    expect(cards).not_to_contain_text("same reference")
    expect(page.get_by_role("button", name="Continue")).to_have_count(0)
    screenshots(page, "interrupted-awaiting-team")
    accessibility(page)
    # Asking for it again is the customer's own choice, and it goes only as a named re-attempt.
    page.get_by_label("Message").fill("I want a refund")
    page.get_by_role("button", name="Send").click()
    card = page.locator(".card.approval")
    expect(card).to_contain_text("This may already have been done.", timeout=10_000)
    attempted = card.locator("time")
    local = attempted.evaluate("(t) => new Date(t.dateTime).toLocaleTimeString([], {hour: '2-digit', minute: '2-digit'})")
    expect(attempted).to_have_text(local)
    expect(card).not_to_contain_text("UTC")
    expect(card).to_contain_text(f"We tried this at {local}, but were interrupted before we heard back, so it may already have gone through.")
    expect(card).to_contain_text("If you approve, we send it again marked as the same request")
    screenshots(page, "reattempt-approval")
    accessibility(page)
    card.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("log")).to_contain_text("Refund issued", timeout=10_000)
    expect(page.locator(".card.interrupted")).to_have_count(0)
    # Two approvals of one refund: the first, and the second try's, which reads as one.
    receipts = page.locator("#transcript .receipt")
    expect(receipts).to_have_count(2)
    expect(receipts.nth(0)).not_to_contain_text("Second try")
    expect(receipts.nth(1)).to_contain_text(re.compile(r"Second try: Refund \$?20 for order A-1\s*Approved"))
    screenshots(page, "reattempt-receipt")
    # The demo shop restarted with the server: it saw only the re-attempt, under the first attempt's key.
    [refund] = httpx.get(crashing_server.url + "/demo/hooks/refund").json()["refunds"]
    conversation_id, token = re.search(r"/c/([^?]+)\?token=([^&]+)", link).groups()
    latest = httpx.get(f"{crashing_server.url}/v1/runner/conversation/{conversation_id}/messages",
                       headers={"Authorization": f"Bearer {token}"}).json()
    assert refund["deliveries"] == 1 and refund["idempotency_key"].endswith(":call_2_1")
    assert refund["idempotency_key"] != f"{latest['turn_id']}:call_2_1"  # the interrupted turn's key, not the new turn's
    context.close()
