"""The SDK demo page (`/static/waypoint/sdk-demo.html`), the embedding developer's reference: a card for every pending kind."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from e2e.embedding import embedding_backend

CONFIG = {
    "name": "SDK demo desk",
    "model": {"provider": "scripted", "rules": [
        {"match": "refund", "steps": [{"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                                      {"when": "approved", "say": "Refund issued for A-1."},
                                      {"when": "denied", "say": "No refund then."}]},
        {"match": "help", "steps": [{"call": "ask_question", "arguments": {"question": "Which order is this about?"}},
                                    {"when": "declined", "say": "Fine, no order."},
                                    {"say": "Thanks, I will look into {result.answer}."}]},
        {"match": "adjust", "steps": [{"call": "adjust_refund", "arguments": {"order_id": "A-2", "amount": 20}},
                                      {"say": "Refund adjusted: {result}"}]},
        {"match": "scan", "steps": [{"call": "scan_barcode", "arguments": {"shelf": "B-4"}},
                                    {"when": "declined", "say": "No scan then."}, {"say": "Scanned."}]},
        {"match": "deliver", "steps": [{"call": "pick_date", "arguments": {"label": "Delivery date"}},
                                       {"when": "declined", "say": "No date then."}, {"say": "Booked for {result.date}."}]},
        {"match": "address", "steps": [{"say": "Our address:\nWaypoint Ltd\n1 Harbour Street"}]},
        {"match": "send it back", "steps": [{"call": "search_knowledge", "arguments": {"query": "{message}"}},
                                            {"when": "found", "say": "Within 30 days of delivery [1]."}]},
    ], "fallback": [{"say": "You said: {message}"}]},
    "handoff": {"enabled": True},
    "knowledge": {"enabled": True},
    "tools": [
        {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
         "summary": "Refund ${amount} for order {order_id}",
         "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}},
        {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
        {"name": "adjust_refund", "kind": "server", "action": "echo", "requires_approval": True,
         "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
         "approval": {"editable": ["amount"]}},
        {"name": "scan_barcode", "kind": "client", "parameters": {"type": "object", "properties": {"shelf": {"type": "string"}}}},
    ],
}


@pytest.fixture(scope="module")
def backend(waypoint_server):
    with embedding_backend(waypoint_server, "e2e-sdk-demo", CONFIG) as start:
        yield start


def open_demo(browser, server, started: dict, token: str | None = None):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(f"{server.url}/static/waypoint/sdk-demo.html?conversation={started['conversation_id']}"
              f"&token={token or started['token']}")
    return page


def test_an_approval_has_a_card_with_approve_and_deny(browser, waypoint_server, backend, screenshots, accessibility):
    page = open_demo(browser, waypoint_server, backend("I want a refund"))

    # Asked in the customer's words, never by the tool's name.
    card = page.get_by_role("form", name="Shall I refund $20 for order A-1?")
    expect(card).to_be_visible(timeout=10_000)
    expect(card).to_contain_text("A-1")
    expect(page.locator("#status")).to_contain_text("Waiting for your answer")
    screenshots(page, "sdk-demo-approval")
    accessibility(page)
    card.get_by_role("button", name="Approve").click()

    expect(page.get_by_role("log")).to_contain_text("Refund issued for A-1.", timeout=10_000)
    expect(card).to_have_count(0)
    # The answered request stays as a receipt.
    expect(page.get_by_role("list", name="Answered requests")).to_have_text("Refund $20 for order A-1 · Approved")
    screenshots(page, "sdk-demo-receipt")
    page.context.close()


def test_an_approval_can_be_approved_with_changes(browser, waypoint_server, backend):
    page = open_demo(browser, waypoint_server, backend("adjust the amount, please"))

    card = page.get_by_role("form", name="Shall I go ahead with “Adjust refund”?")
    expect(card).to_be_visible(timeout=10_000)
    card.get_by_role("button", name="Edit").click()
    card.get_by_label("amount (asked for: 20)").fill("15")
    card.get_by_role("button", name="Approve with changes").click()

    expect(page.get_by_role("log")).to_contain_text("approved with changes: amount 15", timeout=10_000)
    page.context.close()


def test_a_question_has_a_card_to_answer_or_skip(browser, waypoint_server, backend, screenshots, accessibility):
    page = open_demo(browser, waypoint_server, backend("help please"))

    card = page.get_by_role("form", name="Which order is this about?")
    expect(card).to_be_visible(timeout=10_000)
    screenshots(page, "sdk-demo-question")
    accessibility(page)
    card.get_by_label("Your answer").fill("order A-7")
    card.get_by_role("button", name="Submit").click()

    expect(page.get_by_role("log")).to_contain_text("Thanks, I will look into order A-7.", timeout=10_000)
    page.context.close()


def test_a_client_tool_without_a_handler_says_it_waits_for_the_application_and_can_be_cancelled(browser, waypoint_server, backend):
    page = open_demo(browser, waypoint_server, backend("scan the shelf"))

    card = page.get_by_role("form", name="Waiting for the application: Scan barcode")
    expect(card).to_contain_text("B-4", timeout=10_000)
    card.get_by_role("button", name="Cancel").click()

    expect(page.get_by_role("log")).to_contain_text("No scan then.", timeout=10_000)
    page.context.close()


def test_a_message_that_could_not_be_sent_stays_with_a_visible_error(browser, waypoint_server, backend, screenshots, accessibility):
    page = open_demo(browser, waypoint_server, backend("hello"))
    expect(page.get_by_role("log")).to_contain_text("You said: hello", timeout=10_000)
    page.route("**/turns", lambda route: route.abort())

    page.get_by_label("Message").fill("are you there")
    page.get_by_role("button", name="Send").click()

    expect(page.get_by_role("alert")).to_contain_text("We could not reach the server", timeout=10_000)
    expect(page.get_by_label("Message")).to_have_value("are you there")
    screenshots(page, "sdk-demo-send-failed")
    accessibility(page)
    page.unroute("**/turns")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("log")).to_contain_text("You said: are you there", timeout=10_000)
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(page.get_by_label("Message")).to_have_value("")
    page.context.close()


def test_a_bad_token_is_told_in_words(browser, waypoint_server, backend, screenshots, accessibility):
    page = open_demo(browser, waypoint_server, backend("hello"), token="not-a-token")

    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("token is wrong or has expired", timeout=10_000)
    expect(alert).not_to_contain_text("unauthorized")
    expect(page.get_by_label("Message")).to_be_hidden()
    screenshots(page, "sdk-demo-bad-token")
    accessibility(page)
    page.context.close()


def test_the_date_form_can_be_cancelled_and_the_assistant_is_told(browser, waypoint_server, backend, screenshots, accessibility):
    page = open_demo(browser, waypoint_server, backend("when can you deliver?"))

    form = page.locator("#actions form").filter(has=page.get_by_label("Delivery date"))
    expect(form).to_be_visible(timeout=10_000)
    screenshots(page, "sdk-demo-date")
    accessibility(page)
    form.get_by_role("button", name="Cancel").click()

    expect(page.get_by_role("log")).to_contain_text("No date then.", timeout=10_000)
    expect(page.get_by_role("list", name="Answered requests")).to_have_text("Delivery date · Declined")
    page.context.close()


def test_line_breaks_of_a_reply_are_kept(browser, waypoint_server, backend):
    page = open_demo(browser, waypoint_server, backend("what is your address?"))

    reply = page.get_by_role("log").locator("li").last
    expect(reply).to_contain_text("Waypoint Ltd", timeout=10_000)
    assert reply.inner_text().splitlines() == ["Our address:", "Waypoint Ltd", "1 Harbour Street"]
    page.context.close()


def test_talk_to_a_person_asks_for_one_and_their_reply_shows_under_their_name(browser, waypoint_server, backend, screenshots,
                                                                               accessibility):
    started = backend("hello")
    page = open_demo(browser, waypoint_server, started)
    expect(page.get_by_role("log")).to_contain_text("You said: hello", timeout=10_000)

    page.get_by_role("button", name="Talk to a person").click()

    expect(page.locator("#control")).to_have_text("Waiting for a person to join…", timeout=10_000)
    expect(page.get_by_role("button", name="Talk to a person")).to_be_hidden()
    path = f"/v1/agent/conversations/{started['conversation_id']}"
    assert backend.api.post(f"{path}/control", json={"action": "take", "staff": "staff:dana", "name": "Dana"}).status_code == 200
    assert backend.api.post(f"{path}/staff-messages", json={"staff": "staff:dana", "text": "Dana here: how can I help?"}
                            ).status_code == 201
    expect(page.get_by_role("log").locator("li").last).to_have_text("Dana: Dana here: how can I help?", timeout=10_000)
    expect(page.locator("#control")).to_have_text("Dana is answering you.")
    screenshots(page, "sdk-demo-person")
    accessibility(page)
    page.context.close()


def test_without_a_conversation_it_says_how_to_open_one_and_offers_no_composer(browser, waypoint_server):
    page = browser.new_context().new_page()
    page.goto(f"{waypoint_server.url}/static/waypoint/sdk-demo.html")

    expect(page.locator("#status")).to_contain_text("Open this page with ?conversation=")
    expect(page.get_by_label("Message")).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_hidden()
    page.context.close()


def test_a_cited_reply_lists_its_sources(browser, waypoint_server, backend):
    source = backend.api.post("/v1/knowledge/sources", json={
        "title": "Returns", "url": "https://help.example.com/returns",
        "text": "# Returns\n\nSend it back within 30 days of delivery, in its box."})
    assert source.status_code == 201, source.text
    page = open_demo(browser, waypoint_server, backend("how do I send it back?"))

    sources = page.get_by_role("log").get_by_role("list", name="Sources")
    expect(sources).to_have_text("[1] Returns", timeout=10_000)
    assert sources.get_by_role("link", name="Returns").get_attribute("href") == "https://help.example.com/returns"
    page.context.close()
