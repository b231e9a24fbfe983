"""The assistant answers from the help content: `search_knowledge` is a read-only built-in tool, and a reply's [n] markers are its citations."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings
from django.utils import timezone

from apps.ledger.models import Event
from apps.ledger.replay import replay, verify

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = {
    "knowledge": {"enabled": True},
    "tools": [],
    "model": {"provider": "scripted", "rules": [], "fallback": [
        {"call": "search_knowledge", "arguments": {"query": "{message}"}},
        {"when": "found", "say": "You can send it back within 30 days [1]. See also [9]."},
        {"when": "not_found", "say": "I could not find that in our help pages."},
    ]},
}


def entries(conversation_id: str, kind: str) -> list[dict]:
    found = Event.objects.filter(conversation_id=conversation_id, kind=kind).order_by("seq")
    return [json.loads(e.payload) if isinstance(e.payload, str) else e.payload for e in found]


def test_a_reply_cites_the_passage_its_search_returned(api, help_centre):
    started = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**ANSWERS))

    state = api.state(started["conversation_id"])
    reply = state["messages"][-1]
    returns = help_centre["Returns"]
    assert reply["text"] == "You can send it back within 30 days [1]. See also."
    assert reply["citations"] == [{"n": 1, "passage_id": reply["citations"][0]["passage_id"], "source_id": str(returns.id),
                                   "title": "Returns", "version": 1, "url": "https://help.example.com/returns"}]
    [complete] = entries(started["conversation_id"], "turn_complete")
    assert complete["dropped_citations"] == [9]  # named nothing returned: out of the text, kept in the record


def test_what_the_model_saw_is_the_tools_result_in_the_record(api, help_centre):
    started = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**ANSWERS))

    [started_call] = entries(started["conversation_id"], "action_started")
    [finished] = entries(started["conversation_id"], "action_finished")
    assert started_call["tool"] == "search_knowledge" and started_call["side_effecting"] is False
    assert started_call["arguments"] == {"query": "how do I return a jacket that doesn't fit?"}
    passages = finished["output"]["passages"]
    assert passages[0]["n"] == 1 and passages[0]["title"] == "Returns" and "30 days" in passages[0]["text"]
    assert verify(started["conversation_id"]).ok and replay(started["conversation_id"]).ok


def test_a_question_the_content_does_not_answer_is_said_so(api, help_centre):
    started = api.start("do you sell garden furniture?", assistant=api.create_assistant(**ANSWERS))

    reply = api.state(started["conversation_id"])["messages"][-1]
    [finished] = entries(started["conversation_id"], "action_finished")
    assert finished["output"] == {"passages": [], "note": "nothing found"}
    assert reply["text"] == "I could not find that in our help pages." and reply["citations"] == []


def test_an_assistant_without_knowledge_is_not_offered_the_tool_and_its_call_fails(api, help_centre):
    off = {**ANSWERS, "knowledge": {"enabled": False}}
    started = api.start("how do I return a jacket?", assistant=api.create_assistant(**off))

    [finished] = entries(started["conversation_id"], "action_finished")
    assert finished["ok"] is False and "no help content" in finished["error"]


def test_the_assistants_sources_limit_the_search(api, help_centre):
    only_shipping = {**ANSWERS, "knowledge": {"enabled": True, "sources": [str(help_centre["Shipping"].id)]}}
    started = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**only_shipping))

    [finished] = entries(started["conversation_id"], "action_finished")
    assert {p["title"] for p in finished["output"]["passages"]} <= {"Shipping"}


class TestNoAnswer:
    OFFER = {**ANSWERS, "knowledge": {"enabled": True, "no_answer": "offer_handoff"}, "handoff": {"enabled": True}}

    def test_a_reply_whose_searches_found_nothing_offers_a_person_in_the_record_and_the_state(self, api, help_centre):
        started = api.start("do you sell garden furniture?", assistant=api.create_assistant(**self.OFFER))

        reply = api.state(started["conversation_id"])["messages"][-1]
        [complete] = entries(started["conversation_id"], "turn_complete")
        assert reply["text"] == "I could not find that in our help pages." and reply["offer_handoff"] is True
        assert complete["offer_handoff"] is True
        assert verify(started["conversation_id"]).ok and replay(started["conversation_id"]).ok

    def test_a_reply_that_found_something_offers_no_one_and_its_entry_stays_as_it_was(self, api, help_centre):
        started = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**self.OFFER))

        reply = api.state(started["conversation_id"])["messages"][-1]
        [complete] = entries(started["conversation_id"], "turn_complete")
        assert reply["offer_handoff"] is False and "offer_handoff" not in complete

    @pytest.mark.parametrize("settings", [
        {"knowledge": {"enabled": True, "no_answer": "say"}, "handoff": {"enabled": True}},
        {"knowledge": {"enabled": True, "no_answer": "offer_handoff"}, "handoff": {"enabled": False}},
    ], ids=["say", "no handoff"])
    def test_no_person_is_offered_when_the_assistant_says_so_itself_or_cannot_hand_over(self, api, help_centre, settings):
        started = api.start("do you sell garden furniture?", assistant=api.create_assistant(**{**ANSWERS, **settings}))

        assert api.state(started["conversation_id"])["messages"][-1]["offer_handoff"] is False


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
def test_the_turn_completed_webhook_carries_the_replys_citations_and_the_offer_of_a_person(api, help_centre):
    from apps.webhooks import endpoints
    from apps.webhooks.models import WebhookDelivery

    endpoints.create(url="http://127.0.0.1:9/hooks", events=["turn.completed"])
    cited = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**ANSWERS))
    unanswered = api.start("do you sell garden furniture?", assistant=api.create_assistant(**TestNoAnswer.OFFER))

    sent = {d.conversation_id: json.loads(d.data) for d in WebhookDelivery.objects.filter(type="turn.completed")}
    reply = api.state(cited["conversation_id"])["messages"][-1]
    assert sent[cited["conversation_id"]]["citations"] == reply["citations"] and reply["citations"]
    assert "offer_handoff" not in sent[cited["conversation_id"]]
    assert sent[unanswered["conversation_id"]]["citations"] == [] and sent[unanswered["conversation_id"]]["offer_handoff"] is True


class TestAgUi:
    def test_a_cited_reply_is_followed_by_its_citations_and_a_reconnect_gets_them_again(self, api, help_centre):
        from tests.api.test_agui import Thread, events_of

        thread = Thread(api, api.create_assistant(**ANSWERS))

        events = events_of(thread.send("how do I return a jacket that doesn't fit?"))

        [reply] = [e for e in events if e["type"] == "TEXT_MESSAGE_START"]
        [cited] = [e for e in events if e["type"] == "CUSTOM"]
        assert types_after(events, reply) == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "CUSTOM"]
        assert cited["name"] == "waypoint.citations" and cited["value"]["messageId"] == reply["messageId"]
        assert [c["title"] for c in cited["value"]["citations"]] == ["Returns"]
        again = events_of(thread.send())
        assert [e["type"] for e in again[:3]] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "CUSTOM"] and again[2] == cited


def types_after(events: list[dict], first: dict) -> list[str]:
    """The types of the events from `first` on, up to the run's end."""
    start = events.index(first)
    return [e["type"] for e in events[start:] if e["type"] not in ("STATE_SNAPSHOT", "RUN_FINISHED", "STEP_FINISHED")]


class TestThePassageOnRequest:
    def test_a_cited_passage_is_shown_as_the_search_returned_it_even_after_its_source_changed_and_went(
            self, api, help_centre, client):
        from apps.knowledge import actions

        started = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**ANSWERS))
        [cited] = api.state(started["conversation_id"])["messages"][-1]["citations"]
        path = f"/c/{started['conversation_id']}/passages/{cited['passage_id']}"
        returns = help_centre["Returns"]
        actions.replace_source(source_id=str(returns.id), upload=actions.check_upload(
            title="Returns", content=b"# Returns\n\nNo returns any more.", format="markdown", url=None, filename=""),
            now=timezone.now())
        actions.delete_source(source_id=str(returns.id), now=timezone.now())

        fragment = client.get(path, {"token": started["token"]}, headers={"HX-Request": "true"})
        page = client.get(path, {"token": started["token"]})

        assert fragment.status_code == 200 and "30 days" in fragment.content.decode()
        assert fragment.content.decode().lstrip().startswith('<blockquote class="passage-quote">')
        assert "No returns any more" not in fragment.content.decode() and "version 1" in fragment.content.decode()
        assert page.status_code == 200 and "<html" in page.content.decode() and "30 days" in page.content.decode()
        assert verify(started["conversation_id"]).ok and replay(started["conversation_id"]).ok

    def test_another_conversations_token_or_a_passage_it_never_returned_is_a_page_for_people(self, api, help_centre, client):
        started = api.start("how do I return a jacket that doesn't fit?", assistant=api.create_assistant(**ANSWERS))
        other = api.start("hello")
        [cited] = api.state(started["conversation_id"])["messages"][-1]["citations"]
        path = f"/c/{started['conversation_id']}/passages/{cited['passage_id']}"

        stranger = client.get(path, {"token": other["token"]})
        unknown = client.get(f"/c/{started['conversation_id']}/passages/psg_nothing", {"token": started["token"]})

        for response in (stranger, unknown):
            assert response.status_code == 404 and "<html" in response.content.decode()
            assert "30 days" not in response.content.decode() and "Traceback" not in response.content.decode()


def test_the_demo_answers_a_how_to_from_its_help_centre_and_offers_a_person_for_what_it_lacks(api, add):
    from apps.agent.actions import load_demo, start_conversation
    from apps.knowledge.models import Source

    teams = add("Returns", "# Returns\n\nOur own returns policy: 60 days.", url="https://shop.example/returns")
    load_demo(base_url="http://127.0.0.1:8000")
    demo = load_demo(base_url="http://127.0.0.1:8000")  # again, as each `make run` does: nothing is added twice

    def ask(message: str) -> dict:
        started = start_conversation(assistant_id=str(demo.id), message=message, persona="guest:alice", edge="api",
                                     now=timezone.now())
        return api.state(started["conversation_id"])["messages"][-1]

    cited, lacking = ask("how do I send something back?"), ask("how can I book a table at your restaurant?")

    assert Source.objects.filter(deleted_at__isnull=True).count() == 6
    teams.refresh_from_db()
    assert teams.version == 1 and str(teams.id) not in demo.config["knowledge"]["sources"]  # the team's own stays theirs
    assert cited["citations"][0]["title"] == "Returns" and cited["text"].startswith("Our help centre covers this in [1] Returns")
    assert lacking["text"] == "I couldn't find that in our help centre." and lacking["offer_handoff"] is True
