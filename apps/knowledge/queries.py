"""The reads of knowledge: sources for the API and the panel, and the search the model and the panel use."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from apps.knowledge import embeddings, statements
from apps.knowledge.models import Source, passage_id
from apps.knowledge.passages import terms
from apps.knowledge.spelling import correctable, corrections, worth_correcting
from apps.knowledge.synonyms import synonyms
from apps.ledger.sql import database

MAX_LIMIT = 50
log = logging.getLogger(__name__)


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
    sources; `sources` keeps to those ids (None: all; ids that name no source match nothing). A
    statement for the question's terms and misspellings, one for the ranking.
    With WAYPOINT_EMBEDDINGS_BASE_URL it is hybrid (apps/knowledge/embeddings.py): the keyword
    search's best candidates, ranked again by their similarity to the question, the two rankings
    fused; keyword search alone when the embeddings server does not answer.
    Each passage is the contract's: `passage_id`, `source_id`, `title`, `version`, `text`, `score`,
    and `url` and `anchor` when it has them.
    """
    limit = max(1, min(int(limit), MAX_LIMIT))
    if not embeddings.configured():
        return [_passage(row) for row in _keyword(query, sources=sources, limit=limit)]
    rows = _keyword(query, sources=sources, limit=max(limit, embeddings.CANDIDATES))
    if not rows:
        return []
    try:
        meaning = embeddings.meaning_ranking(query, [row[0] for row in rows])
    except embeddings.Unavailable as exc:
        log.warning("knowledge search: the embeddings server did not answer (%s); keyword search alone", exc)
        meaning = []
    if not meaning:  # no candidate has its embedding yet, or the server is away
        return [_passage(row) for row in rows[:limit]]
    found = {row[0]: row for row in rows}
    return [_passage(found[key], fused=score) for key, score in embeddings.fuse(list(found), meaning)[:limit]]


def _keyword(query: str, *, sources: list[str] | None, limit: int) -> list[tuple]:
    """The keyword search's rows, best first (the passage's id first, its score last)."""
    words = terms(query)
    if not words:
        return []
    db = database()
    vendor = db.vendor
    keys = None
    if sources is not None:
        keys = [key for key in map(parse_id, sources) if key is not None]
        if not keys:
            return []
    # A word of the synonym list is a word, not a misspelling: its group is searched with it.
    asked = words + synonyms(words)
    maybe_misspelt = [w for w in words if correctable(w) and not synonyms([w])]
    with db.cursor() as cursor:
        if vendor == "postgresql":
            searched = _terms_postgres(cursor, asked, maybe_misspelt)
            params: list[Any] = [searched]
            if keys is not None:
                params.append([str(k) for k in keys])
            params += [limit + statements.SLACK, limit]
        else:
            searched = _terms_sqlite(cursor, asked, maybe_misspelt)
            params = [" OR ".join(f'"{term}"' for term in searched)]
            if keys is not None:
                params += [json.dumps([k.hex for k in keys]), limit]
            else:
                params += [limit + statements.SLACK, limit]
        if not searched:
            return []
        cursor.execute(statements.search(vendor, only=sources is not None), params)
        return cursor.fetchall()


def _terms_postgres(cursor, asked: list[str], maybe_misspelt: list[str]) -> list[str]:
    """The index's terms for the words `asked`, with those found near each of `maybe_misspelt` that it holds none of."""
    cursor.execute(statements.TERMS_POSTGRES, [asked, maybe_misspelt])
    found: list[str] = []
    vocabularies: dict[str, list[tuple[str, int]]] = {}
    for word, term, held, near in cursor.fetchall():
        if near:
            vocabularies.setdefault(word, []).append((term, held))
        elif term not in found:
            found.append(term)
    looked_for = worth_correcting(list(vocabularies))
    return _with_corrections(found, {word: vocabularies[word] for word in looked_for})


def _terms_sqlite(cursor, asked: list[str], maybe_misspelt: list[str]) -> list[str]:
    """
    The words `asked` that some passage holds (FTS5 stems them in the search), with the index's
    terms found near each of `maybe_misspelt` that none holds.
    """
    cursor.execute(statements.UNKNOWN_SQLITE, [json.dumps(asked)])
    unknown = {word for (word,) in cursor.fetchall()}
    looked_for = worth_correcting([w for w in maybe_misspelt if w in unknown])
    letters: dict[str, list[tuple[str, int]]] = {}
    for letter in dict.fromkeys(w[0] for w in looked_for):  # one scan of the vocabulary per letter
        cursor.execute(statements.VOCABULARY_SQLITE, [letter, chr(ord(letter) + 1)])
        letters[letter] = cursor.fetchall()
    return _with_corrections([w for w in asked if w not in unknown], {w: letters[w[0]] for w in looked_for})


def _with_corrections(found: list[str], vocabularies: dict[str, list[tuple[str, int]]]) -> list[str]:
    """`found`, and the terms within one edit of each misspelt word, from its letter's `vocabularies` (apps/knowledge/spelling.py)."""
    for word, vocabulary in vocabularies.items():
        found += [term for term in corrections(word, vocabulary) if term not in found]
    return found


def _passage(row: tuple, *, fused: float | None = None) -> dict[str, Any]:
    _, source, version, ordinal, title, anchor, text, url, rank = row
    source_id = str(source if isinstance(source, uuid.UUID) else uuid.UUID(source))
    # A fused score is put on the keyword scale's footing: 1 for first in one ranking, 2 in both.
    rank = max(float(rank), 0.0) if fused is None else fused * (embeddings.RRF_K + 1)
    out: dict[str, Any] = {
        "passage_id": passage_id(source_id, version, ordinal), "source_id": source_id, "title": title,
        "version": version, "text": text, "score": round(rank / (rank + 1), 4),
    }
    if url:
        out["url"] = url
    if anchor:
        out["anchor"] = anchor
    return out
