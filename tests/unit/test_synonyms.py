"""Words a customer and a help article use for the same thing (apps/knowledge/synonyms.py)."""

from __future__ import annotations

from apps.knowledge.synonyms import GROUPS, synonyms


def test_a_word_brings_the_other_words_of_its_group():
    assert synonyms(["couch", "delivery"]) == ["sofa", "settee"]


def test_a_plural_finds_its_singulars_group_and_words_the_question_holds_are_not_repeated():
    assert synonyms(["texts", "sms"]) == ["text"]


def test_a_word_is_in_one_group_only():
    words = [word for group in GROUPS for word in group.split()]

    assert len(words) == len(set(words))
