"""
Hybrid search's half of meaning: passages and questions as embeddings, and the fusion of rankings.

With WAYPOINT_EMBEDDINGS_BASE_URL (any OpenAI-compatible `/v1/embeddings`), each passage gets an
embedding after it is committed, from the indexer thread: the work is driven from the committed
passages that lack one, like the pending sources, so it survives a restart and a server that is
down for a while (the passages are embedded when it answers again). Until a passage has its
embedding, and whenever the embeddings server fails to answer a question, search is keyword
search alone: never slower than the timeout, never empty because of it.

The meaning ranking orders the keyword search's best CANDIDATES by cosine similarity to the
question, computed here exactly: PostgreSQL here has no vector index (pgvector), and SQLite none
at all. The two rankings are fused by reciprocal rank fusion (RRF_K 60, the usual constant).
"""

from __future__ import annotations

import logging
import math
from array import array

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef

from apps.knowledge.models import Embedding, Passage

log = logging.getLogger(__name__)

CANDIDATES = 50
RRF_K = 60
BATCH = 16
# A question waits at most this for its embedding, then is answered by keyword search alone.
QUESTION_TIMEOUT_SECONDS = 3.0
MAX_INPUT_CHARS = 2000  # about 512 tokens: what the small embedding models take


class Unavailable(Exception):
    """The embeddings server did not answer as the API says it does."""


class Refused(Unavailable):
    """The embeddings server answered that it cannot take an input (400, 413, 422): not a server that is down."""

# The answers of a server that is up and refuses what it was sent; any other failure may pass.
REFUSALS = (400, 413, 422)


def configured() -> bool:
    return bool(settings.WAYPOINT_EMBEDDINGS_BASE_URL)


def embed(texts: list[str], *, timeout: float | None = None) -> list[list[float]]:
    """
    The embeddings of `texts`, in order, from the configured server (within `timeout`, or the setting's).

    :raises Unavailable: it could not be reached, answered an error, or answered something else
    """
    headers = {"authorization": f"Bearer {settings.WAYPOINT_EMBEDDINGS_API_KEY}"} if settings.WAYPOINT_EMBEDDINGS_API_KEY else {}
    try:
        answer = httpx.post(
            settings.WAYPOINT_EMBEDDINGS_BASE_URL.rstrip("/") + "/embeddings",
            json={"model": settings.WAYPOINT_EMBEDDINGS_MODEL, "input": [t[:MAX_INPUT_CHARS] for t in texts]},
            headers=headers, timeout=timeout or settings.WAYPOINT_EMBEDDINGS_TIMEOUT_SECONDS,
        )
        if answer.status_code in REFUSALS:
            raise Refused(f"{answer.status_code} for {len(texts)} inputs")
        answer.raise_for_status()
        data = sorted(answer.json()["data"], key=lambda item: item["index"])
        vectors = [[float(x) for x in _flat(item["embedding"])] for item in data]
    except Refused:
        raise
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise Unavailable(str(exc) or type(exc).__name__) from exc
    if len(vectors) != len(texts) or not all(vectors):
        raise Unavailable(f"{len(vectors)} embeddings for {len(texts)} inputs")
    return vectors


def _flat(embedding: list) -> list:
    # llama.cpp's server answers one vector per token for a model without pooling: their mean.
    if embedding and isinstance(embedding[0], list):
        return [sum(column) / len(embedding) for column in zip(*embedding, strict=True)]
    return embedding


def pack(vector: list[float]) -> bytes:
    return array("f", vector).tobytes()


def unpack(data: bytes) -> list[float]:
    out = array("f")
    out.frombytes(bytes(data))
    return out.tolist()


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine similarity; 0 for vectors of different lengths (another model's) or of no length."""
    if len(a) != len(b):
        return 0.0
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else 0.0


def fuse(keyword: list[int], meaning: list[int]) -> list[tuple[int, float]]:
    """
    Reciprocal rank fusion of two rankings of ids, best first: each id scores the sum of
    1 / (RRF_K + rank) over the rankings it is in. Pure.
    """
    scores: dict[int, float] = {}
    for ranking in (keyword, meaning):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], keyword.index(item[0]) if item[0] in keyword else 0))


def meaning_ranking(question: str, ids: list[int]) -> list[int]:
    """
    `ids` (the keyword search's candidates) that have an embedding, by similarity to `question`.

    :raises Unavailable: the question could not be embedded
    """
    vectors = dict(Embedding.objects.filter(passage_id__in=ids, model=settings.WAYPOINT_EMBEDDINGS_MODEL)
                   .exclude(vector=b"").values_list("passage_id", "vector"))
    if not vectors:
        return []
    asked = embed([question], timeout=min(QUESTION_TIMEOUT_SECONDS, settings.WAYPOINT_EMBEDDINGS_TIMEOUT_SECONDS))[0]
    similarity = {key: cosine(asked, unpack(vector)) for key, vector in vectors.items()}
    return sorted(similarity, key=lambda key: -similarity[key])


def embed_pending(*, limit: int | None = None) -> int:
    """
    Embed committed passages that have no embedding by the configured model; how many were embedded.

    Reads and calls the server with no transaction open, then writes each batch in one, keeping
    only the passages that still exist (a PUT or DELETE may have taken them meanwhile). Stops at
    the first failure of the server: the rest wait for the next pass. A batch the server refuses
    is sent again passage by passage, and a passage refused alone is kept with an empty vector, so
    that it is neither asked again nor holds up the passages after it; search finds it by its words.
    """
    if not configured():
        return 0
    model, done = settings.WAYPOINT_EMBEDDINGS_MODEL, 0
    lacking = Passage.objects.filter(~Exists(Embedding.objects.filter(passage=OuterRef("pk"), model=model)))
    while limit is None or done < limit:
        batch = list(lacking.order_by("id").values_list("id", "title", "anchor", "text")[:BATCH])
        if not batch:
            break
        try:
            vectors = _embedded(batch)
        except Unavailable as exc:
            log.warning("knowledge embeddings: the server did not answer (%s); %d passages wait", exc, len(batch))
            break
        with transaction.atomic():
            alive = set(Passage.objects.select_for_update(no_key=True).filter(id__in=[key for key, *_ in batch])
                        .values_list("id", flat=True))
            Embedding.objects.bulk_create(
                [Embedding(passage_id=key, model=model, vector=pack(v) if v else b"")
                 for (key, *_), v in zip(batch, vectors, strict=True) if key in alive],
                update_conflicts=True, unique_fields=["passage"], update_fields=["model", "vector"],
            )
        done += sum(1 for v in vectors if v)
    return done


def _embedded(batch: list[tuple]) -> list[list[float]]:
    """The embeddings of a batch of passages, [] for each one the server refuses on its own."""
    texts = ["\n".join(part for part in (title, anchor, text) if part) for _, title, anchor, text in batch]
    try:
        return embed(texts)
    except Refused:
        if len(texts) == 1:
            log.warning("knowledge embeddings: the server refuses passage %s; it is found by its words only", batch[0][0])
            return [[]]
    return [vector for one in batch for vector in _embedded([one])]
