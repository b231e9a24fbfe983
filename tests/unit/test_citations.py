"""A reply's [n] markers against the passages its turn's searches returned (apps/agent/knowledge.py), and the scripted model's view of a search."""

from __future__ import annotations

import pytest

from apps.agent import knowledge
from apps.agent.config import ConfigError, check_config
from apps.agent.providers import PastRound, ToolCall
from apps.agent.providers.scripted import _PLACEHOLDER, _placeholder, outcome

RETURNS = {"title": "Returns", "passage_id": "p1", "source_id": "s1", "version": 2, "url": "https://help.example/returns",
           "text": "Return within 30 days.", "score": 0.9}
SHIPPING = {"title": "Shipping", "passage_id": "p2", "source_id": "s2", "version": 1, "text": "We ship in 2 days.", "score": 0.5}


def searched(*passages, after=0):
    return knowledge.numbered(list(passages), after=after)


class TestNumbering:
    def test_passages_are_numbered_on_through_the_turn(self):
        first = searched(RETURNS)
        second = searched(SHIPPING, after=max(knowledge.returned([first])))

        assert [p["n"] for p in first["passages"]] == [1]
        assert [p["n"] for p in second["passages"]] == [2]

    def test_nothing_found_says_so(self):
        assert searched() == {"passages": [], "note": "nothing found"}


class TestCite:
    def test_a_marker_naming_a_returned_passage_is_a_citation(self):
        text, citations, dropped = knowledge.cite("Within 30 days [1].", [searched(RETURNS, SHIPPING)])

        assert text == "Within 30 days [1]."
        assert citations == [{"n": 1, "passage_id": "p1", "source_id": "s1", "title": "Returns", "version": 2,
                              "url": "https://help.example/returns"}]
        assert dropped == []

    def test_a_marker_naming_nothing_returned_is_taken_out_and_recorded(self):
        text, citations, dropped = knowledge.cite("Within 30 days [1] [7].", [searched(RETURNS)])

        assert text == "Within 30 days [1]."
        assert [c["n"] for c in citations] == [1] and dropped == [7]

    def test_each_passage_is_cited_once_in_the_order_first_cited(self):
        both = searched(RETURNS, SHIPPING)

        _, citations, _ = knowledge.cite("Ship [2], return [1], again [2].", [both])

        assert [c["n"] for c in citations] == [2, 1]

    def test_a_reply_without_a_search_keeps_no_marker(self):
        assert knowledge.cite("See [1].", []) == ("See.", [], [1])


class TestTheScriptedModel:
    def rounds(self, result):
        call = ToolCall(call_id="call_1_1", tool="search_knowledge", arguments={"query": "returns"})
        return PastRound(text="", calls=[call], results={"call_1_1": result})

    @pytest.mark.parametrize("result, seen", [(searched(RETURNS), "found"), (searched(), "not_found")])
    def test_when_reads_what_the_search_found(self, result, seen):
        assert outcome(self.rounds(result), frozenset()) == seen

    def test_passages_lists_the_found_passages_as_markers(self):
        said = _PLACEHOLDER.sub(lambda m: _placeholder(m, "", searched(RETURNS, SHIPPING), []), "See {passages}.")

        assert said == "See [1] Returns, [2] Shipping."


class TestTheConfiguration:
    def test_the_block_gets_its_defaults(self):
        config = check_config({"name": "Help", "model": {"provider": "scripted"}, "knowledge": {"enabled": True}})

        assert config["knowledge"] == {"enabled": True, "sources": "all", "max_passages": 5, "no_answer": "say"}

    def test_every_wrong_setting_is_named(self):
        with pytest.raises(ConfigError) as refused:
            check_config({"name": "Help", "model": {"provider": "scripted"},
                          "knowledge": {"enabled": "yes", "sources": "some", "max_passages": 0, "no_answer": "shrug", "x": 1}})

        assert {p.split(":")[0] for p in refused.value.problems} == {
            "knowledge", "knowledge.enabled", "knowledge.sources", "knowledge.max_passages", "knowledge.no_answer"}
