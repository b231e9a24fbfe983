"""The staff side of a human handoff in Chromium: the queue, two people pressing Take over at once, replying, handing back."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

PASSWORD = "a long staff password"


@pytest.fixture(scope="module")
def staff(waypoint_server):
    """Two staff logins: Dana and Sam."""
    for username, name in (("dana", "Dana"), ("sam", "Sam")):
        waypoint_server.database.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                                        f"get_user_model().objects.create_user({username!r}, '{username}@example.com', "
                                        f"{PASSWORD!r}, is_staff=True, first_name={name!r})")
    return ("dana", "sam")


def logged_in(browser, server, username):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(server.url + "/staff/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Conversations")).to_be_visible()
    return page


def ask_for_a_person(browser, server, start_conversation, message="Where is my order?"):
    """A customer whose conversation waits for a person; returns their page and the conversation id."""
    customer = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    start_conversation(customer, server, message)
    expect(customer.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    customer.get_by_role("button", name="Talk to a person").click()
    expect(customer.get_by_role("log")).to_contain_text("A person was asked to join", timeout=10_000)
    return customer, customer.url.split("/c/")[1].split("?")[0]


def test_two_staff_press_take_over_at_once_and_exactly_one_holds_it(
    browser, waypoint_server, staff, start_conversation, accessibility, screenshots
):
    customer, cid = ask_for_a_person(browser, waypoint_server, start_conversation)
    dana, sam = (logged_in(browser, waypoint_server, name) for name in staff)

    dana.goto(waypoint_server.url + "/staff/waiting/")
    expect(dana.locator(f"#waiting-{cid}")).to_be_visible()
    expect(dana.locator(f"#waiting-{cid}")).to_contain_text("The customer")
    expect(dana.locator("#waiting-count")).not_to_have_text("")
    assert dana.title().startswith("(")
    accessibility(dana)
    screenshots(dana, "staff-queue")

    for page in (dana, sam):
        page.goto(f"{waypoint_server.url}/staff/conversations/{cid}/")
        expect(page.get_by_role("button", name="Take over", exact=True)).to_be_visible()
    # Both press at once: each page clicks at the same moment of the one clock the browser's pages share
    # (one after the other, a busy machine let the first take-over's push reach the second page before
    # its click); each click only starts its page's POST, so the server's row lock decides between them.
    at = dana.evaluate("() => Date.now()") + 1000
    for page in (dana, sam):
        page.evaluate("""(at) => setTimeout(() => {
            const take = [...document.querySelectorAll('#control form button')].find((b) => b.textContent.trim() === 'Take over');
            if (take) take.click();
        }, at - Date.now())""", at)

    holder = None
    for page, name, other in ((dana, "Dana", "Sam"), (sam, "Sam", "Dana")):
        reply = page.get_by_role("button", name="Send reply")
        notice = page.locator("#control")
        expect(reply.or_(notice.get_by_text(f"{other} already has this conversation"))).to_be_visible(timeout=10_000)
        if reply.is_visible():
            assert holder is None, "both hold the conversation"
            holder = (page, name)
    assert holder is not None, "nobody holds the conversation"
    holding, name = holder
    loser = sam if holding is dana else dana
    expect(loser.locator("#control")).to_contain_text(f"{name} already has this conversation")
    # The loser's own press is answered too (a 409 the page shows), not only the push that followed it.
    expect(loser.locator("#control-notice").get_by_role("alert")).to_have_text(
        f"You did not take over: {name} already has this conversation.")
    expect(loser.get_by_role("button", name="Take over", exact=True)).to_have_count(0)
    accessibility(loser)
    screenshots(loser, "staff-conflict")

    expect(customer.get_by_role("log")).to_contain_text(f"{name} joined", timeout=10_000)
    customer.get_by_label("Message").press_sequentially("It was meant to arrive yesterday.")
    expect(holding.locator("#customer-typing")).to_contain_text("is typing…", timeout=10_000)  # live as they type
    customer.get_by_label("Message").press("Enter")
    expect(holding.locator("#transcript")).to_contain_text("It was meant to arrive yesterday.", timeout=10_000)
    # Gone with the message itself, not seconds after it (the typing line lasts 5 s past the last sign).
    expect(holding.locator("#customer-typing")).to_have_text("", timeout=3_000)

    holding.get_by_label(f"Reply to the customer as {name}").fill("I'm on it: a new parcel goes out today.")
    holding.get_by_role("button", name="Send reply").click()
    expect(customer.locator(".message.staff").last).to_contain_text("a new parcel goes out today", timeout=10_000)
    expect(holding.get_by_label(f"Reply to the customer as {name}")).to_have_value("")
    accessibility(holding)
    screenshots(holding, "staff-holding")

    holding.get_by_label("Note for the assistant (optional: it reads it with the conversation)").fill("Replacement shipped.")
    holding.get_by_role("button", name="Hand back to the assistant").click()
    expect(holding.locator("#control")).to_contain_text("The assistant", timeout=10_000)
    expect(customer.get_by_role("log")).to_contain_text(f"{name} handed you back to the assistant", timeout=10_000)
    expect(holding.locator("#timeline")).to_contain_text("handed back to the assistant, note: Replacement shipped.")
    # Each answer and each push brought the rows after the head its page showed, often the same ones:
    # every entry and message is there once, in order, as a fresh load shows them (the assistant's
    # run after the hand back may still be adding entries: compare once both agree on the head).
    fresh = holding.context.new_page()
    ids = "nodes => nodes.map((n) => n.id)"
    deadline = time.monotonic() + 15
    while True:
        fresh.goto(holding.url)
        want = (fresh.locator("#event-rows > tr").evaluate_all(ids), fresh.locator("#transcript-messages > li").evaluate_all(ids))
        have = (holding.locator("#event-rows > tr").evaluate_all(ids), holding.locator("#transcript-messages > li").evaluate_all(ids))
        if have == want or time.monotonic() > deadline:
            break
        fresh.wait_for_timeout(200)
    assert have == want
    for page in (customer, dana, sam):
        page.context.close()


def test_the_loser_is_told_even_when_the_winners_push_replaced_its_form_before_the_answer(
    browser, waypoint_server, staff, start_conversation
):
    """On a loaded server the push of the winner's take-over can re-render #control before the loser's 409 arrives."""
    customer, cid = ask_for_a_person(browser, waypoint_server, start_conversation)
    dana, sam = (logged_in(browser, waypoint_server, name) for name in staff)
    for page in (dana, sam):
        page.goto(f"{waypoint_server.url}/staff/conversations/{cid}/")
        expect(page.get_by_role("button", name="Take over", exact=True)).to_be_visible()
    held = []
    sam.route(f"**/staff/conversations/{cid}/take-over", lambda route: held.append(route))  # Sam's press waits here
    sam.get_by_role("button", name="Take over", exact=True).click()
    while not held:
        sam.wait_for_timeout(50)
    dana.get_by_role("button", name="Take over", exact=True).click()
    expect(dana.get_by_role("button", name="Send reply")).to_be_visible()
    # The push has replaced Sam's form (the one whose post is still in flight) before the answer comes.
    expect(sam.locator("#control")).to_contain_text("Dana already has this conversation", timeout=10_000)
    expect(sam.get_by_role("button", name="Take over", exact=True)).to_have_count(0)
    held[0].continue_()
    expect(sam.locator("#control-notice").get_by_role("alert")).to_have_text(
        "You did not take over: Dana already has this conversation.")
    for page in (customer, dana, sam):
        page.context.close()


# What the page asked the browser to show: Chromium without a desktop has no notification centre to look in.
RECORD_NOTIFICATIONS = """
window.__notified = [];
window.Notification = class extends EventTarget {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { super(); window.__notified.push({ title, body: options && options.body }); }
};
"""


def test_the_queue_updates_live_the_title_counts_and_a_notification_says_so(browser, waypoint_server, staff, start_conversation):
    dana = logged_in(browser, waypoint_server, staff[0])
    dana.add_init_script(RECORD_NOTIFICATIONS)
    dana.goto(waypoint_server.url + "/staff/waiting/")
    before = int(dana.locator("#waiting-count").get_attribute("data-count"))
    # The title counts what waits for Dana's reply and in quarantine too (none of it changes here).
    others = sum(int(dana.locator(f"#{badge}").get_attribute("data-count")) for badge in ("unanswered-count", "quarantine-count"))
    elsewhere = dana.context.new_page()  # a page with no live fragment of its own: it polls the count alone
    elsewhere.add_init_script(RECORD_NOTIFICATIONS)
    elsewhere.goto(waypoint_server.url + "/staff/assistants/")

    customer, cid = ask_for_a_person(browser, waypoint_server, start_conversation, "Is my order late?")

    expect(dana.locator(f"#waiting-{cid}")).to_be_visible(timeout=10_000)
    expect(dana.locator("#waiting-count")).to_have_attribute("data-count", str(before + 1))
    expect(dana).to_have_title(f"({before + 1 + others}) Waiting for a person · Waypoint staff")
    assert dana.evaluate("() => window.__notified") == [
        {"title": "A customer is waiting for a person", "body": f"{before + 1} waiting in Waypoint"}]
    expect(elsewhere.locator("#waiting-count")).to_have_attribute("data-count", str(before + 1), timeout=15_000)
    expect(elsewhere).to_have_title(f"({before + 1 + others}) Assistants · Waypoint staff")
    assert elsewhere.evaluate("() => window.__notified") == [
        {"title": "A customer is waiting for a person", "body": f"{before + 1} waiting in Waypoint"}]
    customer.context.close()
    dana.context.close()


def test_a_colleague_rescues_a_held_conversation_and_the_customer_sees_the_new_name(
    browser, waypoint_server, staff, start_conversation, accessibility, screenshots
):
    customer, cid = ask_for_a_person(browser, waypoint_server, start_conversation)
    dana, sam = (logged_in(browser, waypoint_server, name) for name in staff)
    inspector = f"{waypoint_server.url}/staff/conversations/{cid}/"
    sam.goto(inspector)
    sam.get_by_role("button", name="Take over", exact=True).click()
    expect(sam.get_by_role("button", name="Send reply")).to_be_visible()
    expect(customer.get_by_role("log")).to_contain_text("Sam joined", timeout=10_000)

    dana.goto(inspector)
    expect(dana.locator("#control")).to_contain_text("Sam already has this conversation.")
    confirm = dana.get_by_role("button", name="Yes, take over from Sam")
    expect(confirm).to_be_hidden()  # behind its confirmation
    dana.get_by_text("Take over from Sam", exact=True).click()
    expect(confirm).to_be_visible()
    accessibility(dana)
    screenshots(dana, "staff-rescue-confirm")
    # A push while the confirmation is open (the customer writes) leaves it open.
    customer.get_by_label("Message").fill("Hello? Anyone there?")
    customer.get_by_label("Message").press("Enter")
    expect(dana.locator("#transcript")).to_contain_text("Hello? Anyone there?", timeout=10_000)
    expect(confirm).to_be_visible()

    confirm.click()

    expect(dana.get_by_role("button", name="Send reply")).to_be_visible(timeout=10_000)
    expect(dana.locator("#timeline")).to_contain_text("Dana (staff:dana) took over from staff:sam")
    expect(sam.locator("#control")).to_contain_text("Dana already has this conversation.", timeout=10_000)
    expect(sam.get_by_role("button", name="Send reply")).to_have_count(0)
    expect(customer.get_by_role("log")).to_contain_text("Dana joined", timeout=10_000)
    expect(customer.get_by_text("You're chatting with Dana")).to_be_visible()
    accessibility(sam)
    screenshots(sam, "staff-rescued-from")

    # Dana hands it on to Sam again, from the list of colleagues.
    dana.get_by_label("Hand to a colleague").select_option(value="staff:sam")
    dana.get_by_role("button", name="Hand over").click()
    expect(sam.get_by_role("button", name="Send reply")).to_be_visible(timeout=10_000)
    expect(customer.get_by_text("You're chatting with Sam")).to_be_visible(timeout=10_000)
    screenshots(sam, "staff-handed-to")

    # Sam finds it in Mine, with the customer and their last message.
    sam.get_by_role("navigation", name="Staff").get_by_role("link", name="Conversations").click()
    sam.get_by_role("navigation", name="Views").get_by_role("link", name="Mine").click()
    row = sam.locator(f"#conversation-{cid}")
    expect(row).to_contain_text("Sam (you)")
    expect(row).to_contain_text("Hello? Anyone there?")
    expect(sam.locator("#view-mine .count")).not_to_have_text("0")
    accessibility(sam)
    screenshots(sam, "staff-mine")
    for page in (customer, dana, sam):
        page.context.close()


def test_a_customer_writing_in_a_conversation_you_hold_raises_your_badge_wherever_you_are(
    browser, waypoint_server, staff, start_conversation, accessibility, screenshots
):
    customer, cid = ask_for_a_person(browser, waypoint_server, start_conversation)
    sam = logged_in(browser, waypoint_server, staff[1])
    sam.goto(f"{waypoint_server.url}/staff/conversations/{cid}/")
    sam.get_by_role("button", name="Take over", exact=True).click()
    sam.get_by_label("Reply to the customer as Sam").fill("Hi, Sam here. What happened?")
    sam.get_by_role("button", name="Send reply").click()
    expect(customer.locator(".message.staff").last).to_contain_text("Sam here", timeout=10_000)
    # An internal note: in Sam's transcript, never on the customer's page.
    sam.get_by_label("Internal note").fill("Reseller account: check the invoice first.")
    sam.get_by_role("button", name="Add note").click()
    expect(sam.locator("#transcript .message.note")).to_contain_text("Reseller account", timeout=10_000)
    expect(sam.get_by_label("Internal note")).to_have_value("")
    accessibility(sam)
    screenshots(sam, "staff-internal-note")
    elsewhere = sam.context.new_page()
    elsewhere.add_init_script(RECORD_NOTIFICATIONS)
    elsewhere.goto(waypoint_server.url + "/staff/assistants/")
    before = int(elsewhere.locator("#unanswered-count").get_attribute("data-count"))

    customer.get_by_label("Message").fill("My parcel is still missing.")
    customer.get_by_label("Message").press("Enter")

    # The page asks for its counts every 10 s: one poll after the message, on a busy machine too.
    expect(elsewhere.locator("#unanswered-count")).to_have_attribute("data-count", str(before + 1), timeout=25_000)
    expect(elsewhere.get_by_role("link", name=f"Mine : {before + 1} waiting for your reply")).to_be_visible()
    assert elsewhere.evaluate("() => window.__notified") == [
        {"title": "A customer wrote to you", "body": f"{before + 1} waiting for your reply in Waypoint"}]
    accessibility(elsewhere)
    screenshots(elsewhere, "staff-unanswered-badge")
    expect(customer.get_by_role("log")).to_contain_text("My parcel is still missing.")
    expect(customer.get_by_role("log")).not_to_contain_text("Reseller account")
    for page in (customer, sam):
        page.context.close()



def test_the_composer_sends_on_enter_and_inserts_a_saved_reply_with_a_slash(
    browser, waypoint_server, staff, start_conversation, accessibility, screenshots
):
    waypoint_server.database.manage("shell", "-c", "from django.utils import timezone; from apps.staff.models import SavedReply; "
                                    "SavedReply.objects.create(shortcut='refund-time', text='Refunds reach your card within 5 days.', "
                                    "created_by='staff:dana', created_at=timezone.now())")
    customer, cid = ask_for_a_person(browser, waypoint_server, start_conversation)
    dana = logged_in(browser, waypoint_server, staff[0])
    dana.goto(f"{waypoint_server.url}/staff/conversations/{cid}/")
    dana.get_by_role("button", name="Take over", exact=True).click()
    box = dana.get_by_label("Reply to the customer as Dana")

    # Shift+Enter is a new line; Enter sends.
    box.press_sequentially("Hello,")
    box.press("Shift+Enter")
    box.press_sequentially("Dana here.")
    expect(box).to_have_value("Hello,\nDana here.")
    box.press("Enter")
    expect(customer.locator(".message.staff").last).to_contain_text("Dana here.", timeout=10_000)
    expect(box).to_have_value("")
    # The newest message is the last of the transcript, just above the composer.
    expect(dana.locator("#transcript-messages > li").last).to_contain_text("Dana here.", timeout=10_000)

    box.press_sequentially("/ref")
    menu = dana.get_by_role("listbox", name="Saved replies")
    expect(menu.get_by_role("option")).to_have_count(1)
    expect(menu.get_by_role("option").first).to_contain_text("/refund-time")
    accessibility(dana)
    screenshots(dana, "staff-saved-reply-menu")
    box.press("Enter")  # picks the reply, does not send
    expect(box).to_have_value("Refunds reach your card within 5 days.")
    expect(menu).to_be_hidden()
    box.press("Enter")
    expect(customer.locator(".message.staff").last).to_contain_text("within 5 days", timeout=10_000)
    for page in (customer, dana):
        page.context.close()
