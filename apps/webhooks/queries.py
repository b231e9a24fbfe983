"""Reading the endpoints: those that receive events, one by its id, and an endpoint's latest deliveries."""

from __future__ import annotations

import uuid

from apps.webhooks.models import WebhookDelivery, WebhookEndpoint


def live() -> list[WebhookEndpoint]:
    """The endpoints not deleted, oldest first."""
    return list(WebhookEndpoint.objects.filter(deleted_at__isnull=True).order_by("created_at"))


def find(endpoint_id: str) -> WebhookEndpoint | None:
    """Return the endpoint of an id, or None for an unknown, deleted or malformed one."""
    try:
        return WebhookEndpoint.objects.filter(pk=uuid.UUID(str(endpoint_id)), deleted_at__isnull=True).first()
    except ValueError:
        return None


def recent(endpoint: WebhookEndpoint, limit: int = 50) -> list[WebhookDelivery]:
    """The endpoint's latest deliveries, newest first."""
    return list(endpoint.deliveries.order_by("-id")[:limit])
