from __future__ import annotations

from django.db import models


class Participant(models.Model):
    """
    The `participants` store: a persona admitted to a shared conversation, and what it may do.

    The owner is not a row here: it is the conversation's `owner`. Written only by the log's
    projection (`participant_added`, `participant_removed`).
    """

    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="participants")
    persona = models.CharField(max_length=300)
    permissions = models.JSONField(default=list)
    status = models.CharField(max_length=20)  # active | removed
    added_by = models.CharField(max_length=300, blank=True)
    added_at = models.DateTimeField()
    removed_by = models.CharField(max_length=300, blank=True)
    removed_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "participants"
        constraints = [models.UniqueConstraint(fields=["conversation", "persona"], name="participant_unique_persona")]
