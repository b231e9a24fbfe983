from __future__ import annotations

from django.db import models


class ActionLog(models.Model):
    """The `action_logs` store: executions of linked server-side actions."""

    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="action_logs")
    run_id = models.CharField(max_length=40)
    turn_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=100)
    tool = models.CharField(max_length=100)
    action = models.CharField(max_length=40)
    arguments = models.JSONField(default=dict)
    side_effecting = models.BooleanField()
    idempotency_key = models.CharField(max_length=200)
    # started | succeeded | failed | ambiguous | interrupted | resolved_done | resolved_not_done | abandoned
    status = models.CharField(max_length=20)
    output = models.JSONField(null=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=1)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True)
    # A re-attempt of an action whose outcome was unknown: {"turn_id", "call_id", "attempted_at"}, else {}.
    reattempt_of = models.JSONField(default=dict)

    class Meta:
        db_table = "action_logs"
        constraints = [models.UniqueConstraint(fields=["turn_id", "call_id"], name="action_unique_call")]
