"""A server process killed mid-turn, as the customer sees it: Continue after the restart."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.servers import DaphneServer, ServerDatabase


@pytest.fixture(scope="module")
def crashing_server():
    """The demo on a server that dies (exit 137) once a side-effecting action has been sent."""
    database = ServerDatabase("e2e_crash")
    server = DaphneServer(database)
    database.manage("load_demo", "--base-url", server.url)
    server.start(env={"WAYPOINT_FAULT_AT": "during_action"})
    yield server
    server.stop()
    database.drop()


def test_a_server_killed_mid_turn_shows_continue_after_the_restart_and_continue_completes_a_new_turn(
    browser, crashing_server, start_conversation, screenshots
):
    context = browser.new_context()
    page = context.new_page()
    start_conversation(page, crashing_server, "I want a refund")
    page.get_by_role("button", name="Approve").click(timeout=10_000)
    assert crashing_server.wait_exit(timeout=30) == 137

    crashing_server.start()

    continue_button = page.get_by_role("button", name="Continue")
    expect(continue_button).to_be_visible(timeout=20_000)
    expect(page.locator("#cards")).to_contain_text("The reply was interrupted")
    screenshots(page, "interrupted")
    continue_button.click()
    # The new turn redoes the request from the stored history, so it asks for approval again.
    page.get_by_role("button", name="Approve").click(timeout=10_000)
    expect(page.get_by_role("log")).to_contain_text("Refund issued", timeout=10_000)
    expect(continue_button).to_have_count(0)
    context.close()
