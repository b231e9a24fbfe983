"""Layout and transcript basics: one scroller, new-message button, drafts, times, focus, the host page behind a phone's widget."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect


def send(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def say_many(page, count: int) -> None:
    for n in range(count):
        send(page, f"message number {n}")
        expect(page.get_by_role("log")).to_contain_text(f"You said: message number {n}", timeout=10_000)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    yield context.new_page()
    context.close()


def test_the_transcript_is_the_only_scroller_and_the_page_never_scrolls_into_blank_space(page, widget_server, start_conversation):
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("log")).to_contain_text("You said: Hello", timeout=10_000)

    say_many(page, 8)

    sizes = page.evaluate("""() => {
      const body = document.getElementById('chat-body');
      const below = [...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().bottom > innerHeight + scrollY)
        .filter((el) => !body.contains(el)).map((el) => `${el.tagName}#${el.id}.${el.className}`).slice(0, 8);
      return {page: document.documentElement.scrollHeight, window: innerHeight, inner: body.scrollHeight, box: body.clientHeight, below};
    }""")
    assert sizes["page"] <= sizes["window"], sizes
    assert sizes["inner"] > sizes["box"], sizes


def test_a_new_messages_button_appears_when_scrolled_up_and_takes_the_reader_down(browser, page, widget_server, start_conversation, screenshots):
    link = start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("log")).to_contain_text("You said: Hello", timeout=10_000)
    say_many(page, 8)
    page.locator("#chat-body").evaluate("(body) => { body.scrollTop = 0; }")
    other = browser.new_context().new_page()
    other.goto(link)

    send(other, "Anything new?")

    button = page.get_by_role("button", name="New messages ↓")
    expect(button).to_be_visible(timeout=10_000)
    assert page.locator("#chat-body").evaluate("(body) => body.scrollTop") == 0
    screenshots(page, "new-messages")
    button.click()
    expect(button).to_be_hidden()
    assert page.locator("#chat-body").evaluate("(body) => body.scrollHeight - body.scrollTop - body.clientHeight") < 80
    other.context.close()


def test_a_draft_survives_a_reload(page, widget_server, start_conversation):
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=10_000)
    page.get_by_label("Message").press_sequentially("half a thought")

    page.reload()

    expect(page.get_by_label("Message")).to_have_value("half a thought")


def test_messages_carry_relative_times_with_the_exact_time_on_hover_and_a_day_separator(page, widget_server, start_conversation):
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("log")).to_contain_text("You said: Hello", timeout=10_000)

    times = page.locator("#transcript .message time.when")

    expect(times).to_have_count(2)
    expect(times.first).to_contain_text("just now")
    assert times.first.get_attribute("datetime").startswith("20")
    assert times.first.get_attribute("title")
    expect(page.locator("#transcript > .day")).to_have_count(1)
    expect(page.locator("#transcript > .day")).to_have_text("Today")


def test_a_new_card_takes_the_focus_and_is_announced(page, widget_server, start_conversation):
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=10_000)

    send(page, "I want a refund")

    heading = page.locator("#cards form.card.approval h2")
    expect(heading).to_be_focused(timeout=10_000)
    expect(heading).to_have_text("Shall I refund $20 for order A-1?")
    expect(page.locator("#announcer")).to_contain_text("New request: Shall I refund $20 for order A-1?")


def test_on_a_phone_the_host_page_does_not_scroll_behind_the_full_screen_widget(browser, demo_shop):
    context = browser.new_context(viewport={"width": 375, "height": 700})
    page = context.new_page()
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    assert page.evaluate("document.documentElement.scrollHeight > innerHeight")

    page.get_by_role("button", name="Open chat").click()
    page.mouse.move(180, 350)
    page.mouse.wheel(0, 1500)
    page.wait_for_timeout(300)

    assert page.evaluate("scrollY") == 0
    assert page.evaluate("getComputedStyle(document.documentElement).overflow") == "hidden"
    page.frame_locator("iframe[title=Chat]").get_by_label("Message").press("Escape")
    assert page.evaluate("getComputedStyle(document.documentElement).overflow") != "hidden"
    context.close()


def test_an_earlier_turns_approval_stays_in_the_transcript_as_a_receipt(page, widget_server, start_conversation, screenshots):
    start_conversation(page, widget_server, "I want a refund")
    page.locator("#cards .card.approval").get_by_role("button", name="Approve").click(timeout=10_000)
    log = page.get_by_role("log")
    expect(log).to_contain_text("Refund issued", timeout=10_000)
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=10_000)

    send(page, "Thanks")
    expect(log).to_contain_text("You said: Thanks", timeout=10_000)

    for shown in ("live", "reloaded"):
        receipt = log.locator(".receipt.approved")
        expect(receipt, shown).to_have_count(1)
        expect(receipt.locator(".answered-title")).to_have_text("Refund $20 for order A-1")
        expect(receipt.locator(".answer")).to_have_text("Approved")
        expect(receipt.locator(".chip")).to_have_text("by You")
        order = log.evaluate("(log) => [...log.children].filter((el) => el.id).map((el) => el.className.split(' ')[0])")
        assert [kind for kind in order if kind != "day"] == ["message", "receipt", "message", "message", "message"], (shown, order)
        if shown == "live":
            screenshots(page, "receipt-in-history")
            page.reload()
