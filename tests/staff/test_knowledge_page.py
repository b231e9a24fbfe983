"""The staff panel's Knowledge page: sources added and deleted, Try a question, Unanswered questions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.actions.models import ActionLog
from apps.knowledge.models import Source
from tests.knowledge.documents import HELP_CENTRE

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = "/staff/knowledge/"
ASKS = {
    "name": "Help desk",
    "knowledge": {"enabled": True},
    "tools": [],
    "model": {"provider": "scripted", "rules": [], "fallback": [
        {"call": "search_knowledge", "arguments": {"query": "{message}"}},
        {"when": "found", "say": "Found [1]."}, {"when": "not_found", "say": "Nothing on that."}]},
}


@pytest.fixture
def help_centre(dana):
    for title, text in HELP_CENTRE.items():
        response = dana.post(f"{PAGE}add", {"title": title, "text": text, "format": "markdown",
                                            "url": f"https://help.example.com/{title.lower()}"})
        assert response.status_code == 302, response.content.decode()[:500]
    return {s.title: s for s in Source.objects.all()}


def test_pasted_and_uploaded_content_is_listed_with_its_status_version_and_passages(dana):
    pasted = dana.post(f"{PAGE}add", {"title": "Returns", "text": "# Returns\n\nSend it back within 30 days.", "format": "markdown"},
                       follow=True)
    uploaded = dana.post(f"{PAGE}add", {"title": "", "url": "", "file": SimpleUploadedFile(
        "shipping.html", b"<h1>Shipping</h1><p>Parcels leave within a day.</p><script>alert(1)</script>", "text/html")},
        follow=True)

    page = uploaded.content.decode()
    assert "Added Returns (version 1): 1 passages." in pasted.content.decode()
    assert "Added shipping (version 1)" in page and "alert(1)" not in page
    rows = {s.title: (s.status, s.version, s.chunks, s.format) for s in Source.objects.all()}
    assert rows == {"Returns": ("ready", 1, 1, "markdown"), "shipping": ("ready", 1, 1, "html")}
    assert 'id="source-' in page and "ready" in page


@pytest.mark.parametrize(("fields", "words"), [
    ({"title": "Empty", "text": "   ", "format": "markdown"}, "Paste the text, or choose a file."),
    ({"title": "Bad address", "text": "hello", "format": "markdown", "url": "javascript:alert(1)"}, "a web address starting"),
    ({"title": "Odd", "text": "hello", "format": "docx"}, "Format: Markdown, HTML or plain text."),
    ({"title": "", "file": SimpleUploadedFile("tool.exe", b"MZ\x90\x00\x03\x00", "application/octet-stream")}, ""),
    ({"title": "Locked", "file": SimpleUploadedFile("locked.pdf", b"%PDF-1.4 not really a pdf", "application/pdf")}, ""),
], ids=["empty", "address", "format", "binary", "broken pdf"])
def test_bad_content_is_refused_in_words_and_nothing_is_written(dana, fields, words):
    response = dana.post(f"{PAGE}add", fields)

    assert response.status_code == 422
    problem = response.content.decode().split('class="problems" role="alert">', 1)[1].split("</p>", 1)[0]
    assert problem and words in problem and "Traceback" not in problem
    assert Source.objects.count() == 0


def test_a_deleted_source_leaves_the_list_and_the_search(dana, help_centre):
    returns = help_centre["Returns"]

    dana.post(f"{PAGE}{returns.id}/delete")
    page = dana.get(PAGE, {"q": "how do I send back a jacket that doesn't fit?"}).content.decode()

    assert f'id="source-{returns.id}"' not in page
    tried = page.split('id="tried"', 1)[1]
    assert "<strong>Returns</strong>" not in tried


def test_try_a_question_shows_the_passages_an_assistants_search_finds_with_their_scores(dana, help_centre, make_assistant):
    only_shipping = make_assistant(**{**ASKS, "name": "Shipping desk",
                                      "knowledge": {"enabled": True, "sources": [str(help_centre["Shipping"].id)]}})

    everything = dana.get(PAGE, {"q": "how do I send back a jacket that doesn't fit?"}).content.decode()
    limited = dana.get(PAGE, {"q": "how do I send back a jacket that doesn't fit?", "assistant": str(only_shipping.id)})

    tried = everything.split('id="tried"', 1)[1].split("</div>", 1)[0]
    assert "<strong>Returns</strong>" in tried.split("</li>", 1)[0] and "score " in tried
    shown = limited.content.decode().split('id="tried"', 1)[1].split("</div>", 1)[0]
    assert "as Shipping desk" in shown and "<strong>Returns</strong>" not in shown


def test_a_question_too_long_to_try_is_refused_in_words(dana, help_centre):
    page = dana.get(PAGE, {"q": "x" * 1001}).content.decode()

    assert "A question may be at most 1,000 characters; this one is 1,001." in page


def test_unanswered_questions_are_grouped_counted_and_link_to_their_conversation(dana, help_centre, make_assistant):
    from apps.agent import actions

    desk = make_assistant(**ASKS)

    def start(message: str, assistant) -> dict:  # at the real time: the page looks back 30 days from now
        return actions.start_conversation(assistant_id=str(assistant.id), message=message, persona="guest:alice", edge="api",
                                          now=timezone.now())
    start("Do you sell garden furniture?", assistant=desk)
    latest = start("do you sell  garden furniture", assistant=desk)
    start("Is there a loyalty programme for students?", assistant=desk)
    start("how do I send back a jacket that doesn't fit?", assistant=desk)  # answered: not a gap
    old = start("Do you deliver to the moon?", assistant=desk)
    ActionLog.objects.filter(conversation_id=old["conversation_id"]).update(started_at=timezone.now() - timedelta(days=31))

    page = dana.get(PAGE).content.decode()

    gaps = page.split('id="unanswered-title"', 1)[1].split("</table>", 1)[0]
    rows = gaps.split("<tr>")[2:]
    assert len(rows) == 2
    assert "garden furniture" in rows[0] and "2 times in 2 conversations" in rows[0]
    assert "loyalty programme" in rows[1] and "1 time<" in rows[1]
    assert "jacket" not in gaps and "moon" not in gaps
    assert f'href="/staff/conversations/{latest["conversation_id"]}/"' in rows[0]


def test_the_page_is_for_staff_only(client):
    response = client.get(PAGE)

    assert response.status_code == 302 and "/staff/login" in response["Location"]


def test_a_turn_whose_second_search_found_the_answer_is_not_a_gap(dana, help_centre, make_assistant):
    from apps.agent import actions

    twice = make_assistant(**{**ASKS, "name": "Second try", "model": {"provider": "scripted", "rules": [], "fallback": [
        {"call": "search_knowledge", "arguments": {"query": "zebra xylophone"}},
        {"call": "search_knowledge", "arguments": {"query": "{message}"}}, {"say": "Found it on the second try."}]}})
    actions.start_conversation(assistant_id=str(twice.id), message="how do I send back a jacket that doesn't fit?",
                               persona="guest:alice", edge="api", now=timezone.now())

    page = dana.get(PAGE).content.decode()

    assert "zebra" not in page and "No unanswered question in the last 30 days." in page
