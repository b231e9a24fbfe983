"""Connection honesty on the customer page: what it says when the socket drops, a send fails, the server goes quiet or the link is dead."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.sync_api import expect

SOCKET = re.compile(r"/ws/conversations/")
POLL = re.compile(r"/live\?")
SLOW = {
    "name": "Slow support",
    "model": {"provider": "scripted", "rules": [{"match": "slow", "steps": [{"call": "think", "arguments": {"seconds": 6}}, {"say": "Done thinking."}]}],
              "fallback": [{"say": "You said: {message}"}]},
    "tools": [{"name": "think", "kind": "server", "action": "sleep"}],
}


@pytest.fixture(scope="module")
def slow_assistant(widget_server) -> str:
    code = f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({json.dumps(json.dumps(SLOW))})).id)"
    return widget_server.database.manage("shell", "-c", code).strip().splitlines()[-1]


class Line:
    """The page's websocket through a line that can be cut: while cut, every socket is closed at once."""

    def __init__(self, page) -> None:
        self.cut = False
        self.open: list = []
        page.route_web_socket(SOCKET, self._connect)

    def _connect(self, ws) -> None:
        if self.cut:
            ws.close()
            return
        ws.connect_to_server()
        self.open.append(ws)

    def drop(self) -> None:
        self.cut = True
        for ws in self.open:
            ws.close()
        self.open.clear()

    def restore(self) -> None:
        self.cut = False


def send(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def test_a_dropped_socket_says_reconnecting_polls_with_etags_and_says_online_only_once_it_is_back(
    browser, widget_server, start_conversation, screenshots, accessibility
):
    alice, bob = browser.new_context(), browser.new_context()
    page = alice.new_page()
    line = Line(page)
    link = start_conversation(page, widget_server, "Hello")
    conversation = page.locator("#conversation")
    expect(conversation).to_have_attribute("data-connection", "online", timeout=10_000)
    expect(page.locator("#status")).to_have_text("Online")
    polls = []
    page.on("request", lambda request: polls.append(request) if "/live" in request.url else None)

    line.drop()

    expect(page.locator("#connection")).to_have_text("Reconnecting…", timeout=10_000)
    expect(page.locator("#status")).to_be_hidden()
    screenshots(page, "reconnecting")
    accessibility(page)
    other = bob.new_page()
    other.goto(link)
    send(other, "Are you there?")
    expect(page.get_by_role("log")).to_contain_text("You said: Are you there?", timeout=10_000)
    page.wait_for_timeout(2_500)  # one more poll at an unchanged head
    assert any(request.headers.get("if-none-match") for request in polls)
    assert any(request.response() and request.response().status == 304 for request in polls)
    expect(page.locator("#connection")).to_have_text("Reconnecting…")

    line.restore()

    expect(conversation).to_have_attribute("data-connection", "online", timeout=20_000)
    expect(page.locator("#status")).to_have_text("Online")
    expect(page.locator("#connection")).to_be_hidden()
    alice.close()
    bob.close()


def test_a_send_that_fails_keeps_the_text_and_retry_sends_it(browser, widget_server, start_conversation, screenshots, accessibility):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=10_000)
    page.route("**/send", lambda route: route.abort("internetdisconnected"))

    send(page, "Where is my parcel?")

    expect(page.get_by_role("button", name="Retry")).to_be_visible(timeout=10_000)
    expect(page.get_by_label("Message")).to_have_value("Where is my parcel?")
    expect(page.locator("#notices")).to_contain_text("could not reach the server")
    screenshots(page, "send-failed")
    accessibility(page)
    page.unroute("**/send")

    page.get_by_role("button", name="Retry").click()

    expect(page.get_by_role("log")).to_contain_text("You said: Where is my parcel?", timeout=10_000)
    expect(page.get_by_label("Message")).to_have_value("")
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    context.close()


def test_when_the_server_stops_answering_the_typing_indicator_stops_with_a_message(
    browser, widget_server, start_conversation, slow_assistant, screenshots, accessibility
):
    context = browser.new_context()
    page = context.new_page()
    line = Line(page)
    start_conversation(page, widget_server, "slow please", assistant="Slow support")
    expect(page.locator("#typing")).to_be_visible(timeout=10_000)

    line.drop()
    page.route(POLL, lambda route: route.abort("connectionrefused"))

    expect(page.locator("#stalled")).to_be_visible(timeout=15_000)
    expect(page.locator("#stalled")).to_contain_text("cannot reach the server")
    expect(page.locator("#typing")).to_be_hidden()
    screenshots(page, "server-not-answering")
    accessibility(page)
    page.unroute(POLL)
    line.restore()

    expect(page.get_by_role("log")).to_contain_text("Done thinking.", timeout=20_000)
    expect(page.locator("#stalled")).to_be_hidden()
    context.close()


def test_a_link_that_does_not_work_gets_a_page_that_says_so(browser, widget_server, start_conversation, screenshots, accessibility):
    context = browser.new_context()
    page = context.new_page()
    link = start_conversation(page, widget_server, "Hello")

    response = page.goto(link.split("?")[0] + "?token=not-a-token")

    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("This link is invalid or has expired — start a new conversation")
    expect(page.get_by_role("link", name="Start a new conversation")).to_be_visible()
    screenshots(page, "invalid-link")
    accessibility(page)
    context.close()


def test_a_widget_address_whose_assistant_does_not_exist_says_the_chat_is_not_available(browser, widget_server, screenshots,
                                                                                        accessibility):
    context = browser.new_context()
    page = context.new_page()

    response = page.goto(f"{widget_server.url}/w/{uuid.uuid4()}")

    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("This chat is not available")
    expect(page.get_by_role("link", name="Start a new conversation")).to_have_count(0)
    screenshots(page, "chat-unavailable")
    accessibility(page)
    context.close()
