"""A walk through the staff panel: log in, find a conversation, inspect and verify it, resolve a quarantined turn."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import expect

PASSWORD = "a long staff password"


@pytest.fixture(scope="module")
def panel(waypoint_server, crash_a_refund):
    """A staff login, and a conversation whose approved refund was sent by a process that then died."""
    waypoint_server.database.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                                    f"get_user_model().objects.create_superuser('ops', 'ops@example.com', {PASSWORD!r})")
    return {"login": ("ops", PASSWORD), "crashed": crash_a_refund(waypoint_server)}


def log_in(page, server, username, password):
    page.goto(server.url + "/staff/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Conversations")).to_be_visible()


def wait_until_quarantined(page, server, cid: str) -> None:
    """Recovery quarantines the orphaned turn within a few seconds of the crash."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page.goto(server.url + "/staff/?quarantined=1")
        if page.locator(f"#conversation-{cid}").count():
            break
        page.wait_for_timeout(500)
    expect(page.locator(f"#conversation-{cid}")).to_contain_text("quarantined")


def test_a_staff_member_inspects_verifies_and_resolves_a_quarantined_turn(browser, waypoint_server, panel, screenshot):
    crashed_refund = panel["crashed"]
    cid = crashed_refund["conversation_id"]
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(waypoint_server.url + "/staff/")
    expect(page.get_by_label("Username")).to_be_visible()
    screenshot(page, "staff-login")
    log_in(page, waypoint_server, *panel["login"])

    wait_until_quarantined(page, waypoint_server, cid)
    page.goto(waypoint_server.url + "/staff/")
    screenshot(page, "staff-conversations")

    page.locator(f"#conversation-{cid} a.mono").click()
    expect(page.get_by_role("heading", name="Conversation")).to_contain_text(cid)
    expect(page.locator("#timeline")).to_contain_text("turn_ambiguous")
    expect(page.locator("#summary")).to_contain_text("entries verify")
    expect(page.locator("#inspector")).to_have_attribute("data-ws-open", "1")
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#check-result")).to_contain_text("✓ Verify: all")
    page.get_by_role("button", name="Replay").click()
    expect(page.locator("#check-result")).to_contain_text("✓ Replay")
    screenshot(page, "staff-inspector")

    queue = context.new_page()
    queue.goto(waypoint_server.url + "/staff/quarantine/")
    card = queue.locator(f"#run-{crashed_refund['run_id']}")
    expect(card).to_contain_text("issue_refund")
    expect(card).to_contain_text(f"{crashed_refund['turn_id']}:")
    screenshot(queue, "staff-quarantine")
    expect(card).to_contain_text("The customer has not continued yet.")
    card.get_by_label("What you confirmed").fill("Refund R-1 exists in the shop for this idempotency key")
    card.get_by_label("The result the other system reports").fill('{"refund_id": "R-1"}')
    card.get_by_role("button", name="Mark as done").click()
    expect(queue.get_by_role("status")).to_contain_text("recorded as staff:ops")
    expect(queue.locator(f"#run-{crashed_refund['run_id']}")).to_have_count(0)

    # The inspector that stayed open updates by itself with the signed resolution.
    expect(page.locator("#timeline")).to_contain_text("quarantine_resolved", timeout=10_000)
    expect(page.locator("#timeline")).to_contain_text("staff:ops")

    # The customer is told, and Continue goes on from the recorded result without sending the refund again.
    customer = context.new_page()
    customer.goto(f"{waypoint_server.url}/c/{cid}?token={crashed_refund['token']}")
    expect(customer.locator("#cards")).to_contain_text("Our team has since confirmed that it went through.")
    expect(customer.locator("#cards")).to_contain_text("Continue picks up from there without doing it again.")
    screenshot(customer, "customer-confirmed-done")
    customer.get_by_role("button", name="Continue").click()
    expect(customer.get_by_role("log")).to_contain_text('"refund_id": "R-1"', timeout=10_000)
    expect(customer.get_by_role("log")).to_contain_text("Refund issued")

    expect(page.locator("#transcript")).to_contain_text("Refund issued", timeout=10_000)
    expect(page.locator("#summary")).to_contain_text("completed")
    page.get_by_role("button", name="Verify").click()
    expect(page.locator("#check-result")).to_contain_text("✓ Verify: all")
    screenshot(page, "staff-resolved")
    refunds = httpx.get(waypoint_server.url + "/demo/hooks/refund").json()["refunds"]
    assert [r["deliveries"] for r in refunds if r["idempotency_key"].startswith(crashed_refund["turn_id"] + ":")] == [1]
    context.close()


def test_assistants_and_api_keys_are_managed_from_the_panel(browser, waypoint_server, panel, screenshot):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    log_in(page, waypoint_server, *panel["login"])

    page.get_by_role("link", name="Assistants").click()
    page.get_by_role("link", name="New assistant").click()
    page.get_by_label("Configuration (JSON)").fill('{"name": "Shop help", "step_budget": 99, "model": {"provider": "scripted"}}')
    page.get_by_role("button", name="Create assistant").click()
    expect(page.get_by_role("alert")).to_contain_text("step_budget: must be a whole number from 1 to 64")
    screenshot(page, "staff-assistant-errors")
    page.get_by_label("Configuration (JSON)").fill('{"name": "Shop help", "step_budget": 4, "model": {"provider": "scripted"}}')
    page.get_by_label("Allowed embed origins").fill("https://shop.example")
    page.get_by_role("button", name="Create assistant").click()
    expect(page.get_by_role("status")).to_contain_text("Assistant “Shop help” created.")
    expect(page.locator("#embed-snippet")).to_contain_text("/static/waypoint/embed.js")
    screenshot(page, "staff-assistant")
    with context.expect_page() as opened:
        page.get_by_role("link", name="Preview the widget").click()
    preview = opened.value
    preview.get_by_role("button", name="Open chat").click()
    expect(preview.frame_locator("iframe").get_by_role("log")).to_contain_text("How can we help")
    screenshot(preview, "staff-preview")
    preview.close()

    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name of a new key").fill("backend")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("#new-key")).to_contain_text("wp_")
    screenshot(page, "staff-api-keys")
    # On a phone each key is a card: Revoke is on the screen, not behind a sideways scroll.
    page.set_viewport_size({"width": 375, "height": 800})
    revoke = page.get_by_role("button", name="Revoke backend").bounding_box()
    assert revoke["x"] >= 0 and revoke["x"] + revoke["width"] <= 375, revoke
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_role("button", name="Revoke backend").click()
    expect(page.get_by_role("status")).to_contain_text("is revoked")

    page.get_by_role("link", name="Personas").click()
    expect(page.get_by_role("table")).to_contain_text("guest:alice")
    screenshot(page, "staff-personas")
    context.close()


def conversation_id(link: str) -> str:
    return link.split("/c/", 1)[1].split("?", 1)[0]


def test_the_list_shows_each_conversations_lifecycle_apart_from_its_latest_run(
    browser, waypoint_server, panel, start_conversation
):
    customer = browser.new_context().new_page()
    answered = conversation_id(start_conversation(customer, waypoint_server, "Where is my order?"))
    expect(customer.get_by_role("log")).to_contain_text("Your order A-1 is on its way", timeout=10_000)
    finished = conversation_id(start_conversation(customer, waypoint_server, "bye"))
    expect(customer.get_by_text("This conversation is complete")).to_be_visible(timeout=10_000)
    page = browser.new_context().new_page()

    log_in(page, waypoint_server, *panel["login"])

    headings = page.locator("table.conversations thead th")
    lifecycle = headings.all_inner_texts().index("Lifecycle")
    last_run = headings.all_inner_texts().index("Last run")
    for cid, expected in ((answered, ("active", "completed")), (finished, ("completed", "completed")),
                          (panel["crashed"]["conversation_id"], ("active", None))):
        cells = page.locator(f"#conversation-{cid} td")
        expect(cells.nth(lifecycle)).to_have_text(expected[0])
        if expected[1]:
            expect(cells.nth(last_run)).to_have_text(expected[1])
    page.context.close()
    customer.context.close()


def test_the_inspector_fits_a_375_px_phone_without_sideways_scrolling(browser, waypoint_server, panel, screenshots):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    log_in(page, waypoint_server, *panel["login"])

    page.goto(f"{waypoint_server.url}/staff/conversations/{panel['crashed']['conversation_id']}/")

    expect(page.locator("#timeline")).to_contain_text("turn_ambiguous", timeout=10_000)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
    screenshots(page, "staff-inspector")
    context.close()


def test_every_staff_page_passes_axe_in_light_and_dark_mode(browser, waypoint_server, panel, crash_a_refund, accessibility):
    crashed = crash_a_refund(waypoint_server)  # so the quarantine queue has a card to check
    context = browser.new_context()
    page = context.new_page()
    page.goto(waypoint_server.url + "/staff/")
    accessibility(page)
    log_in(page, waypoint_server, *panel["login"])
    wait_until_quarantined(page, waypoint_server, crashed["conversation_id"])
    page.goto(waypoint_server.url + "/staff/")
    accessibility(page)

    page.goto(f"{waypoint_server.url}/staff/conversations/{crashed['conversation_id']}/")
    expect(page.locator("#inspector")).to_have_attribute("data-ws-open", "1")
    accessibility(page)
    for section in ("Quarantine", "Assistants", "API keys", "Personas"):
        page.get_by_role("navigation", name="Staff").get_by_role("link", name=section).click()
        expect(page.get_by_role("link", name=section)).to_have_attribute("aria-current", "page")
        accessibility(page)
    context.close()


def test_a_staff_resolution_reaches_the_customer_page_that_stayed_open(browser, waypoint_server, panel, crash_a_refund, screenshots):
    crashed = crash_a_refund(waypoint_server)
    customer = browser.new_context().new_page()
    customer.goto(f"{waypoint_server.url}/c/{crashed['conversation_id']}?token={crashed['token']}")
    cards = customer.locator("#cards")
    expect(cards).to_contain_text("We are checking whether it went through", timeout=30_000)
    expect(customer.locator("#conversation")).to_have_attribute("data-live", "ws", timeout=10_000)
    customer.evaluate("() => { window.keptSinceLoad = true; }")  # gone if the page reloads
    staff = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(staff, waypoint_server, *panel["login"])

    staff.goto(waypoint_server.url + "/staff/quarantine/")
    card = staff.locator(f"#run-{crashed['run_id']}")
    card.get_by_label("What you confirmed").fill("Refund R-2 exists in the shop")
    card.get_by_role("button", name="Mark as done").click()

    expect(cards).to_contain_text("Our team has since confirmed that it went through.", timeout=10_000)
    expect(cards).not_to_contain_text("We are checking whether it went through")
    assert customer.evaluate("() => window.keptSinceLoad === true")
    screenshots(customer, "customer-confirmed-done-live")
    customer.context.close()
    staff.context.close()


def test_the_quarantined_filter_shows_why_each_row_is_there_and_a_settled_one_leaves(
    browser, waypoint_server, panel, crash_a_refund, screenshots, accessibility
):
    denied, settled = crash_a_refund(waypoint_server), crash_a_refund(waypoint_server)
    customer = browser.new_context().new_page()
    for crashed, button in ((denied, "Deny"), (settled, "Approve")):
        customer.goto(f"{waypoint_server.url}/c/{crashed['conversation_id']}?token={crashed['token']}")
        # No Continue before staff settle it (docs/durability.md): the customer asks for the refund again.
        expect(customer.locator(".card.interrupted")).to_be_visible(timeout=30_000)
        customer.get_by_label("Message").fill("I want a refund")
        customer.get_by_label("Message").press("Enter")
        customer.locator(".card.approval").get_by_role("button", name=button).click(timeout=10_000)
        expect(customer.locator("#status")).to_have_attribute("data-run-status", "completed", timeout=10_000)
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page, waypoint_server, *panel["login"])

    page.goto(waypoint_server.url + "/staff/?quarantined=1")

    row = page.locator(f"#conversation-{denied['conversation_id']}")
    expect(row.locator(".badge.completed")).to_have_text("completed")  # its latest turn finished
    expect(row.locator(".badge.quarantined")).to_have_text("quarantined")
    expect(row.get_by_role("link", name="The outcome of “issue_refund” is unknown: it waits for your decision.")
           ).to_have_attribute("href", f"/staff/quarantine/#run-{denied['run_id']}")
    expect(page.locator(f"#conversation-{settled['conversation_id']}")).to_have_count(0)
    screenshots(page, "staff-quarantined-filter")
    accessibility(page)
    page.goto(waypoint_server.url + "/staff/quarantine/")
    expect(page.locator(f"#run-{denied['run_id']}")).to_be_visible()
    expect(page.locator(f"#run-{settled['run_id']}")).to_have_count(0)
    page.context.close()
    customer.context.close()
