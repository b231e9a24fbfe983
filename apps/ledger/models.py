from __future__ import annotations

from django.db import models


class Event(models.Model):
    """
    One entry of a conversation's signed, hash-chained log (partition `conv-<id>`).

    Append-only: a database trigger refuses UPDATE and DELETE (see migration 0002) except inside
    `conversation repair`. Readers order by `seq`.
    """

    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="events")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    turn_id = models.CharField(max_length=40, blank=True, db_index=True)
    # Canonical JSON text, kept byte for byte as hashed: an entry whose payload no longer parses
    # is "unreadable" and only `repair` may remove it.
    payload = models.TextField()
    actor = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField()
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)
    signature = models.CharField(max_length=120)
    key_id = models.CharField(max_length=32)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation", "seq"], name="event_unique_seq")]

    def __str__(self) -> str:
        return f"conv-{self.conversation_id}#{self.seq} {self.kind}"
