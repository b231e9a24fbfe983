"""
Sending the outbox: a worker thread in every process claims due deliveries and posts them.

A claim moves the row's `next_attempt_at` past the time a send may take, in a short transaction
(`FOR UPDATE SKIP LOCKED` on PostgreSQL, so processes sharing a database never take the same
row); a worker killed mid-send leaves the row to be claimed again once that lapses, and the
receiver gets it with the same `webhook-id`. Nothing here touches a conversation or its lease.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from apps.actions.registry import private_target
from apps.conversations import faults
from apps.webhooks.models import WebhookDelivery

log = logging.getLogger(__name__)

# Seconds after each failed attempt before the next: the Standard Webhooks schedule.
DEFAULT_SCHEDULE = (5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400)
FIRST_BYTES = 200  # what the staff panel shows of an answer
READ_LIMIT = 4096  # what is read of an answer at all
RETRY_AFTER_STATUSES = {429, 502, 503, 504}

_started = threading.Event()
_wake = threading.Event()


def schedule() -> tuple[int, ...]:
    text = settings.WAYPOINT_WEBHOOK_RETRY_SCHEDULE
    return tuple(int(float(s)) for s in text.split(",") if s.strip()) if text else DEFAULT_SCHEDULE


def claim_window() -> timedelta:
    return timedelta(seconds=settings.WAYPOINT_WEBHOOK_TIMEOUT_SECONDS + settings.WAYPOINT_WEBHOOK_CLAIM_MARGIN_SECONDS)


def claim() -> WebhookDelivery | None:
    """
    Take the most overdue delivery no other worker holds, for one send.

    One at a time: the claim lasts one send's time, so a row waiting behind others in a batch
    would lapse and be sent twice.
    """
    now = timezone.now()
    with transaction.atomic():
        due = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .filter(status="pending", next_attempt_at__lte=now)
            .order_by("next_attempt_at")
            .first()
        )
        if due is not None:
            WebhookDelivery.objects.filter(pk=due.pk).update(next_attempt_at=now + claim_window())
    return due


def envelope(delivery: WebhookDelivery) -> str:
    data = {"conversation_id": delivery.conversation_id, "assistant": delivery.assistant, "seq": delivery.seq}
    data.update(json.loads(delivery.data))
    return json.dumps({"type": delivery.type, "timestamp": delivery.timestamp, "data": data}, ensure_ascii=False)


def send(delivery: WebhookDelivery) -> None:
    """Make one attempt and record its outcome (delivered, due again later, or failed)."""
    endpoint = delivery.endpoint
    now = timezone.now()
    if endpoint.deleted_at is not None or not endpoint.enabled:
        _finish(delivery, "failed", None, "the endpoint is disabled" if endpoint.deleted_at is None else "the endpoint was deleted")
        return
    status_code, answer, retry_after = _post(endpoint.url, endpoint.secret, delivery, now)
    faults.reach("after_webhook_sent")
    delivery.attempts += 1
    if status_code is not None and 200 <= status_code < 300:
        _finish(delivery, "delivered", status_code, answer)
        return
    if status_code == 410:
        endpoint.enabled = False
        endpoint.disabled_reason = "the endpoint answered 410 Gone"
        endpoint.save(update_fields=["enabled", "disabled_reason"])
        _finish(delivery, "failed", status_code, answer)
        return
    waits = schedule()
    if delivery.attempts > len(waits):
        _finish(delivery, "failed", status_code, answer)
        return
    wait = waits[delivery.attempts - 1]
    if status_code in RETRY_AFTER_STATUSES and retry_after:
        wait = max(wait, retry_after)
    _finish(delivery, "pending", status_code, answer, next_attempt_at=now + timedelta(seconds=wait))


def _finish(delivery: WebhookDelivery, status: str, code: int | None, answer: str, *, next_attempt_at: datetime | None = None) -> None:
    delivery.status, delivery.last_status_code, delivery.last_response = status, code, answer[:FIRST_BYTES]
    delivery.next_attempt_at = next_attempt_at
    delivery.save(update_fields=["status", "attempts", "last_status_code", "last_response", "next_attempt_at"])


def _post(url: str, secret: str, delivery: WebhookDelivery, now: datetime) -> tuple[int | None, str, int]:
    """POST the event; return the status code (None: no answer), the answer's first bytes and its Retry-After."""
    if not settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE:
        problem = private_target(url)
        if problem:
            return None, f"refused: {problem}", 0
    body = envelope(delivery)
    headers = {
        "content-type": "application/json",
        "webhook-id": delivery.webhook_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(delivery.webhook_id, now, body),
        "user-agent": "Waypoint-Webhooks/1",
    }
    timeout = settings.WAYPOINT_WEBHOOK_TIMEOUT_SECONDS
    try:
        with (
            httpx.Client(follow_redirects=False, timeout=timeout) as client,
            client.stream("POST", url, content=body.encode(), headers=headers) as response,
        ):
            answer = _read_some(response, time.monotonic() + timeout)
            return response.status_code, answer, _retry_after(response.headers.get("retry-after", ""))
    except (httpx.HTTPError, OSError, TimeoutError) as exc:
        return None, f"no answer: {type(exc).__name__}", 0


def _read_some(response: httpx.Response, deadline: float) -> str:
    """At most READ_LIMIT bytes of the answer, within the attempt's time: a huge or endless one is cut off."""
    got = b""
    try:
        for chunk in response.iter_bytes():
            got += chunk
            if len(got) >= READ_LIMIT or time.monotonic() > deadline:
                break
    except httpx.HTTPError:
        pass
    return got[:READ_LIMIT].decode("utf-8", "replace")


def _retry_after(value: str) -> int:
    try:
        return max(0, int(value.strip()))
    except ValueError:
        return 0


def deliver_due(limit: int = 10) -> int:
    """Claim and send what is due, up to `limit` deliveries; returns how many were attempted."""
    sent = 0
    while sent < limit and (delivery := claim()) is not None:
        sent += 1
        try:
            send(delivery)
        except Exception:
            log.exception("webhook delivery %s failed", delivery.webhook_id)
    return sent


def wake() -> None:
    """Have this process's worker look now instead of at its next poll."""
    _wake.set()


def start() -> None:
    """Start this process's delivery workers (once); called when the ASGI application loads."""
    if _started.is_set() or not settings.WAYPOINT_WEBHOOK_WORKERS:
        return
    _started.set()
    for n in range(settings.WAYPOINT_WEBHOOK_WORKERS):
        threading.Thread(target=_loop, daemon=True, name=f"waypoint-webhooks-{n}").start()


def _loop() -> None:
    while True:
        sent = 0
        try:
            close_old_connections()
            sent = deliver_due()
        except Exception:
            log.exception("webhook delivery pass failed")
        finally:
            connection.close()
        if not sent:
            _wake.wait(settings.WAYPOINT_WEBHOOK_POLL_SECONDS)
            _wake.clear()
