"""The customer's side of a human handoff in Chromium: Talk to a person, waiting, a person's replies, back to the assistant."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from playwright.sync_api import expect

from e2e.slow_network import LateReply
from tests.process.outside import Rows


def api_of(server):
    """The embedding application's backend acting for the staff (`POST …/control`, `…/staff-messages`) on `server`."""
    key = server.database.manage("create_api_key", "handoff-e2e").strip().splitlines()[-1]
    http = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=10)

    def call(cid: str, what: str, body: dict) -> dict:
        response = http.post(f"/v1/agent/conversations/{cid}/{what}", json=body)
        assert response.status_code in (200, 201), response.text
        return response.json()

    return http, call


@pytest.fixture(scope="module")
def staff_api(waypoint_server):
    http, call = api_of(waypoint_server)
    with http:
        yield call


NO_PERSON = {"name": "No person here", "model": {"provider": "scripted", "rules": [], "fallback": [{"say": "You said: {message}"}]}}


@pytest.fixture(scope="module")
def no_person(waypoint_server) -> str:
    """An assistant without `handoff`: its customers are never offered a person."""
    code = ("import json; from apps.agent.actions import create_assistant; "
            f"print(create_assistant(config=json.loads({json.dumps(json.dumps(NO_PERSON))})).id)")
    return waypoint_server.database.manage("shell", "-c", code).strip().splitlines()[-1]


def conversation_id(page) -> str:
    return page.url.split("/c/")[1].split("?")[0]


def test_a_customer_asks_for_a_person_talks_to_dana_and_is_handed_back(
    browser, waypoint_server, start_conversation, staff_api, accessibility, screenshots, staff_at_the_panel
):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    start_conversation(page, waypoint_server, "Where is my order?")
    log = page.get_by_role("log")
    expect(log).to_contain_text("on its way", timeout=10_000)
    cid = conversation_id(page)

    page.get_by_role("button", name="Talk to a person").click()

    expect(log).to_contain_text("A person was asked to join", timeout=10_000)
    expect(page.locator("#team-status")).to_contain_text("A person will be with you shortly.")
    expect(page.get_by_role("button", name="Talk to a person")).to_have_count(0)
    expect(page.locator("#status")).to_have_text("Waiting for a person…")
    accessibility(page)
    screenshots(page, "customer-waiting")

    staff_api(cid, "control", {"action": "take", "staff": "staff:dana", "name": "Dana"})
    staff_api(cid, "staff-messages", {"staff": "staff:dana", "text": "Hi, I'm Dana. I can see your order A-1."})

    expect(log).to_contain_text("Dana joined", timeout=10_000)
    reply = page.locator(".message.staff").last
    expect(reply).to_contain_text("Hi, I'm Dana. I can see your order A-1.")
    expect(reply.locator(".author")).to_have_text("Dana:")
    expect(page.locator("#status")).to_have_text("You're chatting with Dana")

    page.get_by_label("Message").fill("It was meant to arrive yesterday.")
    page.get_by_label("Message").press("Enter")
    expect(log).to_contain_text("It was meant to arrive yesterday.", timeout=10_000)
    # The agent speaks only in a run, and a message starts one as it is recorded or never: this one started none.
    recorded = Rows(waypoint_server.database.url).events(cid)
    [sent] = [e for e in recorded if e["payload"].get("text") == "It was meant to arrive yesterday."]
    assert sent["kind"] == "customer_message"  # stored and shown without a run, where turn_dispatched would start one
    expect(page.locator("#typing")).to_have_count(0)
    expect(page.locator(".message.assistant")).to_have_count(1)  # the agent stays silent while Dana answers
    accessibility(page)
    screenshots(page, "customer-with-person")

    staff_api(cid, "control", {"action": "return", "staff": "staff:dana", "note": "Replacement shipped today."})

    expect(log).to_contain_text("Dana handed you back to the assistant", timeout=10_000)
    expect(page.get_by_role("button", name="Talk to a person")).to_be_visible()
    page.get_by_label("Message").fill("Thanks! And my order?")
    page.get_by_label("Message").press("Enter")
    expect(page.locator(".message.assistant")).to_have_count(2, timeout=10_000)
    accessibility(page)
    screenshots(page, "back-to-agent")
    page.context.close()


def test_a_reply_older_than_a_take_over_does_not_offer_a_person_again(browser, waypoint_server, start_conversation, staff_api):
    page = browser.new_context().new_page()
    start_conversation(page, waypoint_server, "I want a refund")
    reply = LateReply()
    page.route("**/answer", reply.hold)
    page.get_by_role("button", name="Approve").click(timeout=10_000)
    log = page.get_by_role("log")
    expect(log).to_contain_text("Refund issued", timeout=10_000)
    staff_api(conversation_id(page), "control", {"action": "take", "staff": "staff:dana", "name": "Dana"})
    expect(log).to_contain_text("Dana joined", timeout=10_000)
    expect(page.get_by_role("button", name="Talk to a person")).to_have_count(0)

    with page.expect_response("**/answer"):
        reply.send()  # the whole state as it was when the answer committed: the agent's, a person on offer
    page.wait_for_timeout(500)  # for the reply's swap
    expect(page.get_by_role("button", name="Talk to a person")).to_have_count(0)
    expect(page.locator("#status")).to_have_text("You're chatting with Dana")
    expect(log).to_contain_text("Refund issued")
    page.context.close()


def test_the_demo_assistant_hands_over_when_asked_in_words(browser, waypoint_server, start_conversation):
    page = browser.new_context().new_page()
    start_conversation(page, waypoint_server, "Can I talk to a person please?")

    log = page.get_by_role("log")
    expect(log).to_contain_text("A person was asked to join", timeout=10_000)
    expect(page.locator("#status")).to_have_text("Waiting for a person…")
    # What the assistant said as it asked is its reply, above the line.
    reply = page.locator(".message.assistant").last
    expect(reply).to_contain_text("Of course, I'm asking a person to join.")
    assert reply.evaluate("(el) => !!(el.compareDocumentPosition(document.querySelector('.control-line.handoff_requested')) "
                          "& Node.DOCUMENT_POSITION_FOLLOWING)")
    page.context.close()


def test_an_assistant_without_handoff_offers_no_person(browser, waypoint_server, start_conversation, no_person):
    page = browser.new_context().new_page()
    start_conversation(page, waypoint_server, "hello", assistant="No person here")

    expect(page.get_by_role("log")).to_contain_text("You said: hello", timeout=10_000)
    expect(page.get_by_label("Message")).to_be_enabled()
    expect(page.get_by_role("button", name="Talk to a person")).to_have_count(0)
    page.context.close()


def test_the_widget_offers_a_person_too(browser, demo_shop, widget_server, accessibility, screenshots):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(demo_shop + "/")
    expect(page.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    page.get_by_role("button", name="Open chat").click()
    chat = page.frame_locator("iframe[title=Chat]")
    chat.get_by_label("Message").fill("Where is my order?")
    chat.get_by_label("Message").press("Enter")
    expect(chat.get_by_role("log")).to_contain_text("on its way", timeout=10_000)

    chat.get_by_role("button", name="Talk to a person").click()

    expect(chat.get_by_role("log")).to_contain_text("A person was asked to join", timeout=10_000)
    # The greeting the widget opened with stays above the conversation.
    expect(chat.locator("#greeting")).to_contain_text("Hi! How can we help you today?")
    screenshots(page, "widget-greeting-kept")
    accessibility(page)
    frame = next(f for f in page.frames if "/c/" in f.url)
    http, call = api_of(widget_server)
    with http:
        call(conversation_id(frame), "control", {"action": "take", "staff": "staff:dana", "name": "Dana"})
        call(conversation_id(frame), "staff-messages", {"staff": "staff:dana", "text": "Dana here, looking now."})
    # Both arrive in the open widget by its push: the joined line and the reply under Dana's name.
    expect(chat.get_by_role("log")).to_contain_text("Dana joined", timeout=10_000)
    expect(chat.locator(".message.staff").last).to_contain_text("Dana here, looking now.")
    expect(chat.locator("#status")).to_have_text("You're chatting with Dana")
    page.context.close()


def test_after_a_queue_time_out_the_waiting_words_give_way_to_the_unavailable_message(
    browser, waypoint_server, start_conversation, accessibility, screenshots, staff_at_the_panel
):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    start_conversation(page, waypoint_server, "Where is my order?")
    log = page.get_by_role("log")
    expect(log).to_contain_text("on its way", timeout=10_000)
    page.get_by_role("button", name="Talk to a person").click()
    expect(page.locator("#team-status")).to_contain_text("A person will be with you shortly.", timeout=10_000)

    # The queue's clock, a day on: what each process's housekeeping does once the time-out is due.
    waypoint_server.database.manage("shell", "-c", "from datetime import timedelta; from django.utils import timezone; "
                                    "from apps.agent import handoff; handoff.time_out_handoffs(now=timezone.now() + timedelta(days=1))")
    # That process's broadcast reaches no socket of the server's (no shared channel layer here).
    page.reload()

    expect(log).to_contain_text("No one is free right now", timeout=10_000)
    expect(page.get_by_text("A person will be with you shortly.")).to_have_count(0)
    expect(page.locator(".control-line.handoff_requested")).to_have_text("A person was asked to join")
    expect(page.get_by_role("button", name="Talk to a person")).to_be_enabled()
    screenshots(page, "customer-queue-timed-out")
    accessibility(page)
    page.context.close()


def test_offline_the_notice_is_no_assistant_bubble_and_no_person_can_be_asked_for(
    browser, waypoint_server, start_conversation, accessibility, screenshots
):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sockets, cut = [], []

    def connect(ws):
        if cut:
            ws.close()
            return
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket(re.compile(r"/ws/conversations/"), connect)
    start_conversation(page, waypoint_server, "Where is my order?")
    expect(page.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    talk = page.get_by_role("button", name="Talk to a person")
    expect(talk).to_be_enabled()

    cut.append(True)
    for ws in sockets:
        ws.close()
    page.route(re.compile(r"/live\?"), lambda route: route.abort("connectionrefused"))

    notice = page.locator("#stalled")
    expect(notice).to_be_visible(timeout=40_000)
    expect(talk).to_be_disabled()
    bubble = page.locator(".message.assistant .bubble").first
    style = "(el) => getComputedStyle(el).backgroundColor + ' ' + getComputedStyle(el).borderLeftWidth"
    assert notice.evaluate(style) != bubble.evaluate(style)
    expect(notice).not_to_have_class(re.compile(r"\bbubble\b"))
    screenshots(page, "customer-offline")
    accessibility(page)

    page.unroute(re.compile(r"/live\?"))
    cut.clear()
    expect(notice).to_be_hidden(timeout=20_000)
    expect(talk).to_be_enabled()
    page.context.close()
