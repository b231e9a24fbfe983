"""A message the server never got: shown as a bubble marked Not sent, with Retry; the server's absence forgotten once it is back."""

from __future__ import annotations

from playwright.sync_api import expect


def send(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def test_an_unsent_message_is_a_failed_bubble_and_the_stale_error_clears_when_the_server_is_back(
    browser, widget_server, start_conversation, screenshots, accessibility
):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    link = start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=10_000)
    page.route("**/send", lambda route: route.abort("internetdisconnected"))

    send(page, "Where is my parcel?")

    unsent = page.locator("#notices .message.user.unsent")
    expect(unsent.locator(".bubble")).to_have_text("Where is my parcel?", timeout=10_000)
    expect(unsent).to_contain_text("Not sent")
    expect(unsent.get_by_role("button", name="Retry")).to_be_visible()
    expect(page.locator("#notices")).to_contain_text("could not reach the server")
    screenshots(page, "send-failed-bubble")
    accessibility(page)

    # The server answers again: a push arrives (another window of the same conversation writes).
    other = browser.new_context().new_page()
    other.goto(link)
    send(other, "Anyone there?")
    expect(page.get_by_role("log")).to_contain_text("You said: Anyone there?", timeout=10_000)
    expect(page.locator("#notices")).not_to_contain_text("could not reach the server")
    expect(unsent).to_be_visible()

    page.unroute("**/send")
    unsent.get_by_role("button", name="Retry").click()
    expect(page.get_by_role("log")).to_contain_text("You said: Where is my parcel?", timeout=10_000)
    expect(unsent).to_have_count(0)
    other.context.close()
    context.close()
