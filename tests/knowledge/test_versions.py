"""A PUT is a new version whose old passages leave the search at once; the same content is no new version."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.conversations.errors import NotFound
from apps.knowledge import actions
from apps.knowledge.models import Passage, Source
from apps.knowledge.queries import search

pytestmark = pytest.mark.django_db


def replace(source, title: str, text: str, **fields):
    upload = actions.check_upload(title=title, content=text.encode(), format="markdown", **fields)
    return actions.replace_source(source_id=str(source.id), upload=upload, now=timezone.now() + timedelta(seconds=1))


def test_a_new_version_replaces_the_old_ones_passages(add):
    source = add("Returns", "## Window\n\nReturns are accepted within 14 days.")

    written = replace(source, "Returns", "## Window\n\nReturns are accepted within 60 days, extended for the holidays.")

    assert written.changed and written.source.version == 2
    found = search("returns window days")
    assert [(p["version"], "60 days" in p["text"]) for p in found] == [(2, True)]
    assert not search("14")
    assert set(Passage.objects.filter(source=source).values_list("version", flat=True)) == {2}


def test_the_same_content_again_is_the_same_version(add):
    source = add("Returns", "Returns are accepted within 14 days.")

    written = replace(source, "Returns", "Returns are accepted within 14 days.")

    assert not written.changed and written.source.version == 1
    assert Passage.objects.filter(source=source).count() == 1


def test_adding_the_same_content_twice_gives_the_first_source(add):
    first = add("Returns", "Returns are accepted within 14 days.")

    again = add("Returns", "Returns are accepted within 14 days.")

    assert again.id == first.id and Source.objects.count() == 1


def test_a_new_title_is_a_new_version(add):
    source = add("Returns", "Returns are accepted within 14 days.")

    written = replace(source, "Returns and exchanges", "Returns are accepted within 14 days.")

    assert written.changed and written.source.version == 2
    assert search("exchanges")[0]["title"] == "Returns and exchanges"


def test_a_new_url_alone_keeps_the_version(add):
    source = add("Returns", "Returns are accepted within 14 days.")

    written = replace(source, "Returns", "Returns are accepted within 14 days.", url="https://help.example.com/r")

    assert not written.changed and written.source.version == 1
    assert search("returns")[0]["url"] == "https://help.example.com/r"


def test_an_unreadable_new_version_leaves_the_current_one(add):
    source = add("Returns", "Returns are accepted within 14 days.")

    with pytest.raises(actions.UnreadableFile):
        actions.replace_source(source_id=str(source.id), now=timezone.now(), upload=actions.check_upload(
            title="Returns", content=b"<script>x()</script>", format="html"))

    assert Source.objects.get(pk=source.pk).version == 1
    assert search("returns accepted")[0]["version"] == 1


def test_deleting_a_source_takes_its_passages_out_of_the_search(add):
    source = add("Returns", "Returns are accepted within 14 days.")

    actions.delete_source(source_id=str(source.id), now=timezone.now())

    assert search("returns") == []
    assert not Passage.objects.filter(source=source).exists()
    with pytest.raises(NotFound):
        actions.delete_source(source_id=str(source.id), now=timezone.now())


def test_a_deleted_sources_content_may_be_added_again(add):
    source = add("Returns", "Returns are accepted within 14 days.")
    actions.delete_source(source_id=str(source.id), now=timezone.now())

    again = add("Returns", "Returns are accepted within 14 days.")

    assert again.id != source.id and search("returns")[0]["source_id"] == str(again.id)
