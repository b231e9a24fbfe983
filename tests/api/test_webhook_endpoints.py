"""The webhook endpoints API (PRODUCT.md "Outgoing webhooks"): register, list, delete, test, deliveries, retry."""

from __future__ import annotations

import pytest
from django.test import override_settings
from standardwebhooks.webhooks import Webhook

from apps.webhooks import delivery
from apps.webhooks.models import WebhookDelivery
from tests.fakes.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


def delete(api, path):
    return api.client.delete(path, headers=api._headers(None))


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
def test_an_endpoint_is_registered_tested_listed_retried_and_deleted(api, receiver):
    made = api.post("/v1/webhook-endpoints", {"url": receiver.url, "events": ["turn.completed"], "description": "shop"})
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["secret"].startswith("whsec_") and body["events"] == ["turn.completed"] and body["enabled"] is True
    listed = api.get("/v1/webhook-endpoints").json()
    assert [e["id"] for e in listed] == [body["id"]] and "secret" not in listed[0]

    tested = api.post(f"/v1/webhook-endpoints/{body['id']}/test")
    assert tested.status_code == 202
    delivery.deliver_due()
    [got] = receiver.deliveries
    event = Webhook(body["secret"]).verify(got["body"], {k.lower(): v for k, v in got["headers"].items()})
    assert event["type"] == "webhook.test"

    api.start("hello there")
    deliveries = api.get(f"/v1/webhook-endpoints/{body['id']}/deliveries").json()
    assert [d["type"] for d in deliveries] == ["turn.completed", "webhook.test"]  # newest first
    assert deliveries[0]["status"] == "pending" and deliveries[1]["status"] == "delivered"
    assert deliveries[1] | {} == {"id": tested.json()["id"], "type": "webhook.test", "status": "delivered", "attempts": 1,
                                  "last_status_code": 200, "next_attempt_at": None}

    again = api.post(f"/v1/webhook-endpoints/{body['id']}/deliveries/{deliveries[1]['id']}/retry")
    assert again.status_code == 202
    delivery.deliver_due()
    ids = [d["headers"]["webhook-id"] for d in receiver.deliveries]
    assert ids.count(deliveries[1]["id"]) == 2

    assert delete(api, f"/v1/webhook-endpoints/{body['id']}").status_code == 204
    assert api.get("/v1/webhook-endpoints").json() == []
    sent = len(receiver.deliveries)
    api.start("after the delete")
    WebhookDelivery.objects.update(next_attempt_at="2000-01-01T00:00:00Z")
    delivery.deliver_due()
    assert len(receiver.deliveries) == sent
    assert delete(api, f"/v1/webhook-endpoints/{body['id']}").status_code == 404


@pytest.mark.parametrize("body", [
    {"url": "https://127.0.0.1/hook"},
    {"url": "https://10.0.0.8/hook"},
    {"url": "http://example.com/hook"},
    {"url": "not a url"},
    {"url": "https://example.com/hook", "events": ["turn.finished"]},
])
def test_a_bad_url_an_unknown_type_or_a_private_address_is_422(api, body):
    answer = api.post("/v1/webhook-endpoints", body)
    assert answer.status_code == 422, answer.content
    assert answer.json()["error"]["code"] == "invalid_request"


def test_unknown_ids_are_404_and_tokens_are_refused(api):
    assert api.post("/v1/webhook-endpoints/nope/test").status_code == 404
    assert api.get("/v1/webhook-endpoints/00000000-0000-0000-0000-000000000000/deliveries").status_code == 404
    assert api.as_(None).get("/v1/webhook-endpoints").status_code == 401
