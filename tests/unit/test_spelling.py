"""A misspelt word to the index's terms within one edit (apps/knowledge/spelling.py)."""

from __future__ import annotations

import pytest

from apps.knowledge.spelling import corrections, distance, forms, worth_correcting

TERMS = [(t, 1) for t in ("return", "retail", "jacket", "refund", "kettl", "soak", "point", "label", "receiv", "deliveri",
                         "address", "so", "some")]


@pytest.mark.parametrize(("word", "term"), [
    ("retrun", "return"), ("jakcet", "jacket"), ("refnd", "refund"), ("kettel", "kettl"), ("pionts", "point"),
    ("lable", "label"), ("recieve", "receiv"), ("delivary", "deliveri"), ("adress", "address"),
])
def test_a_misspelling_finds_the_stem_of_the_word_meant(word, term):
    assert corrections(word, TERMS) == [term]


def test_a_swap_of_neighbours_is_one_edit_and_two_swaps_are_two():
    assert distance("retrun", "return") == 1
    assert distance("rteurn", "retrun") == 2


def test_the_most_common_terms_come_first_and_only_a_few():
    vocabulary = [("return", 5), ("rerun", 9), ("retron", 1), ("retru", 2), ("table", 40)]

    assert corrections("retrun", vocabulary) == ["rerun", "return", "retru"]


def test_short_words_and_numbers_are_left_alone():
    assert corrections("sole", [("sale", 3)]) == [] and corrections("12pm", TERMS) == []


def test_a_stop_word_is_never_a_correction():
    assert corrections("somes", [("some", 50), ("soma", 1)]) == ["soma"]


def test_a_word_is_compared_without_a_common_ending():
    assert {"reciev", "recieve"} <= forms("recieved") | forms("recieve")


def test_of_many_unknown_words_only_the_longest_few_are_looked_for():
    assert worth_correcting(["surprise", "obsessed", "homeware", "planning", "likes", "uni"]) == [
        "surprise", "obsessed", "homeware"]
