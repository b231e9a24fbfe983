"""
The writes of knowledge sources: add, replace, delete (PRODUCT.md "Knowledge").

Content is checked (`check_upload`) before anything is written, and small content is read into
passages before the transaction opens: a file that cannot be read is refused with nothing
written. Large content is committed as pending and indexed in the background (indexing.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction

from apps.conversations.errors import NotFound
from apps.knowledge import indexing
from apps.knowledge.errors import FileTooLarge, UnreadableFile, UnsupportedFormat
from apps.knowledge.models import Source
from apps.knowledge.passages import Chunk, chunk, content_hash
from apps.knowledge.queries import parse_id
from apps.knowledge.reading import Unreadable, check_pdf, detect_format, read

TITLE_CHARS = 300
URL_CHARS = 2000


@dataclass(frozen=True)
class Upload:
    """Checked content of one version: what it is called, its bytes and their format."""

    title: str
    content: bytes
    format: str
    url: str

    @property
    def hash(self) -> str:
        return content_hash(title=self.title, format=self.format, content=self.content)

    @property
    def inline(self) -> bool:
        """Small enough to index within the request."""
        return len(self.content) <= settings.WAYPOINT_KNOWLEDGE_INLINE_BYTES


@dataclass(frozen=True)
class Written:
    """A write's outcome: the source, and whether it changed (False: the same content again)."""

    source: Source
    changed: bool


def check_upload(*, title: str | None, content: bytes, format: str | None = None, url: str | None = None,
                 filename: str = "", media_type: str = "") -> Upload:
    """
    Check one version's content before anything is written.

    The title defaults to the file's name. Cheap checks only (size, type, encoding, a PDF that
    opens and is not encrypted): reading the whole of a large file is the indexer's work.
    :raises FileTooLarge: more than WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES
    :raises UnsupportedFormat: not Markdown, HTML, plain text or PDF
    :raises UnreadableFile: not UTF-8, empty, or a PDF that cannot be opened or is encrypted
    """
    limit = settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES
    if len(content) > limit:
        raise FileTooLarge(f"a knowledge source may be at most {limit:,} bytes; this one is {len(content):,}")
    try:
        kind = detect_format(declared=format, filename=filename, media_type=media_type, head=content[:8192])
    except Unreadable as exc:
        raise UnsupportedFormat(str(exc)) from None
    title = (title or "").strip() or _title_from(filename)
    if not title:
        raise UnreadableFile("title: give the source a title")
    if not content.strip():
        raise UnreadableFile("the document is empty")
    try:
        if kind == "pdf":
            check_pdf(content)
        elif b"\x00" in content:
            raise Unreadable("the file is not text (it contains NUL bytes)")
        else:
            content.decode("utf-8-sig")
    except Unreadable as exc:
        raise UnreadableFile(str(exc)) from None
    except UnicodeDecodeError:
        raise UnreadableFile("text must be UTF-8") from None
    return Upload(title=title[:TITLE_CHARS], content=content, format=kind, url=(url or "")[:URL_CHARS])


def _title_from(filename: str) -> str:
    name = filename.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    return (name.rsplit(".", 1)[0] if "." in name else name).strip()


def _chunks(upload: Upload) -> list[Chunk] | None:
    """The passages of small content, read now; None for content left to the indexer."""
    if not upload.inline:
        return None
    try:
        return chunk(read(upload.content, upload.format))
    except Unreadable as exc:
        raise UnreadableFile(str(exc)) from None


def _write(source: Source, upload: Upload, chunks: list[Chunk] | None) -> None:
    if chunks is not None:
        indexing.store(source, chunks)
    else:
        transaction.on_commit(indexing.wake)


def add_source(*, upload: Upload, now: datetime) -> Written:
    """
    Add a source at version 1; the same content as a live source's current version adds nothing.

    :raises UnreadableFile: small content that cannot be read (nothing is written)
    """
    digest = upload.hash
    existing = Source.objects.defer("pending").filter(content_hash=digest, deleted_at__isnull=True).order_by("created_at").first()
    if existing is not None:
        return Written(existing, changed=False)
    chunks = _chunks(upload)
    with transaction.atomic():
        source = Source.objects.create(
            title=upload.title, url=upload.url, format=upload.format, version=1, status="indexing",
            content_hash=digest, pending=None if chunks is not None else upload.content, created_at=now, updated_at=now,
        )
        _write(source, upload, chunks)
    return Written(source, changed=True)


def replace_source(*, source_id: str, upload: Upload, now: datetime) -> Written:
    """
    Make `upload` the source's next version; its old version's passages leave the search in the same transaction.

    The same title, format and bytes as the current version change nothing (a changed `url` is
    kept without a new version: passages do not carry it).
    :raises NotFound: no such live source
    :raises UnreadableFile: small content that cannot be read (nothing is written)
    """
    chunks = _chunks(upload)
    digest = upload.hash
    with transaction.atomic():
        source = _locked(source_id)
        if source.content_hash == digest:
            if source.url != upload.url:
                source.url, source.updated_at = upload.url, now
                source.save(update_fields=["url", "updated_at"])
            return Written(source, changed=False)
        source.title, source.url, source.format, source.content_hash = upload.title, upload.url, upload.format, digest
        source.version += 1
        source.status, source.reason, source.chunks, source.updated_at = "indexing", "", 0, now
        source.pending, source.claimed_until = (None if chunks is not None else upload.content), None
        source.save(update_fields=["title", "url", "format", "content_hash", "version", "status", "reason", "chunks",
                                   "updated_at", "pending", "claimed_until"])
        if chunks is None:
            # Searchable is only what the current version says: the old text goes now, the new when it is read.
            source.passages.all().delete()
        _write(source, upload, chunks)
    return Written(source, changed=True)


def delete_source(*, source_id: str, now: datetime) -> None:
    """
    Delete a source: its passages leave the search in this transaction, and its pending content goes.

    :raises NotFound: no such live source
    """
    with transaction.atomic():
        source = _locked(source_id)
        source.passages.all().delete()
        source.deleted_at, source.updated_at, source.pending, source.claimed_until = now, now, None, None
        source.chunks = 0
        source.save(update_fields=["deleted_at", "updated_at", "pending", "claimed_until", "chunks"])


def _locked(source_id: str) -> Source:
    key = parse_id(source_id)
    source = None if key is None else (
        Source.objects.select_for_update(no_key=True).defer("pending").filter(pk=key, deleted_at__isnull=True).first()
    )
    if source is None:
        raise NotFound("no such knowledge source")
    return source
