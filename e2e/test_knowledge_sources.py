"""A reply from the help content lists its sources under it, on the page, in Chromium."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from e2e.conftest import staff_login
from tests.knowledge.documents import HELP_CENTRE
from tests.servers import DaphneServer, ServerDatabase

HELPFUL = {
    "name": "Help centre",
    "knowledge": {"enabled": True},
    "model": {"provider": "scripted", "rules": [], "fallback": [
        {"call": "search_knowledge", "arguments": {"query": "{message}"}},
        # Streamed, slowly: the reply reaches the page by a push after it loaded, as a real model's does.
        {"when": "found", "say": "You can send it back within 30 days of delivery [1].", "stream": True},
        {"when": "not_found", "say": "I could not find that in our help pages."},
    ]},
}
# The same, offering a person when the help content has no answer.
DESK = {**HELPFUL, "name": "Help desk", "knowledge": {"enabled": True, "no_answer": "offer_handoff"}, "handoff": {"enabled": True}}


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
        f"create_assistant(config=json.loads({json.dumps(json.dumps(DESK))}))\n"
    ))
    running = DaphneServer(database, env={"WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS": "0.2"}).start()
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
    # The passage on request, from the keyboard.
    sources.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(sources.locator(".passage-quote")).to_contain_text("30 days", timeout=10_000)
    screenshots(page, "knowledge-passage")
    accessibility(page)
    page.close()


def test_a_reply_without_citations_has_no_sources(browser, server, start_conversation):
    page = browser.new_page()
    start_conversation(page, server, "do you sell garden furniture?", assistant="Help centre")

    page.get_by_text("I could not find that in our help pages.").wait_for()

    assert page.get_by_role("region", name="Sources").count() == 0
    assert page.locator(".message.assistant").last.get_by_role("button", name="Talk to a person").count() == 0
    page.close()


def test_a_reply_that_found_nothing_offers_a_person_with_it(browser, server, start_conversation, screenshots, accessibility):
    page = browser.new_page()
    start_conversation(page, server, "do you sell garden furniture?", assistant="Help desk")
    reply = page.locator(".message.assistant").last
    reply.get_by_text("I could not find that in our help pages.").wait_for()

    offer = reply.get_by_role("button", name="Talk to a person")
    expect(offer).to_be_visible()
    expect(page.get_by_role("button", name="Talk to a person")).to_have_count(1)  # the composer's steps aside
    screenshots(page, "knowledge-no-answer")
    accessibility(page)
    offer.click()

    expect(page.get_by_role("button", name="Back to the assistant")).to_be_visible(timeout=10_000)
    expect(page.get_by_role("button", name="Talk to a person")).to_have_count(0)
    page.close()


def test_the_knowledge_page_tries_a_question_and_lists_the_unanswered_ones(browser, server, start_conversation, screenshots,
                                                                            accessibility):
    customer = browser.new_page()
    start_conversation(customer, server, "Is there a loyalty programme for students?", assistant="Help desk")
    customer.get_by_text("I could not find that in our help pages.").wait_for()
    customer.close()
    page = staff_login(browser, server, "kim", "Kim")

    page.get_by_role("link", name="Knowledge").click()
    page.get_by_label("A question, as a customer would write it").fill("how do I send back a jacket that doesn't fit?")
    page.get_by_label("Search as").select_option(label="Help centre")
    page.get_by_role("button", name="Search").click()

    found = page.get_by_role("status").filter(has_text="best first")
    expect(found).to_contain_text("as Help centre")
    expect(found.locator("li").first).to_contain_text("Returns")
    expect(found.locator("li").first).to_contain_text("score")
    gaps = page.get_by_role("table", name="Unanswered questions")
    expect(gaps.get_by_role("link", name="Is there a loyalty programme for students?")).to_be_visible()
    expect(page.get_by_role("table", name="Knowledge sources")).to_contain_text("Returns")
    screenshots(page, "staff-knowledge")
    accessibility(page)
    gaps.get_by_role("link", name="Is there a loyalty programme for students?").click()
    expect(page.get_by_role("log").or_(page.locator("#transcript"))).to_contain_text("Is there a loyalty programme for students?")
    page.context.close()
