"""The JavaScript SDK in Chromium against a live server, through a plain page that uses only sdk.js."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from e2e.embedding import embedding_backend


@pytest.fixture(scope="module")
def backend(waypoint_server):
    with embedding_backend(waypoint_server, "e2e") as start:
        yield start


def demo_url(server, started: dict, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in {"conversation": started["conversation_id"], "token": started["token"], **params}.items())
    return f"{server.url}/static/waypoint/sdk-demo.html?{query}"


def test_a_client_tool_answers_automatically_and_a_different_second_answer_is_reported_as_a_conflict(
    browser, waypoint_server, backend, screenshot
):
    started = backend("when can you deliver?")
    person = browser.new_context().new_page()
    person.goto(demo_url(waypoint_server, started))
    person_form = person.locator("form.card")
    expect(person_form).to_be_visible(timeout=10_000)
    expect(person.locator("#status")).to_have_attribute("data-connection", "websocket")

    app = browser.new_context().new_page()
    app.goto(demo_url(waypoint_server, started, auto="2036-12-24"))
    expect(app.get_by_role("log")).to_contain_text('Booked for {"date": "2036-12-24"}.', timeout=10_000)
    person_form.locator("input").fill("2027-01-02")
    person_form.get_by_role("button", name="Submit").click()

    alert = person.get_by_role("alert")
    expect(alert).to_contain_text("Someone else already answered", timeout=10_000)
    expect(alert).to_contain_text('{"date":"2036-12-24"}')
    expect(person.get_by_role("log")).to_contain_text('Booked for {"date": "2036-12-24"}.')
    screenshot(person, "sdk-conflict")
    person.context.close()
    app.context.close()


def test_without_a_websocket_the_sdk_keeps_current_by_polling(browser, waypoint_server, backend):
    started = backend("hello")
    page = browser.new_context().new_page()
    page.goto(demo_url(waypoint_server, started, socket="0"))
    expect(page.get_by_role("log")).to_contain_text("You said: hello", timeout=10_000)

    page.get_by_label("Message").fill("are you there?")
    page.get_by_role("button", name="Send").click()

    expect(page.get_by_role("log")).to_contain_text("You said: are you there?", timeout=10_000)
    expect(page.locator("#status")).to_have_attribute("data-connection", "polling")
    page.context.close()


def test_request_handoff_asks_for_a_person_and_the_state_follows(browser, waypoint_server):
    """`agent.requestHandoff()`: the customer's Talk to a person through the SDK, in Chromium."""
    from tests.conftest import SUPPORT_CONFIG

    with embedding_backend(waypoint_server, "e2e-handoff", {**SUPPORT_CONFIG, "handoff": {"enabled": True}}) as start:
        started = start("refund please")
        page = browser.new_context().new_page()
        page.goto(f"{waypoint_server.url}/static/waypoint/favicon.svg")  # same origin, no page script of ours
        result = page.evaluate(
            """async ([id, token]) => {
                const { Waypoint } = await import("/static/waypoint/sdk.js");
                const agent = await new Waypoint({ token, WebSocket: null }).agent.open(id);
                const control = await agent.requestHandoff({ reason: "a person, please" });
                const again = await agent.requestHandoff();
                await agent.refresh();
                const state = agent.state;
                agent.close();
                return { control, again, mode: state.control.mode, run: state.run_status,
                         withdrawn: state.answered_client_actions.map((a) => a.status) };
            }""",
            [started["conversation_id"], started["token"]],
        )
        page.context.close()

    assert result["control"]["mode"] == "queued" and result["control"]["reason"] == "a person, please"
    assert result["again"] == result["control"]
    assert result["mode"] == "queued" and result["run"] == "handed_off" and result["withdrawn"] == ["withdrawn"]
