"""The workspace's knowledge sources and the passages search returns (PRODUCT.md "Knowledge")."""

from __future__ import annotations

import uuid

from django.db import models

STATUSES = ("indexing", "ready", "failed")


class Source(models.Model):
    """
    One document of the team's help content, at its current version.

    A new version replaces the passages of the last in the transaction that writes it; a large one
    waits in `pending` (status `indexing`) until the indexer writes all its passages at once.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    title = models.CharField(max_length=300)
    url = models.CharField(max_length=2000, blank=True, default="")
    format = models.CharField(max_length=20)  # markdown | html | text | pdf
    version = models.PositiveIntegerField(default=1)
    status = models.CharField(max_length=20, default="indexing")  # indexing | ready | failed
    reason = models.CharField(max_length=500, blank=True, default="")  # why it failed
    content_hash = models.CharField(max_length=64)  # passages.content_hash of the current version
    chunks = models.PositiveIntegerField(default=0)  # the current version's passages
    # The current version's bytes while it waits for the indexer; cleared when it is indexed.
    pending = models.BinaryField(null=True, blank=True)
    # While an indexer works on the pending version, when its claim lapses (and another may take it).
    claimed_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "knowledge_sources"
        indexes = [
            models.Index(fields=["-created_at"], name="knowledge_newest", condition=models.Q(deleted_at__isnull=True)),
            models.Index(fields=["content_hash"], name="knowledge_by_hash", condition=models.Q(deleted_at__isnull=True)),
            models.Index(fields=["claimed_until"], name="knowledge_pending", condition=models.Q(status="indexing")),
        ]


class Passage(models.Model):
    """
    A few hundred words of one version of a source, under one heading (`anchor`, "" for none).

    `title` is the source's title, copied so that ranking weighs it without a join. The keyword
    index over title, anchor and text is the database's own, kept by triggers: on PostgreSQL a
    generated tsvector (migration 0002) whose terms are postings with BM25 weights (0003), on
    SQLite an FTS5 table (0002).
    """

    id = models.BigAutoField(primary_key=True)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="passages")
    version = models.PositiveIntegerField()
    ordinal = models.PositiveIntegerField()
    title = models.CharField(max_length=300)
    anchor = models.CharField(max_length=300, blank=True, default="")
    text = models.TextField()

    class Meta:
        db_table = "knowledge_passages"
        constraints = [models.UniqueConstraint(fields=["source", "version", "ordinal"], name="knowledge_passage_place")]

    @property
    def passage_id(self) -> str:
        return passage_id(self.source_id, self.version, self.ordinal)


def passage_id(source_id: uuid.UUID | str, version: int, ordinal: int) -> str:
    """A passage's public id: which source, which version, which place in it, so a citation names all three."""
    return f"{source_id}:{version}:{ordinal}"


class Embedding(models.Model):
    """
    A passage's embedding by one model (WAYPOINT_EMBEDDINGS_MODEL), for hybrid search.

    Written by the indexer after the passage committed; a passage never changes (a new version is
    new passages), so an embedding is never stale, and it is deleted with its passage. `vector` is
    float32s in the machine's order.
    """

    passage = models.OneToOneField(Passage, primary_key=True, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    vector = models.BinaryField()

    class Meta:
        db_table = "knowledge_embeddings"

