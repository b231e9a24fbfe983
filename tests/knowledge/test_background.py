"""Large content is indexed in the background: never half-indexed, and taken again after a crash."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.knowledge import actions, indexing
from apps.knowledge.models import Passage, Source
from apps.knowledge.queries import search
from tests.knowledge.documents import pdf

pytestmark = pytest.mark.django_db

ARTICLE = "\n\n".join(f"## Part {n}\n\nReturns of part {n} are accepted within 30 days. " * 3 for n in range(40))


@pytest.fixture(autouse=True)
def small_inline_limit(settings):
    settings.WAYPOINT_KNOWLEDGE_INLINE_BYTES = 1000


def test_a_large_source_is_indexing_and_not_searched_until_whole(add):
    source = add("Big returns guide", ARTICLE)

    assert source.status == "indexing" and source.chunks == 0
    assert search("returns part") == []

    assert indexing.index_pending() == 1

    source.refresh_from_db()
    assert source.status == "ready" and source.chunks == 40 and source.pending is None
    assert len(search("returns part", limit=20)) == 20


def test_a_version_is_written_whole_or_not_at_all(add, monkeypatch):
    add("Big returns guide", ARTICLE)
    written = []

    def fails_half_way(objs, **kwargs):
        for passage in objs[: len(objs) // 2]:
            passage.save()
            written.append(passage)
        raise RuntimeError("the process died half way")

    monkeypatch.setattr(Passage.objects, "bulk_create", fails_half_way)
    with pytest.raises(RuntimeError):
        indexing.index_claimed(indexing.claim())

    assert written and not Passage.objects.exists()
    assert Source.objects.get().status == "indexing"


def test_a_claim_left_by_a_crashed_process_is_taken_again_when_it_lapses(add, settings):
    source = add("Big returns guide", ARTICLE)
    now = timezone.now()
    held = indexing.claim(now=now)  # and the process dies before it writes anything

    assert held is not None
    assert indexing.index_pending(now=now + timedelta(seconds=1)) == 0

    later = now + timedelta(seconds=settings.WAYPOINT_KNOWLEDGE_CLAIM_SECONDS + 1)
    assert indexing.index_pending(now=later) == 1
    source.refresh_from_db()
    assert source.status == "ready" and search("returns part")


def test_a_version_replaced_while_it_was_read_is_dropped(add):
    source = add("Big returns guide", ARTICLE)
    held = indexing.claim()
    upload = actions.check_upload(title="Big returns guide", content=ARTICLE.replace("30 days", "60 days").encode())
    actions.replace_source(source_id=str(source.id), upload=upload, now=timezone.now())

    assert indexing.index_claimed(held) is False
    assert not Passage.objects.exists()

    assert indexing.index_pending() == 1
    assert {p["version"] for p in search("returns part", limit=20)} == {2}
    assert "60 days" in search("returns part")[0]["text"]


def test_a_source_deleted_while_it_was_read_stays_out(add):
    source = add("Big returns guide", ARTICLE)
    held = indexing.claim()
    actions.delete_source(source_id=str(source.id), now=timezone.now())

    assert indexing.index_claimed(held) is False
    assert indexing.index_pending() == 0
    assert search("returns part") == []


def test_a_large_pdf_that_cannot_be_read_fails_with_a_reason(add):
    broken = pdf(["Returns are free."] * 30).replace(b"/Contents", b"/Contentz")

    source = add("Scanned policy", broken, format=None, filename="policy.pdf")
    indexing.index_pending()

    source.refresh_from_db()
    assert source.status == "failed" and source.reason and source.pending is None
    assert search("returns") == []


def test_the_indexer_command_indexes_what_is_pending(add):
    from django.core.management import call_command

    add("Big returns guide", ARTICLE)

    call_command("knowledge", "index")

    assert Source.objects.get().status == "ready"
