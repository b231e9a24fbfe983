"""The reads of knowledge: sources for the API and the panel, and the search the model and the panel use."""

from __future__ import annotations

import json
import uuid
from typing import Any

from apps.knowledge import statements
from apps.knowledge.models import Source, passage_id
from apps.knowledge.passages import terms
from apps.knowledge.spelling import correctable, corrections
from apps.knowledge.synonyms import synonyms
from apps.ledger.sql import database

MAX_LIMIT = 50


def parse_id(value: str) -> uuid.UUID | None:
    """A source id as a UUID, or None for anything that is not one."""
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def live_sources() -> list[Source]:
    """The sources that are not deleted, newest first."""
    return list(Source.objects.defer("pending").filter(deleted_at__isnull=True).order_by("-created_at", "-id"))


def live_source(source_id: str) -> Source | None:
    key = parse_id(source_id)
    if key is None:
        return None
    return Source.objects.defer("pending").filter(pk=key, deleted_at__isnull=True).first()


def source_out(source: Source) -> dict[str, Any]:
    """A source as the API and the panel show it."""
    out: dict[str, Any] = {
        "id": str(source.id), "title": source.title, "format": source.format, "version": source.version,
        "status": source.status, "chunks": source.chunks, "created_at": source.created_at.isoformat(),
        "updated_at": source.updated_at.isoformat(),
    }
    if source.url:
        out["url"] = source.url
    if source.status == "failed":
        out["reason"] = source.reason
    return out


def search(query: str, *, sources: list[str] | None = None, limit: int = 5) -> list[dict[str, Any]]:
    """
    Find the passages that best answer a customer's question, best first.

    Keyword ranking on the question's terms without its stop words and question words, any of
    which may match (docs/knowledge.md, "Search"); a word no passage holds is searched as the
    index's terms within one edit of it (a misspelling). Only current versions of live, ready
    sources; `sources` keeps to those ids (None: all; ids that name no source match nothing). One
    statement for the misspellings, one for the search.
    Each passage is the contract's: `passage_id`, `source_id`, `title`, `version`, `text`, `score`,
    and `url` and `anchor` when it has them.
    """
    words = terms(query)
    limit = max(1, min(int(limit), MAX_LIMIT))
    if not words:
        return []
    db = database()
    vendor = db.vendor
    keys = None
    if sources is not None:
        keys = [key for key in map(parse_id, sources) if key is not None]
        if not keys:
            return []
    # A word of the synonym list is a word, not a misspelling: its group is searched instead.
    extra = synonyms(words)
    words, fixed = _spelt(db, words, known=extra)
    words += extra
    if not words and not fixed:
        return []
    if vendor == "postgresql":
        params: list[Any] = [words, fixed]
        if keys is not None:
            params.append([str(k) for k in keys])
        params += [limit + statements.SLACK, limit]
    else:
        params = [" OR ".join(f'"{word}"' for word in [*words, *fixed])]
        if keys is not None:
            params.append(json.dumps([k.hex for k in keys]))
        params.append(limit)
    with db.cursor() as cursor:
        cursor.execute(statements.search(vendor, only=sources is not None), params)
        rows = cursor.fetchall()
    return [_passage(row) for row in rows]


def _spelt(db, words: list[str], *, known: list[str]) -> tuple[list[str], list[str]]:
    """
    The words some passage holds, and the index's terms found for the others (apps/knowledge/spelling.py).

    A word with synonyms (`known`: them) is no misspelling: it is neither corrected nor dropped.
    """
    listed = {w for w in words if synonyms([w])} if known else set()
    asked = [w for w in words if correctable(w) and w not in listed]
    if not asked:
        return words, []
    vocabularies: dict[str, list[tuple[str, int]]] = {}
    with db.cursor() as cursor:
        if db.vendor == "postgresql":
            cursor.execute(statements.UNKNOWN_POSTGRES, [asked])
            for word, term, held in cursor.fetchall():
                vocabularies.setdefault(word, []).append((term, held))
        else:
            cursor.execute(statements.UNKNOWN_SQLITE, [json.dumps(asked)])
            for (word,) in cursor.fetchall():
                cursor.execute(statements.VOCABULARY_SQLITE, [word[0], chr(ord(word[0]) + 1)])
                vocabularies[word] = cursor.fetchall()
    if not vocabularies:
        return words, []
    fixed: list[str] = []
    for word, vocabulary in vocabularies.items():
        fixed += [term for term in corrections(word, vocabulary) if term not in fixed]
    return [w for w in words if w not in vocabularies], fixed


def _passage(row: tuple) -> dict[str, Any]:
    _, source, version, ordinal, title, anchor, text, url, rank = row
    source_id = str(source if isinstance(source, uuid.UUID) else uuid.UUID(source))
    rank = max(float(rank), 0.0)
    out: dict[str, Any] = {
        "passage_id": passage_id(source_id, version, ordinal), "source_id": source_id, "title": title,
        "version": version, "text": text, "score": round(rank / (rank + 1), 4),
    }
    if url:
        out["url"] = url
    if anchor:
        out["anchor"] = anchor
    return out
