"""A reply from the help content lists its sources under it, on the page, in Chromium."""

from __future__ import annotations

import json

import pytest

from tests.knowledge.documents import HELP_CENTRE
from tests.servers import DaphneServer, ServerDatabase

HELPFUL = {
    "name": "Help centre",
    "knowledge": {"enabled": True},
    "model": {"provider": "scripted", "rules": [], "fallback": [
        {"call": "search_knowledge", "arguments": {"query": "{message}"}},
        {"when": "found", "say": "You can send it back within 30 days of delivery [1]."},
        {"when": "not_found", "say": "I could not find that in our help pages."},
    ]},
}


@pytest.fixture(scope="module")
def server():
    database = ServerDatabase("knowledge")
    sources = {title: f"https://help.example.com/{title.lower()}" for title in HELP_CENTRE}
    database.manage("shell", "-c", (
        "import json\n"
        "from django.utils import timezone\n"
        "from apps.agent.actions import create_assistant\n"
        "from apps.knowledge import actions\n"
        f"for title, text in json.loads({json.dumps(json.dumps(HELP_CENTRE))}).items():\n"
        f"    upload = actions.check_upload(title=title, content=text.encode(), format='markdown', url=json.loads({json.dumps(json.dumps(sources))})[title], filename='')\n"
        "    actions.add_source(upload=upload, now=timezone.now())\n"
        f"create_assistant(config=json.loads({json.dumps(json.dumps(HELPFUL))}))\n"
    ))
    running = DaphneServer(database).start()
    yield running
    running.stop()
    database.drop()


def test_a_cited_reply_lists_its_sources_under_it(browser, server, start_conversation, screenshots, accessibility):
    page = browser.new_page()
    start_conversation(page, server, "how do I return a jacket that doesn't fit?", assistant="Help centre")

    reply = page.locator(".message.assistant").last
    reply.get_by_text("within 30 days of delivery [1]").wait_for()
    sources = reply.get_by_role("region", name="Sources")
    link = sources.get_by_role("link", name="Returns")

    assert link.get_attribute("href") == "https://help.example.com/returns"
    assert "[1]" in sources.inner_text()
    screenshots(page, "knowledge-sources")
    accessibility(page)
    page.close()


def test_a_reply_without_citations_has_no_sources(browser, server, start_conversation):
    page = browser.new_page()
    start_conversation(page, server, "do you sell garden furniture?", assistant="Help centre")

    page.get_by_text("I could not find that in our help pages.").wait_for()

    assert page.get_by_role("region", name="Sources").count() == 0
    page.close()
