"""Opening the widget on the demo shop: where the keys go, and where the transcript stands."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect


def open_shop(browser, demo_shop, **context_options):
    context = browser.new_context(**context_options)
    page = context.new_page()
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    return context, page


def test_a_new_visitor_who_opens_the_widget_types_into_the_composer(browser, demo_shop):
    context, page = open_shop(browser, demo_shop, viewport={"width": 1280, "height": 800})

    page.get_by_role("button", name="Open chat").click()
    page.keyboard.type("Hello there")

    chat = page.frame_locator("iframe[title=Chat]")
    expect(chat.get_by_label("Message")).to_be_focused()
    expect(chat.get_by_label("Message")).to_have_value("Hello there")
    context.close()


def kept_conversation(page) -> tuple[str, dict]:
    kept = page.evaluate("JSON.parse(Object.entries(localStorage).find(([k]) => k.startsWith('waypoint:conversation:'))[1])")
    return kept["conversation_id"], {"Authorization": f"Bearer {kept['token']}"}


NEWEST_IN_VIEW = """(body) => {
    const messages = body.querySelectorAll('#transcript > [id^=message-]');
    const last = messages[messages.length - 1].getBoundingClientRect(), area = body.getBoundingClientRect();
    return last.bottom <= area.bottom + 1 && last.top >= area.top - 1;
}"""


def test_reopened_after_replies_came_in_closed_the_widget_shows_the_newest(browser, demo_shop, widget_server, screenshots):
    context, page = open_shop(browser, demo_shop, viewport={"width": 1280, "height": 800})
    page.get_by_role("button", name="Open chat").click()
    chat = page.frame_locator("iframe[title=Chat]")
    chat.get_by_label("Message").fill("Where is my order?")
    chat.get_by_label("Message").press("Enter")
    expect(chat.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    page.get_by_role("button", name="Close chat").click()
    conversation, auth = kept_conversation(page)

    # The application (or another of the customer's windows) goes on while the panel is closed.
    for n in range(6):
        answer = httpx.post(f"{widget_server.url}/v1/agent/conversations/{conversation}/turns",
                            json={"message": f"Where is my order number {n}? " + "Please tell me in detail. " * 4},
                            headers=auth, timeout=10)
        assert answer.status_code == 202, answer.text
        expect(page.get_by_role("button", name=f"Open chat, {n + 1} new")).to_be_visible(timeout=10_000)
    page.get_by_role("button", name="Open chat, 6 new").click()

    last = chat.locator("#transcript > [id^=message-]").last
    expect(last).to_contain_text("Your order", timeout=10_000)
    newest_in_view = chat.locator(".chat-body").evaluate(NEWEST_IN_VIEW)
    button = chat.get_by_role("button", name="New messages ↓")
    assert newest_in_view or button.is_visible(), "the newest reply is out of view and nothing says so"
    screenshots(page, "widget-reopened-after-unread")
    context.close()


def test_on_a_phone_the_newest_message_stays_in_view_when_the_keyboard_shrinks_the_screen(browser, demo_shop, widget_server):
    context, page = open_shop(browser, demo_shop, viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    page.get_by_role("button", name="Open chat").click()
    chat = page.frame_locator("iframe[title=Chat]")
    chat.get_by_label("Message").fill("Where is my order?")
    chat.get_by_label("Message").press("Enter")
    expect(chat.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    conversation, auth = kept_conversation(page)
    for n in range(4):
        httpx.post(f"{widget_server.url}/v1/agent/conversations/{conversation}/turns",
                   json={"message": f"Where is my order number {n}? " + "Please tell me in detail. " * 4}, headers=auth, timeout=10)
        expect(chat.locator("#transcript > [id^=message-]")).to_have_count(4 + 2 * n, timeout=10_000)
    expect(chat.locator("#transcript > [id^=message-]").last).to_contain_text("on its way", timeout=10_000)
    body = chat.locator(".chat-body")
    assert body.evaluate(NEWEST_IN_VIEW)

    page.set_viewport_size({"width": 375, "height": 420})  # the soft keyboard comes up

    page.wait_for_timeout(300)
    assert body.evaluate(NEWEST_IN_VIEW), "the keyboard pushed the newest message out of view"
    context.close()
