from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone


class Conversation(models.Model):
    """The `conversations` store: identity, lifecycle, metadata and message count."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    assistant = models.ForeignKey("agent.Assistant", on_delete=models.PROTECT, related_name="conversations")
    status = models.CharField(max_length=20, default="active")  # active | completed
    completed_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    message_count = models.PositiveIntegerField(default=0)
    visibility = models.CharField(max_length=20, default="private")  # private | shared
    owner = models.CharField(max_length=300, blank=True)
    last_turn_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    # Who answers the customer (PRODUCT.md "Human handoff"): agent | queued | human, and since when.
    control_mode = models.CharField(max_length=20, default="agent")
    control_staff = models.CharField(max_length=300, blank=True)  # staff:<id> while a person holds it
    control_name = models.CharField(max_length=200, blank=True)
    control_requested_at = models.DateTimeField(null=True, blank=True)
    control_since = models.DateTimeField(null=True, blank=True)  # null: the agent's since the conversation began
    control_reason = models.TextField(blank=True)
    # The address a waiting customer left for the reply (`handoff_details`), while the request stands.
    control_email = models.CharField(max_length=254, blank=True)
    control_email_persona = models.CharField(max_length=300, blank=True)  # who left it: the email's link opens the conversation as them
    # The log head: not part of the projection, the pointer batch one checks against.
    head_seq = models.PositiveIntegerField(default=0)
    head_hash = models.CharField(max_length=64, default="0" * 64)

    class Meta:
        db_table = "conversations"
        indexes = [
            models.Index(fields=["-created_at"], name="conversation_recent"),
            # The staff queue "Waiting for a person": the few queued conversations, oldest request first.
            models.Index(fields=["control_mode", "control_requested_at"], name="conversation_by_control"),
        ]

    def __str__(self) -> str:
        return f"conv-{self.id}"

    @property
    def partition(self) -> str:
        return f"conv-{self.id}"


class ChatMessage(models.Model):
    """The `chat_messages` store: actual user and assistant messages, nothing else."""

    id = models.CharField(primary_key=True, max_length=40)
    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="messages")
    turn_id = models.CharField(max_length=40)
    role = models.CharField(max_length=20)  # user | assistant | staff (a person's reply under handoff)
    text = models.TextField()
    author = models.CharField(max_length=300, blank=True)
    author_name = models.CharField(max_length=200, blank=True)  # a staff author's name as they gave it
    # The passages an assistant's reply cites (PRODUCT.md "Knowledge"): [] for every other message.
    citations = models.JSONField(default=list, blank=True)
    # The reply's searches found nothing and the assistant offers a person with it (`no_answer`).
    offer_handoff = models.BooleanField(default=False)
    seq = models.PositiveIntegerField()
    created_at = models.DateTimeField()

    class Meta:
        db_table = "chat_messages"
        indexes = [models.Index(fields=["conversation", "seq"], name="message_by_seq")]


class ControlChange(models.Model):
    """A change of control as the transcript shows it ("Dana joined"): one per handoff entry of the log."""

    id = models.CharField(primary_key=True, max_length=60)  # <conversation id>:<seq>
    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="control_changes")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)  # handoff_requested | control_taken | control_returned | handoff_timed_out | handoff_cancelled
    staff = models.CharField(max_length=300, blank=True)
    name = models.CharField(max_length=200, blank=True)
    text = models.TextField(blank=True)  # the request's reason, the hand-back note or the message the customer was shown
    created_at = models.DateTimeField()

    class Meta:
        db_table = "control_changes"
        indexes = [models.Index(fields=["conversation", "seq"], name="control_change_by_seq")]


class StaffNote(models.Model):
    """An internal note (`staff_note`): only the staff panel shows it; no customer state and no model history reads it."""

    id = models.CharField(primary_key=True, max_length=40)
    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="staff_notes")
    seq = models.PositiveIntegerField()
    text = models.TextField()
    staff = models.CharField(max_length=300)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "staff_notes"
        indexes = [models.Index(fields=["conversation", "seq"], name="staff_note_by_seq")]


def token_expiry() -> datetime:
    """When a token issued now expires unless it is used (WAYPOINT_TOKEN_MAX_AGE_DAYS)."""
    return timezone.now() + timedelta(days=settings.WAYPOINT_TOKEN_MAX_AGE_DAYS)


class ConversationToken(models.Model):
    """A revocable grant of one persona's access to one conversation (the `?token=` of a link)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="tokens")
    persona = models.CharField(max_length=300)
    edge = models.CharField(max_length=20, default="link")
    permissions = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(default=token_expiry)  # renewed while in use (tokens.resolve)


class Lease(models.Model):
    """
    The single-writer lease of a conversation across server processes.

    `version` increases on every acquisition; writes made under a lease check it (a fencing token),
    so a process whose lease expired cannot append after another took over.
    """

    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, primary_key=True, related_name="lease")
    holder = models.CharField(max_length=100, blank=True)
    version = models.PositiveBigIntegerField(default=0)
    expires_at = models.DateTimeField(null=True, blank=True)


class IdempotencyRecord(models.Model):
    """The response given to the first request that carried an `Idempotency-Key`."""

    scope = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, null=True)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scope", "key"], name="idempotency_unique_key")]


class EmailFollowUp(models.Model):
    """
    A person's reply to go out by email, to the address the customer left while waiting for one.

    Written in the reply's own transaction (an outbox, as webhook deliveries are), so a reply that
    committed is sent even if the process dies first; sent at least once, by whichever process
    claims it (`apps/agent/followups.py`).
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.PROTECT, related_name="email_follow_ups")
    message_id = models.CharField(max_length=40, unique=True)
    to = models.CharField(max_length=254)
    persona = models.CharField(max_length=300)  # who left the address: the link in the email opens the conversation as them
    name = models.CharField(max_length=200, blank=True)  # the person who replied, as the customer knows them
    text = models.TextField()
    origin = models.CharField(max_length=300, blank=True)  # scheme://host the conversation's link starts with
    status = models.CharField(max_length=20, default="pending")  # pending | sent | failed
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "email_follow_ups"
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="follow_up_due")]

    def __str__(self) -> str:
        return f"{self.message_id} to {self.to}"
