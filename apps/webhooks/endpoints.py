"""Registering, enabling and removing endpoints, sending a test event, and sending a delivery again (reads: queries.py)."""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.actions.targets import TargetError, parse_target, private_target
from apps.conversations.errors import BadInput
from apps.webhooks import delivery as sending
from apps.webhooks.events import TYPES
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint


class EndpointRefused(BadInput):
    """The endpoint asked for cannot be registered: a bad or private URL, or an unknown event type."""


def check(url: str, events: list[str]) -> None:
    """
    Refuse an endpoint that could never be delivered to, or only to an address outgoing calls may not reach.

    The address is checked again on every attempt (`apps.actions.outgoing`).
    :raises EndpointRefused: say why
    """
    try:
        target = parse_target(url)
    except TargetError as exc:
        raise EndpointRefused(f"url refused: {exc}") from None
    if target.scheme != "https" and not settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE:
        raise EndpointRefused("url must be https")
    unknown = [t for t in events if t not in TYPES]
    if unknown:
        raise EndpointRefused(f"unknown event types: {', '.join(unknown)}")
    if not settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE:
        problem = private_target(url)
        if problem:
            raise EndpointRefused(f"url refused: {problem}")


def create(*, url: str, events: list[str] | None = None, description: str = "") -> WebhookEndpoint:
    """Register an endpoint; its `secret` is readable on the returned object (the API shows it this once)."""
    events = list(dict.fromkeys(events or []))
    check(url, events)
    secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    return WebhookEndpoint.objects.create(
        url=url, events=f",{','.join(events)}," if events else "", description=description, secret=secret
    )


def delete(endpoint: WebhookEndpoint) -> None:
    """Nothing more is sent to it: its pending deliveries fail with it."""
    with transaction.atomic():
        endpoint.deleted_at = timezone.now()
        endpoint.enabled = False
        endpoint.save(update_fields=["deleted_at", "enabled"])
        endpoint.deliveries.filter(status="pending").update(status="failed", next_attempt_at=None, last_response="the endpoint was deleted")


def set_enabled(endpoint: WebhookEndpoint, enabled: bool) -> None:
    endpoint.enabled = enabled
    endpoint.disabled_reason = "" if enabled else "disabled by staff"
    endpoint.save(update_fields=["enabled", "disabled_reason"])


def send_test(endpoint: WebhookEndpoint, *, now: datetime | None = None) -> WebhookDelivery:
    now = now or timezone.now()
    made = WebhookDelivery.objects.create(
        webhook_id=f"msg_test_{uuid.uuid4().hex}", endpoint=endpoint, type="webhook.test",
        timestamp=now.isoformat(timespec="microseconds"), data=json.dumps({}), next_attempt_at=now, created_at=now,
    )
    transaction.on_commit(sending.wake)
    return made


def retry(delivery: WebhookDelivery) -> None:
    """Send it again now, with the same webhook-id; its attempts start again."""
    delivery.status, delivery.attempts, delivery.next_attempt_at = "pending", 0, timezone.now()
    delivery.save(update_fields=["status", "attempts", "next_attempt_at"])
    transaction.on_commit(sending.wake)
