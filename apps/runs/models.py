from __future__ import annotations

from django.db import models


class WorkflowLog(models.Model):
    """The `workflow_logs` store: one run (the persisted execution state of a turn)."""

    run_id = models.CharField(primary_key=True, max_length=40)
    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="runs")
    turn_id = models.CharField(max_length=40, unique=True)
    mode = models.CharField(max_length=20, default="agent")
    status = models.CharField(max_length=20)  # running | waiting | completed | interrupted | failed | expired
    pending = models.JSONField(default=list)
    usage = models.JSONField(default=dict)
    progress = models.JSONField(default=list)
    rounds = models.PositiveIntegerField(default=0)
    quarantined = models.BooleanField(default=False)
    edge = models.CharField(max_length=20, blank=True)
    caller = models.CharField(max_length=300, blank=True)
    directives = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    dispatched_seq = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "workflow_logs"
        indexes = [
            models.Index(fields=["conversation", "dispatched_seq"], name="run_by_dispatch"),
            models.Index(fields=["status"], name="run_by_status"),
        ]


class ToolUsageLog(models.Model):
    """The `tool_usage_logs` store: client-tool calls, approvals and questions, and their answers."""

    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="tool_usage")
    run_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=100)
    turn_id = models.CharField(max_length=40)
    kind = models.CharField(max_length=20)  # client_tool | approval | question
    tool = models.CharField(max_length=100)
    arguments = models.JSONField(default=dict)
    status = models.CharField(max_length=20)  # pending | answered | approved | denied | expired
    output = models.JSONField(null=True)
    answered_by = models.CharField(max_length=300, blank=True)
    requested_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True)
    accepted_seq = models.PositiveIntegerField(null=True)
    expires_at = models.DateTimeField(null=True)
    # An approval of a re-attempt: {"turn_id", "call_id", "attempted_at"} of the first attempt, else {}.
    reattempt_of = models.JSONField(default=dict)
    # An approval's `approver` (staff | any; empty for the customer) and the arguments it may change (PRODUCT.md
    # "Approvals: expiry, edits, approvers"); `expires_at` above is when it expires, if ever.
    approver = models.CharField(max_length=20, blank=True)
    editable = models.JSONField(default=list)

    class Meta:
        db_table = "tool_usage_logs"
        constraints = [models.UniqueConstraint(fields=["run_id", "call_id"], name="tool_usage_unique_call")]
        indexes = [models.Index(fields=["approver", "status"], name="usage_by_approver")]
