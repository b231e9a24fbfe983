"""The staff panel's Webhooks page in Chromium: an endpoint's deliveries with their outcome, Resend, disable and enable."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from standardwebhooks.webhooks import Webhook

from tests.fakes.receiver import Receiver
from tests.process import probe
from tests.process.outside import Rows, wait_for

PASSWORD = "a long staff password"
CHATTY = {"name": "Hooks", "model": {"provider": "scripted", "rules": [], "fallback": [{"say": "You said: {message}"}]}, "tools": []}


@pytest.fixture
def receiver():
    with Receiver(status=500) as r:
        yield r


def test_staff_see_deliveries_resend_one_and_disable_an_endpoint(browser, waypoint_server, receiver, screenshots, accessibility):
    database = waypoint_server.database
    database.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                    f"get_user_model().objects.create_superuser('hooks', 'hooks@example.com', {PASSWORD!r})")
    probe.run(database, "webhook_endpoint", url=receiver.url, events=["turn.completed"])
    probe.run(database, "lab", config=CHATTY, conversations=1, message="hello")
    rows = Rows(database.url)
    wait_for(lambda: rows._all("SELECT attempts FROM webhook_deliveries")[0]["attempts"] == 1, timeout=20, what="the first attempt")

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(waypoint_server.url + "/staff/webhooks/")
    page.get_by_label("Username").fill("hooks")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    row = page.locator("tbody tr").first
    expect(row).to_contain_text("turn.completed")
    expect(row).to_contain_text("retrying")  # failed once, to be tried again: not a fresh delivery
    expect(row).to_contain_text("500")
    expect(row).to_contain_text('{"refund_id"')  # the answer's first bytes
    accessibility(page)
    screenshots(page, "staff-webhooks-retrying")

    receiver.status = 200
    row.get_by_role("button", name="Resend").click()
    expect(page.locator(".flash")).to_contain_text("sent again")
    wait_for(lambda: rows._all("SELECT status FROM webhook_deliveries")[0]["status"] == "delivered", timeout=20, what="the resend")
    page.reload()
    row = page.locator("tbody tr").first
    expect(row).to_contain_text("delivered")
    expect(row).to_contain_text("200")
    # Each attempt is kept: the failed one and the resend that landed, in order.
    attempts = row.get_by_role("list", name="Attempts of turn.completed").get_by_role("listitem")
    expect(attempts.first).to_contain_text("· 500")
    expect(attempts.last).to_contain_text("· 200")
    screenshots(page, "staff-webhooks-attempts")
    ids = {d["headers"]["webhook-id"] for d in receiver.deliveries}
    assert len(ids) == 1 and len(receiver.deliveries) >= 2

    page.get_by_role("button", name=f"Disable {receiver.url}").click()
    expect(page.locator(".webhook-endpoint")).to_contain_text("disabled by staff")
    accessibility(page)
    screenshots(page, "staff-webhooks-disabled")
    page.get_by_role("button", name=f"Enable {receiver.url}").click()
    expect(page.locator(".webhook-endpoint .badge").first).to_have_text("enabled")
    page.close()


def test_staff_add_an_endpoint_see_its_secret_once_and_send_it_a_test(browser, waypoint_server, screenshots, accessibility):
    database = waypoint_server.database
    database.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                    f"get_user_model().objects.create_superuser('hooks2', 'hooks2@example.com', {PASSWORD!r})")
    with Receiver() as receiver:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(waypoint_server.url + "/staff/webhooks/")
        page.get_by_label("Username").fill("hooks2")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.get_by_text("Add an endpoint").click()
        page.get_by_label("URL").fill(receiver.url + "/mirror")
        page.get_by_label("message.created").check()
        accessibility(page)
        screenshots(page, "staff-webhooks-add")
        page.get_by_role("button", name="Add endpoint").click()

        secret = page.locator("#new-secret").inner_text()
        assert secret.startswith("whsec_")
        expect(page.get_by_role("status")).to_contain_text("Copy it now: it is not shown again.")
        screenshots(page, "staff-webhooks-secret")
        page.get_by_role("button", name=f"Send test to {receiver.url}/mirror").click()
        expect(page.locator(".flash")).to_contain_text("webhook.test")
        wait_for(lambda: any(d["path"].endswith("/mirror") for d in receiver.deliveries), timeout=20, what="the test event")
        sent = next(d for d in receiver.deliveries if d["path"].endswith("/mirror"))
        event = Webhook(secret).verify(sent["body"], {k.lower(): v for k, v in sent["headers"].items()})
        assert event["type"] == "webhook.test"
        # The page shows the delivery by itself once it is sent (it polls), and the secret never again.
        expect(page.locator(f"section:has(h2:text-is('{receiver.url}/mirror')) tbody tr").first).to_contain_text("delivered",
                                                                                                             timeout=15_000)
        page.reload()
        expect(page.locator("#new-secret")).to_have_count(0)
        assert secret not in page.content()
        page.close()
