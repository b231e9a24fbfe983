"""The customer page's memory section in Chromium: open it, clear one fact, and the next reply no longer knows it."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

NOTEBOOK = {
    "name": "Notebook",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "email", "steps": [{"call": "remember", "arguments": {"fact": "Prefers email"}}, {"say": "Noted: email."}]},
            {"match": "invoice", "steps": [{"call": "remember", "arguments": {"fact": "Invoices go to ops@acme.test"}},
                                           {"say": "Noted: invoices."}]},
            {"match": "know", "steps": [{"say": "I remember: {memory}"}]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [],
}


@pytest.fixture(scope="module")
def notebook(widget_server) -> str:
    code = f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({json.dumps(json.dumps(NOTEBOOK))})).id)"
    return widget_server.database.manage("shell", "-c", code).strip().splitlines()[-1]


def send(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_label("Message").press("Enter")


def test_a_fact_cleared_from_the_page_is_gone_from_the_next_reply(browser, widget_server, notebook, start_conversation, screenshots):
    page = browser.new_context().new_page()
    start_conversation(page, widget_server, "I prefer email", assistant="Notebook")
    expect(page.get_by_text("Noted: email.")).to_be_visible()
    send(page, "send the invoice to ops")
    expect(page.get_by_text("Noted: invoices.")).to_be_visible()
    memory = page.get_by_role("region", name="What the assistant remembers")
    expect(memory.get_by_text("2", exact=True)).to_be_visible()

    memory.get_by_text("What the assistant remembers").click()
    expect(memory.get_by_text("Invoices go to ops@acme.test")).to_be_visible()
    screenshots(page, "widget-memory")
    memory.locator("li", has_text="Prefers email").get_by_role("button", name="Clear").click()

    expect(memory.get_by_text("Prefers email")).to_have_count(0)
    expect(memory.get_by_text("Invoices go to ops@acme.test")).to_be_visible()  # the list stays open
    send(page, "what do you know?")
    expect(page.get_by_text("I remember: Invoices go to ops@acme.test")).to_be_visible()
