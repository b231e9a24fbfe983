"""A misspelt word of a question is searched as the words the passages hold within one edit of it."""

from __future__ import annotations

import pytest

from apps.knowledge.queries import search

pytestmark = pytest.mark.django_db


def test_a_misspelt_question_finds_the_passage_the_right_spelling_finds(help_centre):
    found = search("how do I retrun my jakcet")

    assert found[0]["title"] == "Returns"
    assert found[0]["anchor"] == search("how do I return my jacket")[0]["anchor"]


def test_a_word_the_passages_hold_is_searched_as_it_is_though_another_is_one_edit_away(add):
    add("Shoes", "## Soles\n\nWe put new soles on worn shoes.")
    add("Sales", "## Sale\n\nThe sale ends on Sunday.")

    assert [p["title"] for p in search("sale")] == ["Sales"]


def test_a_word_near_nothing_the_passages_hold_finds_nothing(help_centre):
    assert search("xylophone quizzically") == []
