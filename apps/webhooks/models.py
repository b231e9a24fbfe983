"""The endpoints the embedding application registered, and the outbox of deliveries to them."""

from __future__ import annotations

import uuid

from django.db import models


class WebhookEndpoint(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    url = models.URLField(max_length=2000)
    # The subscribed types between commas (",turn.completed,run.failed,"), "" for all: the outbox's
    # INSERT … SELECT matches them with LIKE, the same SQL on PostgreSQL and SQLite.
    events = models.TextField(blank=True, default="")
    description = models.CharField(max_length=500, blank=True, default="")
    secret = models.CharField(max_length=200)  # whsec_<base64>; the signing key, so kept as is
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=200, blank=True, default="")
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # While an attempt to it is in flight, when that attempt's claim lapses: one attempt at a time
    # per endpoint, so a receiver that hangs holds one claim and not every sender.
    busy_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "webhook_endpoints"

    @property
    def event_types(self) -> list[str]:
        return [t for t in self.events.split(",") if t]


class WebhookDelivery(models.Model):
    """One event for one endpoint: written with the log entry that causes it, sent until it lands."""

    id = models.BigAutoField(primary_key=True)
    webhook_id = models.CharField(max_length=200, unique=True)  # the `webhook-id` of every attempt
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    type = models.CharField(max_length=60)
    conversation_id = models.CharField(max_length=64, blank=True, default="")
    assistant = models.CharField(max_length=64, blank=True, default="")
    seq = models.PositiveIntegerField(default=0)
    timestamp = models.CharField(max_length=40)  # the entry's time, ISO 8601
    data = models.TextField()  # the type's fields as JSON; conversation_id, assistant, seq added on sending
    status = models.CharField(max_length=20, default="pending")  # pending | delivered | failed
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_response = models.CharField(max_length=500, blank=True, default="")  # first bytes, or the error
    # Each attempt, oldest first: {"at", "status_code" (null: no answer), "response" (its first bytes, or the error)}.
    history = models.JSONField(default=list, blank=True)
    # When it is due; while a worker sends it, when that worker's claim lapses.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "webhook_deliveries"
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="webhook_due"),
            models.Index(fields=["endpoint", "-id"], name="webhook_recent"),
        ]
