"""A request nobody answered in time, in Chromium: it expires on the open page, and Continue asks again."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from e2e.embedding import embedding_backend
from tests.servers import DaphneServer, ServerDatabase

EXPIRY_SECONDS = 5
QUICK = {
    "name": "Quick dates",
    "mode": "simple",  # a simple run's pending request expires; an agent's pause never does
    "model": {"provider": "scripted", "rules": [
        {"match": "when", "steps": [{"call": "pick_date"}, {"say": "Booked for {result.date}."}]}]},
    "tools": [{"name": "pick_date", "kind": "client", "display_name": "Delivery date", "parameters": {
        "type": "object", "properties": {"date": {"type": "string", "format": "date", "title": "Delivery date"}}}}],
}


@pytest.fixture(scope="module")
def quick_server():
    database = ServerDatabase("e2e_expiry")
    server = DaphneServer(database, env={"WAYPOINT_SIMPLE_EXPIRY_SECONDS": str(EXPIRY_SECONDS)})
    server.start()
    yield server
    server.stop()
    database.drop()


def test_an_unanswered_request_expires_on_the_open_page_and_continue_asks_again(browser, quick_server, screenshots, accessibility):
    with embedding_backend(quick_server, "e2e-expiry", QUICK) as start:
        started = start("when can you deliver?")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(f"{quick_server.url}/c/{started['conversation_id']}?token={started['token']}")
    expect(page.get_by_label("Delivery date")).to_be_visible(timeout=EXPIRY_SECONDS * 1000)

    # Nobody answers: the server's recovery loop expires the run, and the push tells the open page.
    cards = page.locator("#cards")
    expect(cards.get_by_role("heading", name="The request timed out")).to_be_visible(timeout=(EXPIRY_SECONDS + 10) * 1000)
    expect(page.get_by_label("Delivery date")).to_have_count(0)
    expect(cards.locator(".receipt.expired")).to_contain_text("Expired")
    expect(cards).to_contain_text("Nobody answered the last request in time.")
    expect(page.locator("#status")).to_have_attribute("data-run-status", "expired")
    expect(page.locator("#status")).to_have_text("Request timed out")
    screenshots(page, "card-expired")
    accessibility(page)

    cards.get_by_role("button", name="Continue").click()
    expect(page.get_by_label("Delivery date")).to_be_visible(timeout=10_000)
    expect(cards.get_by_role("heading", name="The request timed out")).to_have_count(0)
    context.close()
