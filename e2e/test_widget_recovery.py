"""A server process killed mid-turn, as the customer sees it: Continue after the restart."""

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


def test_a_server_killed_mid_turn_shows_continue_after_the_restart_and_continue_completes_a_new_turn(
    browser, crashing_server, start_conversation, screenshots, accessibility
):
    context = browser.new_context()
    page = context.new_page()
    link = start_conversation(page, crashing_server, "I want a refund")
    page.get_by_role("button", name="Approve").click(timeout=10_000)
    assert crashing_server.wait_exit(timeout=30) == 137

    crashing_server.start()

    continue_button = page.get_by_role("button", name="Continue")
    expect(continue_button).to_be_visible(timeout=20_000)
    cards = page.locator("#cards")
    expect(cards).to_contain_text("The reply was interrupted")
    expect(cards).to_contain_text("It stopped while “Refund” was under way. We are checking whether it went through")
    expect(cards).to_contain_text("sent under the same reference as before")
    screenshots(page, "interrupted")
    continue_button.click()
    # The new turn goes on from the record: the refund's outcome is unknown, so it asks again, saying so.
    card = page.locator(".card.approval")
    expect(card).to_contain_text("This may already have been done.", timeout=10_000)
    expect(card).to_contain_text(re.compile(r"An earlier attempt at \d\d:\d\d UTC was interrupted, and it may already have gone through\."))
    expect(card).to_contain_text("sent again under the same reference")
    screenshots(page, "reattempt-approval")
    accessibility(page)
    card.get_by_role("button", name="Approve").click()
    expect(page.get_by_role("log")).to_contain_text("Refund issued", timeout=10_000)
    expect(continue_button).to_have_count(0)
    # The demo shop restarted with the server: it saw only the re-attempt, under the first attempt's key.
    [refund] = httpx.get(crashing_server.url + "/demo/hooks/refund").json()["refunds"]
    conversation_id, token = re.search(r"/c/([^?]+)\?token=([^&]+)", link).groups()
    latest = httpx.get(f"{crashing_server.url}/v1/runner/conversation/{conversation_id}/messages",
                       headers={"Authorization": f"Bearer {token}"}).json()
    assert refund["deliveries"] == 1 and refund["idempotency_key"].endswith(":call_2_1")
    assert refund["idempotency_key"] != f"{latest['turn_id']}:call_2_1"  # the interrupted turn's key, not the new turn's
    context.close()
