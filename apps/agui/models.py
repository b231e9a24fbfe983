from __future__ import annotations

from django.db import models


class Thread(models.Model):
    """
    An AG-UI thread that is not a conversation id: the conversation its first request started.

    Written in the transaction of that first turn, so a thread never names a conversation whose
    turn did not commit, and a retried first request finds the conversation instead of a second one.
    """

    thread_id = models.CharField(primary_key=True, max_length=200)
    conversation = models.OneToOneField("conversations.Conversation", on_delete=models.CASCADE, related_name="agui_thread")
    created_at = models.DateTimeField()

    class Meta:
        db_table = "agui_threads"
