from playwright.sync_api import expect


def _send(page, text):
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def _settled(page):
    expect(page.locator("#status")).not_to_have_attribute("data-run-status", "running", timeout=10_000)


def test_the_demo_assistant_tour_from_the_customer_page(browser, waypoint_server, screenshot):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(waypoint_server.url + "/")
    page.get_by_label("Your first message").fill("Where is my order?")
    page.get_by_role("button", name="Start a conversation").click()
    log = page.get_by_role("log")
    expect(log).to_contain_text("Your order A-1 is on its way")

    _send(page, "I want a refund")
    expect(page.get_by_role("button", name="Approve")).to_be_visible(timeout=10_000)
    expect(page.locator("#cards")).to_contain_text("issue_refund")
    screenshot(page, "tour-approval")
    page.get_by_role("button", name="Approve").click()
    expect(log).to_contain_text("Refund issued", timeout=10_000)
    _settled(page)

    _send(page, "When can you deliver?")
    expect(page.get_by_label("Delivery date")).to_be_visible(timeout=10_000)
    page.get_by_label("Delivery date").fill("2036-12-24")
    page.get_by_role("button", name="Submit").click()
    expect(log).to_contain_text("Booked for", timeout=10_000)
    expect(log).to_contain_text("2036-12-24")
    _settled(page)

    _send(page, "I need help")
    expect(page.locator("#cards")).to_contain_text("Which order is this about?", timeout=10_000)
    page.locator("#cards input[name=answer]").fill("A-1")
    page.get_by_role("button", name="Submit").click()
    expect(log).to_contain_text("Thanks, I will look into", timeout=10_000)
    _settled(page)

    _send(page, "bye")
    expect(page.get_by_text("This conversation is complete")).to_be_visible(timeout=10_000)
    expect(log).to_contain_text("Goodbye!")
    expect(page.locator("textarea:enabled, input:enabled[type=text]")).to_have_count(0)
    screenshot(page, "tour-complete")
    context.close()
