"""`/v1/webhook-endpoints/…`: the endpoints that receive signed event deliveries, and their deliveries (docs/webhooks.md)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Path, Router, Schema
from ninja.responses import Status
from pydantic import Field

from apps.api.operations import BAD, ERRORS, principal_of
from apps.api.schemas import ErrorOut
from apps.conversations.errors import NotFound
from apps.webhooks import endpoints
from apps.webhooks import queries as webhook_queries

router = Router()

EndpointId = Path(..., description="the endpoint id (UUID); unknown or deleted ids are 404")


class WebhookEndpointIn(Schema):
    url: str = Field(..., max_length=2000, description="https URL that receives the events; no user name or "
                     "password (deliveries are authenticated by their signature)")
    events: list[str] | None = Field(None, max_length=20, description="event types to send; absent or empty: all")
    description: str = Field("", max_length=500)


class WebhookEndpointOut(Schema):
    id: str
    url: str
    events: list[str]
    enabled: bool
    description: str


class WebhookEndpointCreatedOut(WebhookEndpointOut):
    secret: str = Field(..., description="`whsec_<base64>`, the signing secret; shown this once")


class WebhookDeliveryOut(Schema):
    id: str = Field(..., description="the `webhook-id` header of every attempt")
    type: str
    status: str = Field(..., description="pending | delivered | failed")
    attempts: int
    last_status_code: int | None
    next_attempt_at: str | None


class AcceptedOut(Schema):
    accepted: bool = True
    id: str = Field(..., description="the delivery's `webhook-id`")


def _endpoint(request: HttpRequest, endpoint_id: str):
    principal_of(request).require_api_key()
    found = webhook_queries.find(endpoint_id)
    if found is None:
        raise NotFound("no such webhook endpoint")
    return found


def _endpoint_out(endpoint) -> dict[str, Any]:
    return {"id": str(endpoint.id), "url": endpoint.url, "events": endpoint.event_types, "enabled": endpoint.enabled,
            "description": endpoint.description}


@router.post(
    "/webhook-endpoints", response={201: WebhookEndpointCreatedOut, frozenset(BAD | {401, 403, 429}): ErrorOut},
    summary="Register a webhook endpoint", tags=["webhooks"],
)
def create_webhook_endpoint(request: HttpRequest, payload: WebhookEndpointIn):
    """
    Register an endpoint for signed event deliveries (API key); the answer's `secret` is shown this once.

    A URL that is malformed, not https, carries a user name or password (the signature authenticates
    deliveries), or resolves to an address that is not global unicast, or an unknown event type → 422.
    """
    principal_of(request).require_api_key()
    endpoint = endpoints.create(url=payload.url, events=payload.events, description=payload.description)
    return Status(201, {**_endpoint_out(endpoint), "secret": endpoint.secret})


@router.get(
    "/webhook-endpoints", response={200: list[WebhookEndpointOut], frozenset({401, 403, 429}): ErrorOut},
    summary="List the webhook endpoints", tags=["webhooks"],
)
def list_webhook_endpoints(request: HttpRequest):
    """The registered endpoints, oldest first, without their secrets (API key)."""
    principal_of(request).require_api_key()
    return [_endpoint_out(e) for e in webhook_queries.live()]


@router.delete(
    "/webhook-endpoints/{endpoint_id}", response={204: None, frozenset(ERRORS): ErrorOut},
    summary="Delete a webhook endpoint", tags=["webhooks"],
)
def delete_webhook_endpoint(request: HttpRequest, endpoint_id: str = EndpointId):
    """Nothing more is sent to it; its pending deliveries end as failed."""
    endpoints.delete(_endpoint(request, endpoint_id))
    return Status(204, None)


@router.post(
    "/webhook-endpoints/{endpoint_id}/test", response={202: AcceptedOut, frozenset(ERRORS): ErrorOut},
    summary="Send a webhook.test event", tags=["webhooks"],
)
def test_webhook_endpoint(request: HttpRequest, endpoint_id: str = EndpointId):
    """Queue a `webhook.test` delivery to the endpoint; it is sent like any other, with retries."""
    made = endpoints.send_test(_endpoint(request, endpoint_id))
    return Status(202, {"accepted": True, "id": made.webhook_id})


def _delivery_out(d) -> dict[str, Any]:
    return {"id": d.webhook_id, "type": d.type, "status": d.status, "attempts": d.attempts,
            "last_status_code": d.last_status_code,
            "next_attempt_at": d.next_attempt_at.isoformat() if d.next_attempt_at and d.status == "pending" else None}


@router.get(
    "/webhook-endpoints/{endpoint_id}/deliveries",
    response={200: list[WebhookDeliveryOut], frozenset(ERRORS): ErrorOut},
    summary="List an endpoint's deliveries", tags=["webhooks"],
)
def list_webhook_deliveries(request: HttpRequest, endpoint_id: str = EndpointId):
    """The endpoint's latest deliveries, newest first; `id` is the `webhook-id` of every attempt."""
    return [_delivery_out(d) for d in webhook_queries.recent(_endpoint(request, endpoint_id))]


@router.post(
    "/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/retry",
    response={202: AcceptedOut, frozenset(ERRORS): ErrorOut},
    summary="Send a delivery again", tags=["webhooks"],
)
def retry_webhook_delivery(
    request: HttpRequest, endpoint_id: str = EndpointId, delivery_id: str = Path(..., description="the delivery's `webhook-id`"),
):
    """Send the delivery again now, with the same `webhook-id`."""
    endpoint = _endpoint(request, endpoint_id)
    delivery = endpoint.deliveries.filter(webhook_id=delivery_id).first()
    if delivery is None:
        raise NotFound("no such delivery for this endpoint")
    endpoints.retry(delivery)
    return Status(202, {"accepted": True, "id": delivery.webhook_id})
