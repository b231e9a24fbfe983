"""
Writing a version's passages, in the request for small content and in the background for large.

A version's passages become searchable all at once: they are written, and the old version's
removed, in one transaction with the source row that names the version current. Large content is
committed first as the source's `pending` bytes (status `indexing`), like an outbox row: an
indexer claims it for a while (`claimed_until`; `FOR UPDATE SKIP LOCKED` on PostgreSQL and a
conditional update everywhere, as apps/webhooks/delivery.py does), reads it outside any
transaction and writes the passages in one. A process that dies in between leaves a claim that
lapses, and the source is taken again, by this process after a restart or by another. A
version that a PUT or DELETE replaced meanwhile is dropped on writing, not written over them.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.utils import timezone

from apps.knowledge import embeddings
from apps.knowledge.models import Passage, Source
from apps.knowledge.passages import Chunk, chunk
from apps.knowledge.reading import Unreadable, read

log = logging.getLogger(__name__)

REASON_CHARS = 500
_BATCH = 500
_stirred = threading.Event()
_started = threading.Event()


def store(source: Source, chunks: list[Chunk]) -> None:
    """
    Make `chunks` the passages of the source's current version, and the source ready.

    Call inside the transaction that holds the source row: the old passages go and the new come
    with the row's change, so a search sees either version whole, never a mix.
    """
    Passage.objects.filter(source_id=source.id).delete()
    Passage.objects.bulk_create(
        [Passage(source_id=source.id, version=source.version, ordinal=n, title=source.title, anchor=c.anchor or "",
                 text=c.text) for n, c in enumerate(chunks, start=1)],
        batch_size=_BATCH,
    )
    source.status, source.reason, source.chunks = "ready", "", len(chunks)
    source.pending, source.claimed_until = None, None
    source.save(update_fields=["status", "reason", "chunks", "pending", "claimed_until"])
    if embeddings.configured():
        transaction.on_commit(wake)  # the new passages' embeddings


def fail(source: Source, reason: str) -> None:
    """Record why the current version cannot be indexed; it has no passages."""
    Passage.objects.filter(source_id=source.id).delete()
    source.status, source.reason, source.chunks = "failed", reason[:REASON_CHARS], 0
    source.pending, source.claimed_until = None, None
    source.save(update_fields=["status", "reason", "chunks", "pending", "claimed_until"])


@dataclass(frozen=True)
class Claim:
    """A pending version taken by this process until `until`."""

    source_id: str
    version: int
    until: datetime


def _claimable(now: datetime) -> Q:
    return Q(status="indexing", deleted_at__isnull=True) & (Q(claimed_until__isnull=True) | Q(claimed_until__lte=now))


def claim(*, now: datetime | None = None) -> Claim | None:
    """Take the longest-waiting pending version nobody holds, for WAYPOINT_KNOWLEDGE_CLAIM_SECONDS."""
    now = now or timezone.now()
    until = now + timedelta(seconds=settings.WAYPOINT_KNOWLEDGE_CLAIM_SECONDS)
    for _ in range(8):
        with transaction.atomic():
            due = (Source.objects.select_for_update(skip_locked=True, no_key=True).filter(_claimable(now))
                   .order_by("updated_at").values("id", "version").first())
            if due is None:
                return None
            # Conditional as well as locked: SQLite has no row locks, and two processes must not both win.
            if Source.objects.filter(_claimable(now), pk=due["id"], version=due["version"]).update(claimed_until=until):
                return Claim(str(due["id"]), due["version"], until)
    return None


def index_claimed(claimed: Claim) -> bool:
    """
    Read the claimed version and write its passages (or why it failed); False when it was superseded.

    The reading happens outside any transaction: a large PDF takes seconds, and nothing is locked meanwhile.
    """
    found = Source.objects.filter(pk=claimed.source_id, version=claimed.version).values("pending", "format").first()
    if found is None or found["pending"] is None:
        return False
    failure, chunks = "", []
    try:
        chunks = chunk(read(bytes(found["pending"]), found["format"]))
    except Unreadable as exc:
        failure = str(exc)
    except Exception:
        log.exception("knowledge source %s version %s could not be read", claimed.source_id, claimed.version)
        failure = "the document could not be read"
    with transaction.atomic():
        source = Source.objects.select_for_update(no_key=True).defer("pending").filter(pk=claimed.source_id).first()
        if source is None or source.deleted_at or source.version != claimed.version or source.status != "indexing":
            return False
        if failure:
            fail(source, failure)
        else:
            store(source, chunks)
    return True


def index_pending(*, limit: int | None = None, now: datetime | None = None) -> int:
    """
    Index what is pending, one version at a time; return how many versions were written.

    What the server's indexer thread does continuously, for tests and `manage.py knowledge index`.
    """
    done = 0
    while limit is None or done < limit:
        claimed = claim(now=now)
        if claimed is None:
            break
        if index_claimed(claimed):
            done += 1
    return done


def wake() -> None:
    """Have this process's indexer look now (a commit wrote pending content, or passages to embed)."""
    _stirred.set()


def start() -> None:
    """Start this process's indexer thread (once); called when the ASGI application loads."""
    if _started.is_set() or not settings.WAYPOINT_KNOWLEDGE_INDEXER:
        return
    _started.set()
    threading.Thread(target=_loop, daemon=True, name="waypoint-knowledge").start()


def _loop() -> None:
    # Other processes' uploads are found by the poll; this process's wake the loop at once.
    while True:
        _stirred.clear()
        try:
            close_old_connections()
            index_pending()
            embeddings.embed_pending()
        except Exception:
            log.exception("knowledge indexing pass failed")
        finally:
            connection.close()
        _stirred.wait(settings.WAYPOINT_KNOWLEDGE_POLL_SECONDS)
