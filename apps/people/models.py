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


class StaffProfile(models.Model):
    """
    What a staff member sets for themselves in the panel: the name customers see, and whether they are away.

    Keyed by the staff persona (`staff:<login>`), as the log names them; a member without a row
    has no display name and is not away.
    """

    staff = models.CharField(primary_key=True, max_length=300)
    display_name = models.CharField(max_length=200, blank=True)
    away = models.BooleanField(default=False)
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "staff_profiles"

    def __str__(self) -> str:
        return self.display_name or self.staff


class StaffPresence(models.Model):
    """
    One staff panel page with a live socket: the member is online while one of theirs was seen lately.

    A socket's row goes when it closes; a process that dies leaves rows that simply stop being
    seen (`apps/people/presence.py` SEEN_WITHIN), so presence needs no clean shutdown.
    """

    channel = models.CharField(primary_key=True, max_length=200)
    staff = models.CharField(max_length=300)
    seen_at = models.DateTimeField()
    active_at = models.DateTimeField()  # the last sign of a person at the page (a key, a click, a scroll)

    class Meta:
        db_table = "staff_presence"
        indexes = [models.Index(fields=["seen_at"], name="presence_seen")]

    def __str__(self) -> str:
        return f"{self.staff} {self.channel}"
