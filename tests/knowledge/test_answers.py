"""The assistant answers from the help content: `search_knowledge` is a read-only built-in tool, and a reply's [n] markers are its citations."""

from __future__ import annotations

import json

import pytest

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
