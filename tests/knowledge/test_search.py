"""Keyword search: a customer's question finds the passage that answers it, on current versions only."""

from __future__ import annotations

import pytest

from apps.knowledge.queries import search

pytestmark = pytest.mark.django_db


def test_a_customers_question_finds_the_returns_passage_first(help_centre):
    found = search("how do I return a jacket that doesn't fit?")

    assert found[0]["title"] == "Returns"
    assert found[0]["anchor"] == "Returning an item"


def test_a_passage_need_not_hold_every_word_of_the_question(help_centre):
    found = search("my parcel from last tuesday never arrived where is it")

    assert found and found[0]["anchor"] == "Tracking a parcel"


def test_stop_words_and_question_words_do_not_decide_the_ranking(add, help_centre):
    add("Chatter", "How do I? What can you do, and how do you do it, and why do we do what we do? How? What? Why?")

    found = search("How do I track my parcel?")

    assert found[0]["anchor"] == "Tracking a parcel"
    assert all(p["title"] != "Chatter" for p in found)


def test_a_question_of_only_stop_words_finds_nothing(help_centre):
    assert search("how do I do that?") == []


def test_a_passage_is_the_contracts_passage(help_centre):
    returns = help_centre["Returns"]

    passage = search("return an item", limit=1)[0]

    assert set(passage) == {"passage_id", "source_id", "title", "version", "text", "score", "url", "anchor"}
    assert passage["source_id"] == str(returns.id) and passage["version"] == 1
    assert passage["passage_id"] == f"{returns.id}:1:{passage['passage_id'].rsplit(':', 1)[1]}"
    assert passage["url"] == "https://help.example.com/returns"
    assert 0 < passage["score"] < 1


def test_a_passage_without_url_or_heading_leaves_them_out(add):
    add("Opening hours", "We answer the phone from nine to five.", format="text")

    passage = search("phone hours")[0]

    assert "url" not in passage and "anchor" not in passage


def test_scores_come_best_first_and_limit_holds(help_centre):
    found = search("delivery parcel order refund card", limit=3)

    assert len(found) == 3
    assert [p["score"] for p in found] == sorted((p["score"] for p in found), reverse=True)


def test_sources_keeps_to_the_named_sources(help_centre):
    shipping = str(help_centre["Shipping"].id)

    found = search("return delivery", sources=[shipping])

    assert found and {p["source_id"] for p in found} == {shipping}


def test_sources_that_name_nothing_find_nothing(help_centre):
    assert search("return", sources=[]) == []
    assert search("return", sources=["not-an-id", "00000000-0000-0000-0000-000000000000"]) == []


def test_stemming_finds_another_form_of_the_word(help_centre):
    assert search("returning shoes")[0]["title"] == "Returns"


def test_the_title_and_heading_weigh_more_than_the_text(add):
    add("Refunds", "## Timing\n\nMoney goes back to your card within five days.")
    add("Gift cards", "## Using one\n\nA gift card can pay for part of an order; refunds of the rest go back as usual.")

    assert search("refunds")[0]["title"] == "Refunds"


def test_odd_characters_in_a_question_are_only_words(help_centre):
    assert search("return & | ! ( ) : * 'quoted' \"double\" <tag> -minus")[0]["title"] == "Returns"


def test_the_words_of_chat_do_not_decide_the_ranking(add):
    add("Getting your money back", "## Get it back\n\nYou get it back once we get the parcel.")
    add("Sizing", "## Choosing\n\nOur guide finds your size.")

    found = search("what size should I get, I want something that fits")

    assert [p["title"] for p in found] == ["Sizing"]


def test_a_customers_word_finds_the_articles_word_for_the_same_thing(add):
    add("Furniture", "## Sofas\n\nSofas are delivered by two people, who take the packaging away.")

    assert search("when does my couch come")[0]["title"] == "Furniture"
    assert search("can I pay with a coupon") == []
