"""
Presence in Chromium, with three contexts (a customer and two staff members): a customer is promised a
person only while one is at the panel; Away and closing the last page take that promise back, and the
customer then leaves an email address for the reply, or goes back to the assistant.
"""

from __future__ import annotations

from playwright.sync_api import expect

from e2e.conftest import staff_login


def customer_page(browser, server, start_conversation):
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    start_conversation(page, server, "Where is my order?")
    expect(page.get_by_role("log")).to_contain_text("on its way", timeout=10_000)
    return page


def test_a_person_is_promised_only_while_one_is_at_the_panel(
    browser, waypoint_server, start_conversation, accessibility, screenshots
):
    # Nobody is at the panel: the customer is told before asking, and not promised anyone.
    customer = customer_page(browser, waypoint_server, start_conversation)
    handoff = customer.locator("#composer")
    expect(handoff).to_contain_text("The team is away; you can leave your email for a reply.")
    screenshots(customer, "customer-team-away")

    dana = staff_login(browser, waypoint_server, "dana", "Dana")
    sam = staff_login(browser, waypoint_server, "sam", "Sam")
    expect(dana.locator("#presence")).to_contain_text("Online")
    sam.goto(waypoint_server.url + "/staff/profile/")
    expect(sam.locator(".team")).to_contain_text("Dana online")

    # Dana steps away: Sam sees it; Sam is still there, so the customer is promised a person.
    dana.get_by_role("button", name="Set away").click()
    expect(dana.locator("#presence")).to_contain_text("Away")
    expect(dana.get_by_role("button", name="I'm back")).to_be_visible()
    screenshots(dana, "staff-away")
    accessibility(dana)
    sam.reload()
    expect(sam.locator(".team")).to_contain_text("Dana away")
    screenshots(sam, "staff-profile-team")
    accessibility(sam)

    customer.reload()
    expect(handoff).not_to_contain_text("The team is away")
    customer.get_by_role("button", name="Talk to a person").click()
    expect(handoff).to_contain_text("A person will be with you shortly.", timeout=10_000)
    expect(customer.locator("#queue-line")).to_contain_text("in line")
    screenshots(customer, "customer-promised")
    accessibility(customer)
    customer.get_by_role("button", name="Back to the assistant").click()
    expect(customer.get_by_role("log")).to_contain_text("Went back to the assistant", timeout=10_000)
    expect(customer.get_by_role("button", name="Talk to a person")).to_be_visible()

    # Sam closes his last page and Dana is away: nobody is there, and the next customer is told so.
    sam.context.close()
    later = customer_page(browser, waypoint_server, start_conversation)
    later.get_by_role("button", name="Talk to a person").click()
    waiting = later.locator("#composer")
    expect(waiting).to_contain_text("No one from the team is here right now", timeout=10_000)
    expect(waiting).not_to_contain_text("A person will be with you shortly.")
    screenshots(later, "customer-leave-email")
    accessibility(later)
    later.get_by_label("Email for the reply").fill("alice@example.com")
    later.get_by_label("What do you need a person for?").fill("my parcel is lost")
    later.get_by_role("button", name="Send to the team").click()
    expect(waiting).to_contain_text("We'll also email the reply to a•••@example.com.", timeout=10_000)
    screenshots(later, "customer-email-left")

    # Dana comes back and finds why the customer waits in the queue.
    dana.get_by_role("button", name="I'm back").click()
    expect(dana.locator("#presence")).to_contain_text("Online")
    dana.goto(waypoint_server.url + "/staff/waiting/")
    expect(dana.locator("main")).to_contain_text("my parcel is lost")
    for page in (customer, later, dana):
        page.context.close()
