"""Cards in people's words, a demo that tells the truth, declining cards and date bounds, in Chromium."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

BOUNDED = {
    "name": "Bounded dates",
    "model": {"provider": "scripted", "rules": [
        {"match": "when", "steps": [{"call": "pick_date"}, {"when": "declined", "say": "No date then."},
                                    {"say": "Booked for {result.date}."}]}]},
    "tools": [{"name": "pick_date", "kind": "client", "display_name": "Delivery date", "parameters": {
        "type": "object", "properties": {"date": {"type": "string", "format": "date", "title": "Delivery date",
                                                  "minimum": "2026-12-01", "maximum": "2026-12-31"}}}}],
}


def start_demo(browser, server, message: str):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(server.url + "/")
    page.get_by_label("Your first message").first.fill(message)
    page.get_by_role("button", name="Start a conversation").first.click()
    return context, page


def settled(page):
    expect(page.locator("#status")).not_to_have_attribute("data-run-status", "running", timeout=10_000)


def test_an_approval_reads_in_words_keeps_the_exact_call_under_details_and_deny_is_declined(browser, waypoint_server, screenshots):
    context, page = start_demo(browser, waypoint_server, "I want a refund")
    card = page.locator("#cards .card.approval")

    expect(card.get_by_role("heading")).to_have_text("Shall I refund $20 for order A-1?", timeout=10_000)
    expect(page.locator("#status")).to_have_text("Waiting for your approval…")
    details = card.locator("details.call-details")
    expect(details.locator("pre.arguments")).to_be_hidden()
    details.locator("summary").click()
    expect(details.locator("pre.arguments")).to_be_visible()
    expect(details).to_contain_text("issue_refund")
    expect(details.locator("pre.arguments")).to_contain_text('"amount": 20')
    screenshots(page, "words-approval-details-open")

    page.get_by_role("button", name="Deny").click()

    log = page.get_by_role("log")
    expect(log).to_contain_text("The refund was declined, so nothing was refunded for order A-1.", timeout=10_000)
    expect(log).not_to_contain_text("Refund issued")
    receipt = page.locator("#transcript .receipt.denied")
    expect(receipt.locator(".answered-title")).to_have_text("Refund $20 for order A-1")
    expect(receipt.locator(".answer")).to_have_text("Denied")
    expect(receipt.locator(".chip")).to_have_text("by You")
    expect(receipt).not_to_contain_text("guest:")
    screenshots(page, "words-denied-receipt")
    context.close()


def test_a_question_can_be_skipped_and_the_demo_says_so(browser, waypoint_server, screenshots, accessibility):
    context, page = start_demo(browser, waypoint_server, "I need help")
    card = page.locator("#cards .card.question")
    expect(card).to_contain_text("Which order is this about?", timeout=10_000)
    expect(page.locator("#status")).to_have_text("Waiting for your answer…")
    screenshots(page, "words-question-with-skip")
    accessibility(page)

    # Skip needs no answer: the empty required field does not stop it.
    card.get_by_role("button", name="Skip").click()

    expect(page.get_by_role("log")).to_contain_text("No problem. Tell me more whenever you are ready.", timeout=10_000)
    receipt = page.locator("#transcript .receipt.declined")
    expect(receipt.locator(".answer")).to_have_text("Skipped")
    expect(receipt.locator(".chip")).to_have_text("by You")
    settled(page)
    screenshots(page, "words-declined-receipt")
    context.close()


def test_a_client_form_can_be_cancelled_and_the_demo_books_nothing(browser, waypoint_server, screenshots, accessibility):
    context, page = start_demo(browser, waypoint_server, "When can you deliver?")
    card = page.locator("#cards .card.client-tool")
    expect(card.get_by_label("Delivery date")).to_be_visible(timeout=10_000)
    screenshots(page, "words-client-form-with-cancel")
    accessibility(page)

    card.get_by_role("button", name="Cancel").click()

    expect(page.get_by_role("log")).to_contain_text("No problem: no delivery date is booked.", timeout=10_000)
    expect(page.locator("#transcript .receipt.declined .answer")).to_have_text("Cancelled")
    context.close()


def test_no_demo_reply_shows_raw_json(browser, waypoint_server):
    context, page = start_demo(browser, waypoint_server, "Where is my order?")
    log = page.get_by_role("log")
    expect(log).to_contain_text("Your order A-1 is on its way.", timeout=10_000)
    page.get_by_label("Message").fill("When can you deliver?")
    page.get_by_role("button", name="Send").click()
    page.get_by_label("Delivery date").fill("2036-12-24")
    page.get_by_role("button", name="Submit").click()
    expect(log).to_contain_text("Booked for 2036-12-24.", timeout=10_000)
    settled(page)

    replies = page.locator("#transcript .message.assistant .bubble").all_inner_texts()

    assert replies == ["Your order A-1 is on its way.", "Booked for 2036-12-24."]
    assert not any("{" in reply for reply in replies)
    context.close()


@pytest.fixture(scope="module")
def bounded(waypoint_server):
    key = waypoint_server.database.manage("create_api_key", "e2e-dates").strip().splitlines()[-1]
    with httpx.Client(base_url=waypoint_server.url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
        assistant = http.post("/v1/assistants", json=BOUNDED).json()["id"]
        response = http.post("/v1/agent/conversations", json={"assistant": assistant, "message": "when?"})
    started = response.json()
    return f"{waypoint_server.url}/c/{started['conversation_id']}?token={started['token']}"


def test_a_date_field_honours_its_bounds_in_the_browser_and_on_the_server(browser, bounded):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(bounded)
    field = page.get_by_label("Delivery date")
    expect(field).to_have_attribute("min", "2026-12-01", timeout=10_000)
    expect(field).to_have_attribute("max", "2026-12-31")

    field.fill("2026-11-30")
    page.get_by_role("button", name="Submit").click()
    assert field.evaluate("(el) => el.validity.rangeUnderflow") is True
    expect(page.locator("#status")).to_have_attribute("data-run-status", "waiting")

    # A page that ignores the bounds (an old one, a crafted post) is refused by the server.
    field.evaluate("(el) => { el.removeAttribute('min'); el.removeAttribute('max'); }")
    field.fill("2027-01-02")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#notices")).to_contain_text("Delivery date must be on or before 2026-12-31", timeout=10_000)
    expect(page.locator("#status")).to_have_attribute("data-run-status", "waiting")

    page.get_by_label("Delivery date").fill("2026-12-24")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("log")).to_contain_text("Booked for 2026-12-24.", timeout=10_000)
    context.close()


def test_the_widget_shows_the_same_words_and_declines_the_same_way(browser, waypoint_server, screenshots, accessibility):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    page.goto(waypoint_server.url + "/")
    assistant = page.locator("input[name=assistant]").first.get_attribute("value")
    page.goto(f"{waypoint_server.url}/w/{assistant}")
    page.get_by_label("Message").fill("I want a refund")
    page.get_by_label("Message").press("Enter")

    card = page.locator("#cards .card.approval")
    expect(card.get_by_role("heading")).to_have_text("Shall I refund $20 for order A-1?", timeout=10_000)
    expect(page.locator("#status")).to_have_text("Waiting for your approval…")
    card.get_by_role("button", name="Deny").click()
    expect(page.get_by_role("log")).to_contain_text("The refund was declined", timeout=10_000)
    expect(page.locator("#transcript .receipt.denied .chip")).to_have_text("by You")
    settled(page)

    page.get_by_label("Message").fill("I need help")
    page.get_by_role("button", name="Send").click()
    page.locator("#cards .card.question").get_by_role("button", name="Skip").click(timeout=10_000)
    expect(page.get_by_role("log")).to_contain_text("No problem. Tell me more whenever you are ready.", timeout=10_000)
    expect(page.locator("#transcript .receipt.declined .answer")).to_have_text("Skipped")
    settled(page)
    screenshots(page, "words-widget-declined-receipt")
    accessibility(page)
    context.close()
