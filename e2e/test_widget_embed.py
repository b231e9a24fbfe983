"""The embed snippet on a host page of another origin: the demo shop (`manage.py demo_shop`)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from tests.servers import free_port


def test_the_snippet_opens_the_widget_chats_and_the_conversation_and_its_draft_survive_reloads(browser, demo_shop, screenshots):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    page.evaluate("window.seen = []; Waypoint('on', 'message', (m) => window.seen.push(m.role + ': ' + m.text))")
    screenshots(page, "embed-closed")

    page.get_by_role("button", name="Open chat").click()
    chat = page.frame_locator("iframe[title=Chat]")
    chat.get_by_label("Message").fill("Where is my order?")
    chat.get_by_label("Message").press("Enter")
    expect(chat.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    page.wait_for_function("window.seen.some((line) => line.startsWith('assistant: Your order A-1'))")
    # The host hears of the first message and its reply once each, however quick the turn was
    # (a reply committed before the conversation page loaded comes with the page, not a push).
    seen = page.evaluate("window.seen")
    assert seen[0] == "user: Where is my order?", seen
    assert len([line for line in seen if line.startswith("assistant: Your order A-1")]) == 1, seen
    screenshots(page, "embed-open")
    chat.get_by_label("Message").press_sequentially("half a thought")

    page.reload()
    expect(chat.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    expect(chat.get_by_label("Message")).to_have_value("half a thought")  # the draft survives the reload too
    page.get_by_role("link", name="Cart (1)").click()
    expect(chat.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    chat.get_by_label("Message").fill("I want a refund")
    chat.get_by_label("Message").press("Enter")
    expect(chat.get_by_role("button", name="Approve")).to_be_visible(timeout=10_000)
    screenshots(page, "embed-approval")

    chat.get_by_label("Message").press("Escape")
    expect(page.locator("#waypoint-panel")).to_be_hidden()
    expect(page.get_by_role("button", name="Open chat")).to_be_focused()
    context.close()


def test_the_host_page_drives_the_widget_through_the_command_queue(browser, demo_shop):
    context = browser.new_context()
    page = context.new_page()
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)

    page.get_by_role("button", name="Chat with support").click()
    expect(page.locator("#waypoint-panel")).to_be_visible()
    page.evaluate("Waypoint('toggle')")
    expect(page.locator("#waypoint-panel")).to_be_hidden()
    page.evaluate("Waypoint('open')")

    expect(page.get_by_role("button", name="Close chat")).to_have_attribute("aria-expanded", "true")
    context.close()


@pytest.fixture
def elsewhere():
    """Serve one page from another local origin that is not an allowed origin: `serve(html)` returns its URL."""
    servers = []

    def serve(html: str) -> str:
        class Page(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server API
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(html.encode())

            def log_message(self, format, *args):  # noqa: A002 - the http.server API
                pass

        server = ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_a_site_that_is_not_allowed_cannot_frame_the_widget(browser, demo_shop, widget_server, elsewhere):
    context = browser.new_context()
    page = context.new_page()
    page.goto(demo_shop + "/")
    assistant = page.locator("script[data-assistant]").get_attribute("data-assistant")
    intruder = elsewhere(f'<!doctype html><title>elsewhere</title><iframe title="Chat" src="{widget_server.url}/w/{assistant}"></iframe>')
    console = []
    page.on("console", lambda message: console.append(message.text))

    page.goto(intruder)  # waits for the load event, which waits for the iframe

    expect(page.frame_locator("iframe[title=Chat]").locator("#widget-start")).to_have_count(0)
    assert any("frame-ancestors 'self' http://localhost:" in line for line in console), console
    context.close()


# The contrast of two computed colours ("rgb(r, g, b)"), as WCAG defines it.
CONTRAST = """([a, b]) => {
  const lum = (css) => {
    const [r, g, bl] = css.match(/\\d+/g).slice(0, 3).map(Number).map((v) => {
      const c = v / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [high, low] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (high + 0.05) / (low + 0.05);
}"""


def test_a_dark_host_colour_is_a_readable_shade_in_each_colour_scheme(browser, demo_shop, widget_server, screenshots,
                                                                         accessibility):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto(demo_shop + "/")
    assistant = page.locator("script[data-assistant]").get_attribute("data-assistant")
    page.goto(f"{widget_server.url}/w/{assistant}?" + urlencode({"embed": "1", "host": demo_shop, "color": "#1f3b2d"}))
    header = page.locator(".chat-header")

    def colours() -> tuple[str, str, str]:
        return page.evaluate("""() => [getComputedStyle(document.querySelector('.chat-header')).backgroundColor,
                                        getComputedStyle(document.querySelector('.chat-header')).color,
                                        getComputedStyle(document.body).backgroundColor]""")

    page.emulate_media(color_scheme="light")
    expect(header).to_have_css("background-color", "rgb(31, 59, 45)")  # dark enough on white: the host's own
    page.emulate_media(color_scheme="dark")
    expect(header).not_to_have_css("background-color", "rgb(31, 59, 45)")
    brand, text, background = colours()
    assert page.evaluate(CONTRAST, [brand, background]) >= 3, (brand, background)
    assert page.evaluate(CONTRAST, [brand, text]) >= 4.5, (brand, text)
    screenshots(page, "widget-dark-host-colour")
    accessibility(page)
    context.close()
