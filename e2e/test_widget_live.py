"""The customer page in several browsers at once: shared cards, conflicts, reopening, completion, polling, escaping."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from playwright.sync_api import expect

from e2e.slow_network import LatePushes, LateReply

SOCKET = re.compile(r"/ws/conversations/")
SHOWCASE = {
    "name": "Showcase",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "slow", "steps": [{"call": "think", "arguments": {"seconds": 4}}, {"say": "Done thinking."}]},
            {"match": "scan", "steps": [{"call": "scan_badge", "arguments": {}}, {"say": "Scanned {result}."}]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [
        {"name": "think", "kind": "server", "action": "sleep"},
        {"name": "scan_badge", "kind": "client", "answered_by": "application", "description": "Scan your badge in the app"},
    ],
}


@pytest.fixture(scope="module")
def showcase(widget_server) -> str:
    """A second assistant: a slow server tool (progress while running) and a tool the application answers."""
    code = f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({json.dumps(json.dumps(SHOWCASE))})).id)"
    return widget_server.database.manage("shell", "-c", code).strip().splitlines()[-1]


def live_by(page, path: str) -> None:
    expect(page.locator("#conversation")).to_have_attribute("data-live", path, timeout=10_000)


def send(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def refunds(server) -> list[dict]:
    return httpx.get(server.url + "/demo/hooks/refund").json()["refunds"]


def test_two_browsers_see_one_approval_and_the_later_approve_shows_the_accepted_answer(browser, widget_server, start_conversation, screenshots):
    alice, bob = browser.new_context(), browser.new_context()
    page_a = alice.new_page()
    link = start_conversation(page_a, widget_server, "I want a refund")
    page_b = bob.new_page()
    stalled = []

    def relay(ws):
        server = ws.connect_to_server()
        server.on_message(lambda message: None if stalled else ws.send(message))

    page_b.route_web_socket(SOCKET, relay)
    page_b.goto(link)
    for page in (page_a, page_b):
        expect(page.locator("#cards .card.approval")).to_contain_text("issue_refund", timeout=10_000)
        expect(page.locator("#cards .arguments")).to_contain_text('"amount": 20')
        live_by(page, "ws")
    before = len(refunds(widget_server))
    screenshots(page_a, "approval")
    stalled.append(True)  # Bob's connection stalls: his card stays as it was when he looked

    page_a.get_by_role("button", name="Approve").click()
    expect(page_a.get_by_role("log")).to_contain_text("Refund issued", timeout=10_000)
    page_b.get_by_role("button", name="Approve").click()

    notice = page_b.locator("#notices")
    expect(notice).to_contain_text("Already approved")  # the same answer: nothing failed, nothing more to do
    expect(notice).to_contain_text("was already approved in another window")
    expect(notice).not_to_contain_text("Someone else")
    expect(page_b.locator("#transcript .receipt")).to_contain_text("Approved")
    screenshots(page_b, "conflict")
    after = refunds(widget_server)
    assert len(after) == before + 1 and after[-1]["deliveries"] == 1
    alice.close()
    bob.close()


def test_a_tab_closed_mid_pause_reopens_in_another_browser_with_its_card(browser, widget_server, start_conversation, screenshots):
    first = browser.new_context()
    page = first.new_page()
    link = start_conversation(page, widget_server, "When can you deliver?")
    expect(page.get_by_label("Delivery date")).to_be_visible(timeout=10_000)
    first.close()

    second = browser.new_context()
    page = second.new_page()
    page.goto(link)
    field = page.get_by_label("Delivery date")
    expect(field).to_be_visible()
    screenshots(page, "client-action")
    field.fill("2036-12-24")
    page.get_by_role("button", name="Submit").click()

    expect(page.get_by_role("log")).to_contain_text("Booked for", timeout=10_000)
    expect(page.get_by_role("log")).to_contain_text("2036-12-24")
    expect(page.get_by_role("button", name="Submit")).to_have_count(0)
    second.close()


def test_a_question_is_answered_from_its_card(browser, widget_server, start_conversation, screenshots):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, widget_server, "I need help")
    answer = page.get_by_label("Your answer")
    expect(page.locator("#cards")).to_contain_text("Which order is this about?", timeout=10_000)
    screenshots(page, "question")

    answer.fill("A-1")
    answer.press("Enter")

    expect(page.get_by_role("log")).to_contain_text("Thanks, I will look into", timeout=10_000)
    expect(page.get_by_role("log")).to_contain_text("A-1")
    context.close()


def test_completion_makes_every_open_browser_read_only(browser, widget_server, start_conversation, screenshots):
    alice, bob = browser.new_context(), browser.new_context()
    page_a = alice.new_page()
    link = start_conversation(page_a, widget_server, "Hello")
    page_b = bob.new_page()
    page_b.goto(link)
    live_by(page_b, "ws")

    send(page_a, "bye")

    for page in (page_a, page_b):
        expect(page.get_by_text("This conversation is complete")).to_be_visible(timeout=10_000)
        expect(page.get_by_role("log")).to_contain_text("Goodbye!")
        expect(page.locator("main textarea:enabled, main input:enabled:not([type=hidden])")).to_have_count(0)
        expect(page.get_by_role("button", name="Send")).to_have_count(0)
    screenshots(page_b, "complete")
    alice.close()
    bob.close()


def test_with_the_websocket_blocked_updates_arrive_by_polling_within_three_seconds(browser, widget_server, start_conversation):
    alice, blocked = browser.new_context(), browser.new_context()
    blocked.route_web_socket(SOCKET, lambda ws: ws.close())
    page_a = alice.new_page()
    link = start_conversation(page_a, widget_server, "Hello")
    page_b = blocked.new_page()
    page_b.goto(link)
    live_by(page_b, "poll")
    expect(page_b.get_by_role("log")).to_contain_text("You said: Hello")

    send(page_a, "Anyone there?")
    expect(page_a.get_by_role("log")).to_contain_text("You said: Anyone there?", timeout=10_000)

    expect(page_b.get_by_role("log")).to_contain_text("You said: Anyone there?", timeout=3_000)
    expect(page_b.locator("#notices")).to_be_empty()
    alice.close()
    blocked.close()


def test_a_page_that_missed_a_push_asks_for_the_whole_state(browser, widget_server, start_conversation):
    alice, bob = browser.new_context(), browser.new_context()
    page_a = alice.new_page()
    link = start_conversation(page_a, widget_server, "Hello")
    page_b = bob.new_page()
    dropping, dropped, asked = [], [], []

    def relay(ws):
        server = ws.connect_to_server()

        def to_page(message):
            if dropping and not dropped and 'data-after="' in message:
                dropped.append(message)  # lost on the way: the page never sees this push
                return
            ws.send(message)

        server.on_message(to_page)
        ws.on_message(lambda message: (asked.append(message), server.send(message)))

    page_b.route_web_socket(SOCKET, relay)
    page_b.goto(link)
    expect(page_b.get_by_role("log")).to_contain_text("You said: Hello", timeout=10_000)
    live_by(page_b, "ws")
    dropping.append(True)

    send(page_a, "First while away")
    expect(page_a.get_by_role("log")).to_contain_text("You said: First while away", timeout=10_000)
    send(page_a, "Second")

    log = page_b.get_by_role("log")
    expect(log).to_contain_text("You said: Second", timeout=10_000)
    expect(page_b.locator("#transcript .message.user")).to_contain_text(["Hello", "First while away", "Second"])
    expect(log).to_contain_text("You said: First while away")
    expect(page_b.locator("#transcript .message:not(.typing-row)")).to_have_count(6)
    assert dropped and "sync" in asked
    alice.close()
    bob.close()


def test_a_page_that_missed_the_pushes_of_a_working_turn_asks_for_them_within_seconds(browser, widget_server, start_conversation):
    # The push that ends a turn can be lost on the way (a network, a Redis that timed out). A page
    # that shows the assistant at work and hears nothing asks for the whole state after a few
    # seconds, not after the half-minute heartbeat of a quiet conversation.
    context = browser.new_context()
    page = context.new_page()
    pushes = LatePushes()
    page.route_web_socket(SOCKET, pushes.route)
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("log")).to_contain_text("You said: Hello", timeout=10_000)
    live_by(page, "ws")
    pushes.losing = True  # every push after a head; a whole state still arrives
    page.wait_for_timeout(6_000)  # a quiet conversation: the page has no reason to ask

    assert "sync" not in pushes.asked
    send(page, "Still there?")
    expect(page.locator("#typing")).to_be_visible()
    expect(page.get_by_role("log")).to_contain_text("You said: Still there?", timeout=12_000)
    assert pushes.lost and "sync" in pushes.asked
    live_by(page, "ws")
    context.close()


def test_the_reply_to_an_answer_overtaken_by_the_pushes_after_it_takes_no_message_away(browser, widget_server, start_conversation):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, widget_server, "I want a refund")
    live_by(page, "ws")
    reply = LateReply()
    page.route("**/answer", reply.hold)
    page.get_by_role("button", name="Approve").click(timeout=10_000)
    log = page.get_by_role("log")
    expect(log).to_contain_text("Refund issued", timeout=10_000)  # by push, before the reply to the click

    with page.expect_response("**/answer"):
        reply.send()  # the whole state as it was when the answer committed, before the refund
    page.wait_for_timeout(500)  # for the reply's swap
    expect(log).to_contain_text("Refund issued")
    expect(page.locator("#status")).to_have_attribute("data-run-status", "completed")
    context.close()


def test_markup_in_model_output_runs_nothing_and_is_shown_as_text(browser, widget_server, start_conversation):
    context = browser.new_context()
    page = context.new_page()
    dialogs, console = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda message: console.append(message.text))
    payload = ('<script>console.log("XSS-MARKER")</script> <img src=x onerror="console.log(\'XSS-MARKER\')"> '
               '[click me](javascript:alert("XSS-MARKER")) <svg onload=alert(1)>')

    start_conversation(page, widget_server, payload)

    log = page.get_by_role("log")
    expect(log).to_contain_text('You said: <script>console.log("XSS-MARKER")</script>', timeout=10_000)
    expect(log).to_contain_text("onerror=")
    expect(log).to_contain_text("javascript:")
    expect(page.locator("#transcript script, #transcript img, #transcript svg, #transcript a[href^='javascript']")).to_have_count(0)
    page.wait_for_timeout(300)  # let any injected handler have its chance to run
    assert dialogs == []
    assert not [line for line in console if "XSS-MARKER" in line or "Content Security Policy" in line]
    context.close()


def test_progress_shows_while_a_run_works_and_the_application_card_waits(browser, widget_server, start_conversation, showcase, screenshots):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, widget_server, "slow please", assistant="Showcase")
    expect(page.locator("#typing")).to_be_visible(timeout=10_000)
    expect(page.locator("#status")).to_contain_text("Think…")  # the tool "think", named in words
    screenshots(page, "working")
    expect(page.get_by_role("log")).to_contain_text("Done thinking.", timeout=10_000)

    send(page, "scan my badge")

    expect(page.locator("#cards")).to_contain_text("Waiting for the application…", timeout=10_000)
    expect(page.get_by_role("button", name="Send")).to_be_enabled()  # a message sent instead cancels the request
    expect(page.locator("#composer-hint")).to_have_text("Waiting for the application… A message you send instead cancels the request.")
    screenshots(page, "waiting-for-application")
    context.close()


LOWEST_CONTRAST = """() => {
  const parse = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const luminance = ([r, g, b]) => [r, g, b].map((v) => v / 255)
    .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4))
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => {
    for (; el; el = el.parentElement) {
      const c = parse(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || c[3] > 0) return c;
    }
    return [255, 255, 255];
  };
  let worst = { ratio: 99, text: "" };
  for (const el of document.querySelectorAll("body *")) {
    const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim());
    const style = getComputedStyle(el);
    if (!own || el.closest(".visually-hidden, [aria-hidden=true], :disabled") || style.visibility === "hidden" || !el.getClientRects().length) continue;
    const [a, b] = [luminance(parse(style.color)), luminance(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < worst.ratio) worst = { ratio, text: el.textContent.trim().slice(0, 40) };
  }
  return worst;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_keeps_a_contrast_of_at_least_4_5_to_1(browser, widget_server, start_conversation, scheme):
    context = browser.new_context(color_scheme=scheme, viewport={"width": 320, "height": 700})
    page = context.new_page()
    start_conversation(page, widget_server, "I want a refund")
    expect(page.get_by_role("button", name="Approve")).to_be_visible(timeout=10_000)

    worst = page.evaluate(LOWEST_CONTRAST)

    assert worst["ratio"] >= 4.5, worst
    context.close()


def test_enter_sends_and_shift_enter_starts_a_new_line(browser, widget_server, start_conversation):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, widget_server, "Hello")
    expect(page.get_by_role("button", name="Send")).to_be_enabled(timeout=10_000)
    box = page.get_by_label("Message")

    box.fill("first line")
    box.press("Shift+Enter")
    box.press_sequentially("second line")
    assert box.input_value() == "first line\nsecond line"
    box.press("Enter")

    mine = page.locator("#transcript .message.user").last
    expect(mine).to_contain_text("second line", timeout=10_000)
    assert "first line\nsecond line" in mine.locator(".bubble").inner_text()  # the break stays in the message
    expect(box).to_have_value("")
    context.close()


def test_a_message_written_while_a_card_waits_declines_the_card_and_is_answered(
    browser, widget_server, start_conversation, screenshots, accessibility
):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, widget_server, "I want a refund")
    card = page.locator("#cards .card.approval")
    expect(card).to_be_visible(timeout=10_000)
    live_by(page, "ws")
    expect(page.locator("#composer-hint")).to_have_text("Answer the request above, or send a message instead: it declines the request.")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    screenshots(page, "write-while-waiting")

    send(page, "Actually, never mind that")

    log = page.get_by_role("log")
    expect(log).to_contain_text("You said: Actually, never mind that", timeout=10_000)
    expect(card).to_have_count(0)
    expect(log.locator(".receipt")).to_contain_text("Declined: a message was sent instead")
    expect(page.locator("#composer-hint")).to_have_text("")
    expect(page.get_by_label("Message")).to_have_value("")
    screenshots(page, "declined-by-a-message")
    accessibility(page)
    context.close()


def test_in_the_widget_a_message_written_while_a_card_waits_declines_the_card(browser, demo_shop, screenshots):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    shop = context.new_page()
    shop.goto(demo_shop + "/")
    expect(shop.locator("html")).to_have_attribute("data-waypoint-ready", "1", timeout=15_000)
    shop.get_by_role("button", name="Open chat").click()
    chat = shop.frame_locator("iframe[title=Chat]")
    send(chat, "I want a refund")
    expect(chat.get_by_role("button", name="Approve")).to_be_visible(timeout=10_000)
    expect(chat.locator("#composer-hint")).to_have_text("Answer the request above, or send a message instead: it declines the request.")

    send(chat, "Actually, never mind that")

    expect(chat.get_by_role("log")).to_contain_text("You said: Actually, never mind that", timeout=10_000)
    expect(chat.get_by_role("button", name="Approve")).to_have_count(0)
    expect(chat.get_by_role("log").locator(".receipt")).to_contain_text("Declined: a message was sent instead")
    # In the log's order: the declined card, then the message that declined it.
    order = chat.get_by_role("log").locator(".receipt, .message.user").evaluate_all("(els) => els.map((e) => e.className)")
    assert [c.split()[0] for c in order] == ["message", "receipt", "message"], order
    screenshots(shop, "widget-declined-by-a-message")
    context.close()
