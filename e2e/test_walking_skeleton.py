from playwright.sync_api import expect


def test_a_message_from_one_browser_appears_in_both(browser, waypoint_server, screenshot):
    alice = browser.new_context()
    bob = browser.new_context()
    page_a = alice.new_page()
    page_a.goto(waypoint_server.url + "/")
    page_a.get_by_label("Your first message").fill("Hello from Alice")
    page_a.get_by_role("button", name="Start a conversation").click()
    page_a.wait_for_url("**/c/*?token=*")
    page_b = bob.new_page()
    page_b.goto(page_a.url)
    expect(page_b.get_by_role("log")).to_contain_text("You said: Hello from Alice")
    expect(page_a.locator("#status")).to_have_attribute("data-run-status", "completed")
    # A locator wait, not wait_for_function: the page's CSP forbids evaluating strings.
    expect(page_b.locator("#conversation")).to_have_attribute("data-ws-open", "1")

    page_b.get_by_label("Message").fill("And hello from Bob")
    page_b.get_by_role("button", name="Send").click()

    expect(page_a.get_by_role("log")).to_contain_text("You said: And hello from Bob", timeout=10_000)
    expect(page_b.get_by_role("log")).to_contain_text("You said: And hello from Bob")
    screenshot(page_a, "skeleton-alice")
    alice.close()
    bob.close()
