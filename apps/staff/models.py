from __future__ import annotations

from django.db import models


class StaffAuditLog(models.Model):
    """
    A staff change outside any conversation's log (assistants, API keys), and who made it.

    Changes to a conversation are signed events in its own log instead; this table only records
    the workspace-level ones, append-only by convention (nothing in the code updates or deletes).
    """

    actor = models.CharField(max_length=300)  # staff:<username>
    action = models.CharField(max_length=40)  # assistant_created | assistant_updated | api_key_created | api_key_revoked
    target = models.CharField(max_length=200)  # assistant:<id> | api_key:<id>
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "staff_audit_log"
        indexes = [models.Index(fields=["-created_at"], name="staff_audit_recent")]

    def __str__(self) -> str:
        return f"{self.actor} {self.action} {self.target}"

    @property
    def description(self) -> str:
        return self.action.replace("_", " ").replace("api key", "API key")


class SavedReply(models.Model):
    """A reply the team writes once and inserts with `/` in the composer (the workspace's, shared by every staff member)."""

    shortcut = models.SlugField(max_length=40, unique=True)  # what follows the "/": /refund-policy
    text = models.TextField()
    created_by = models.CharField(max_length=300)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "staff_saved_replies"
        ordering = ["shortcut"]

    def __str__(self) -> str:
        return f"/{self.shortcut}"
