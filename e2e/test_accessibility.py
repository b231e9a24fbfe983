"""axe-core on every card state of the customer page and on the widget embedded in the demo shop, light and dark,
at the default window and at a 375 px phone.

Each state is also saved at 375 and 1280 px (`screenshots`), for people to look at.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

STATES = {
    "approval": ("I want a refund", lambda page: page.get_by_role("button", name="Approve")),
    "question": ("I need help", lambda page: page.get_by_label("Your answer")),
    "client-form": ("When can you deliver?", lambda page: page.get_by_label("Delivery date")),
    "completed": ("bye", lambda page: page.get_by_text("This conversation is complete")),
}


# The default window, and a 375 px phone (where the widget fills the screen and rows wrap).
SIZES = {"default": None, "phone": {"width": 375, "height": 812}}


@pytest.fixture(params=SIZES)
def size(request):
    return request.param


def new_page(browser, size):
    return browser.new_page(viewport=SIZES[size]) if SIZES[size] else browser.new_page()


def save(screenshots, page, size, name):
    """The screenshots are taken at both widths anyway: once per state is enough."""
    if size == "default":
        screenshots(page, name)


def test_the_home_page_passes_axe(browser, widget_server, accessibility, size):
    page = new_page(browser, size)

    page.goto(widget_server.url + "/")

    expect(page.get_by_role("button", name="Start a conversation").first).to_be_visible()
    accessibility(page)
    page.context.close()


@pytest.mark.parametrize("state", STATES)
def test_each_card_state_of_the_customer_page_passes_axe(browser, widget_server, start_conversation, accessibility,
                                                         screenshots, state, size):
    message, shown = STATES[state]
    page = new_page(browser, size)

    start_conversation(page, widget_server, message)

    expect(shown(page)).to_be_visible(timeout=10_000)
    save(screenshots, page, size, f"card-{state}")
    accessibility(page)
    page.context.close()


def test_receipts_in_the_transcript_pass_axe(browser, widget_server, start_conversation, accessibility, screenshots, size):
    page = new_page(browser, size)
    start_conversation(page, widget_server, "I want a refund")
    page.get_by_role("button", name="Deny").click(timeout=10_000)
    expect(page.get_by_role("log")).to_contain_text("The refund was declined", timeout=10_000)
    page.get_by_label("Message").fill("I need help")
    page.get_by_role("button", name="Send").click(timeout=10_000)
    page.get_by_role("button", name="Skip").click(timeout=10_000)

    expect(page.get_by_role("log").locator(".receipt")).to_have_count(2, timeout=10_000)
    page.get_by_role("log").locator(".receipt.denied summary").click()
    save(screenshots, page, size, "card-receipts")
    accessibility(page)
    page.context.close()


def test_an_interrupted_turn_whose_outcome_is_unknown_passes_axe(browser, widget_server, crash_a_refund, accessibility,
                                                                 screenshots, size):
    crashed = crash_a_refund(widget_server)
    page = new_page(browser, size)

    page.goto(f"{widget_server.url}/c/{crashed['conversation_id']}?token={crashed['token']}")

    # Staff settle an unknown outcome first: the card explains and offers no Continue (docs/durability.md).
    expect(page.locator(".card.interrupted")).to_contain_text("We are checking whether it went through", timeout=30_000)
    save(screenshots, page, size, "card-interrupted")
    accessibility(page)
    page.context.close()


def test_the_widget_on_the_demo_shop_passes_axe_closed_open_and_with_a_card(browser, demo_shop, accessibility, screenshots, size):
    page = new_page(browser, size)
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    accessibility(page)

    page.get_by_role("button", name="Open chat").click()
    chat = page.frame_locator("iframe[title=Chat]")
    expect(chat.get_by_label("Message")).to_be_visible(timeout=10_000)
    save(screenshots, page, size, "widget-start")
    accessibility(page)
    chat.get_by_label("Message").fill("I want a refund")
    chat.get_by_label("Message").press("Enter")

    expect(chat.get_by_role("button", name="Approve")).to_be_visible(timeout=10_000)
    save(screenshots, page, size, "widget-approval")
    accessibility(page)
    page.context.close()
