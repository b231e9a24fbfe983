from __future__ import annotations

from django.db import models


class Memory(models.Model):
    """
    The `memories` store: one fact the agent retains across the turns of one conversation.

    A cleared fact keeps its row (status `cleared`, text blanked) so that replay still matches; the
    model is only ever given `active` facts.
    """

    fact_id = models.CharField(primary_key=True, max_length=40)
    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="memories")
    run_id = models.CharField(max_length=40)
    turn_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=100)
    text = models.TextField()
    persona = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=20)  # active | cleared
    remembered_at = models.DateTimeField()
    cleared_by = models.CharField(max_length=300, blank=True)
    cleared_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "memories"
        indexes = [models.Index(fields=["conversation", "status"], name="memory_by_status")]


class Artifact(models.Model):
    """
    The `artifacts` store: a file a tool produced, with its source identity, content hash and
    acknowledgment state. At most one per tool call, enforced by the database.
    """

    artifact_id = models.CharField(primary_key=True, max_length=40)
    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="artifacts")
    run_id = models.CharField(max_length=40)
    turn_id = models.CharField(max_length=40)
    call_id = models.CharField(max_length=100)
    name = models.CharField(max_length=200)
    media_type = models.CharField(max_length=100)
    sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    path = models.CharField(max_length=500)
    source_identity = models.CharField(max_length=500)
    source_revision = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=20)  # created | acknowledged
    created_at = models.DateTimeField()
    acknowledged_by = models.CharField(max_length=300, blank=True)
    acknowledged_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "artifacts"
        constraints = [models.UniqueConstraint(fields=["turn_id", "call_id"], name="artifact_one_per_call")]


class Closure(models.Model):
    """The `closures` store: each idle close of a conversation and, once a turn came, its reopening."""

    conversation = models.ForeignKey("conversations.Conversation", on_delete=models.PROTECT, related_name="closures")
    closed_seq = models.PositiveIntegerField()
    reason = models.CharField(max_length=20)
    closed_at = models.DateTimeField()
    last_turn_at = models.DateTimeField()
    idle_timeout_seconds = models.PositiveIntegerField()
    reopened_seq = models.PositiveIntegerField(null=True)
    reopened_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "conversation_closures"
        constraints = [models.UniqueConstraint(fields=["conversation", "closed_seq"], name="closure_unique_seq")]


class Runtime(models.Model):
    """
    The runtime record of a conversation's workspace (the analogue of a sandbox claim).

    Not part of the log's projection: it exists while the workspace is in use, is marked closed
    when the conversation is closed for being idle, and is deleted by the retention reconciler once
    it has stayed closed for the retention window. Messages, logs and events never depend on it.
    """

    conversation = models.OneToOneField(
        "conversations.Conversation", on_delete=models.CASCADE, primary_key=True, related_name="runtime"
    )
    opened_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True)

    class Meta:
        db_table = "workspace_runtimes"
        indexes = [models.Index(fields=["closed_at"], name="runtime_by_closed")]


class ApiKey(models.Model):
    """
    A workspace API key; only its SHA-256 is stored, the key itself is shown once.

    The workspace's credential, below every edge: the API authenticates with it, the staff panel
    manages it and the widget checks identities signed with it. Its table keeps the name it was
    created under.
    """

    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "api_apikey"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
