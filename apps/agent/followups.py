"""
Email follow-up: a person's reply sent to the address a waiting customer left (docs/handoff.md "Email follow-up").

The rows are written with the reply (`handoff.staff_message`); `send_due` claims the due ones with
`SKIP LOCKED` (each process's housekeeping, and a wake after the reply commits in this one) and
sends them with Django's email backend: the console in `make run`, SMTP from the `EMAIL_*`
settings in production. A send that fails is tried again later, up to ATTEMPTS times.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import close_old_connections, connection, transaction
from django.urls import reverse
from django.utils import timezone

from apps.conversations import tokens
from apps.conversations.models import EmailFollowUp

log = logging.getLogger(__name__)

ATTEMPTS = 5
RETRY_AFTER = (timedelta(minutes=1), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2))


def send_due(*, now: datetime, limit: int = 20) -> int:
    """Send the follow-ups that are due; returns how many went out."""
    sent = 0
    for _ in range(limit):
        with transaction.atomic():
            row = (EmailFollowUp.objects.select_for_update(skip_locked=True)
                   .filter(status="pending", next_attempt_at__lte=now).order_by("next_attempt_at").first())
            if row is None:
                break
            row.attempts += 1
            try:
                _send(row, now=now)
            except Exception as exc:  # any backend's failure: try again later, or give up in words
                log.warning("email follow-up %s failed: %s", row.message_id, exc)
                row.last_error = str(exc)[:500]
                if row.attempts >= ATTEMPTS:
                    row.status = "failed"
                else:
                    row.next_attempt_at = now + RETRY_AFTER[min(row.attempts, len(RETRY_AFTER)) - 1]
            else:
                row.status, row.sent_at, row.last_error = "sent", now, ""
                sent += 1
            row.save(update_fields=["attempts", "status", "sent_at", "last_error", "next_attempt_at"])
    return sent


def _send(row: EmailFollowUp, *, now: datetime) -> None:
    who = row.name or "A person from the team"
    lines = [f"{who} replied to your conversation:", "", row.text, ""]
    if row.origin and row.persona:
        token = tokens.issue(conversation_id=str(row.conversation_id), persona=row.persona, edge="email", now=now)
        link = f"{row.origin}{reverse('widget:conversation', args=[row.conversation_id])}?token={token}"
        lines += ["Go on with the conversation (this link is private: it opens it as you):", link]
    send_mail(subject=f"{who} replied to you", message="\n".join(lines), from_email=settings.DEFAULT_FROM_EMAIL,
              recipient_list=[row.to])


def wake() -> None:
    """Send what just committed without waiting for the next housekeeping pass (in a thread: the request goes on)."""
    if settings.WAYPOINT_RUNNER != "thread":
        send_due(now=timezone.now())
        return
    threading.Thread(target=_send_in_thread, daemon=True, name="waypoint-follow-up").start()


def _send_in_thread() -> None:
    try:
        close_old_connections()
        send_due(now=timezone.now())
    except Exception:
        log.exception("email follow-up pass failed")
    finally:
        connection.close()
