"""The Webhooks page adds an endpoint (its secret shown once), sends a test, deletes, and marks a failing delivery."""

from __future__ import annotations

import pytest
from django.test import override_settings

from apps.webhooks import endpoints
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)  # no name resolves on a machine without internet
def test_an_endpoint_added_in_the_panel_shows_its_secret_once(dana):
    answer = dana.post("/staff/webhooks/", {"url": "https://hooks.example.com/waypoint", "events": ["message.created", "turn.completed"],
                                            "description": "CRM mirror"})

    made = WebhookEndpoint.objects.get()
    assert answer.status_code == 201
    assert made.secret in answer.content.decode() and "it is not shown again" in answer.content.decode()
    assert made.event_types == ["message.created", "turn.completed"] and made.description == "CRM mirror"
    assert made.secret not in dana.get("/staff/webhooks/").content.decode()


def test_a_refused_endpoint_is_said_in_words_and_keeps_what_was_typed(dana):
    answer = dana.post("/staff/webhooks/", {"url": "https://127.0.0.1/hook", "events": ["turn.completed"]})

    page = answer.content.decode()
    assert answer.status_code == 422 and "Not added: url refused" in page
    assert 'value="https://127.0.0.1/hook"' in page and 'value="turn.completed" checked' in page
    assert not WebhookEndpoint.objects.exists()


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
def test_send_test_queues_a_webhook_test_and_delete_stops_the_endpoint(dana):
    endpoint = endpoints.create(url="http://127.0.0.1:9/hook")

    sent = dana.post(f"/staff/webhooks/{endpoint.id}/test", follow=True)
    assert "A webhook.test event" in sent.content.decode()
    assert WebhookDelivery.objects.get(endpoint=endpoint).type == "webhook.test"

    dana.post(f"/staff/webhooks/{endpoint.id}/delete")
    endpoint.refresh_from_db()
    assert endpoint.deleted_at is not None
    assert WebhookDelivery.objects.get(endpoint=endpoint).status == "failed"
    assert f'id="endpoint-{endpoint.id}"' not in dana.get("/staff/webhooks/").content.decode()


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True)
def test_a_delivery_that_failed_and_will_be_tried_again_looks_unlike_a_fresh_one(dana):
    endpoint = endpoints.create(url="http://127.0.0.1:9/hook")
    fresh, failing = endpoints.send_test(endpoint), endpoints.send_test(endpoint)
    WebhookDelivery.objects.filter(pk=failing.pk).update(attempts=2, last_status_code=500)

    live = dana.get("/staff/webhooks/", {"live": "1"}).content.decode()

    assert live.lstrip().startswith('<div id="endpoints"')
    assert f'<tr id="delivery-{failing.pk}" class="retrying">' in live and '<span class="badge failed">retrying</span>' in live
    assert f'<tr id="delivery-{fresh.pk}" class="">' in live


def test_each_attempt_of_a_delivery_is_kept_and_shown(dana, settings):
    from apps.webhooks import delivery

    settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
    endpoint = endpoints.create(url="http://127.0.0.1:9/hook")  # nothing listens: each attempt gets no answer
    sent = endpoints.send_test(endpoint)
    for code, text in ((None, "connection refused"), (503, "busy"), (200, "ok")):
        claimed = delivery.Claim(delivery=WebhookDelivery.objects.get(pk=sent.pk), until=None)
        delivery.record(claimed, delivery.Answer(status_code=code, text=text))

    row = WebhookDelivery.objects.get(pk=sent.pk)
    live = dana.get("/staff/webhooks/", {"live": "1"}).content.decode()

    assert [(a["status_code"], a["response"]) for a in row.history] == [(None, "connection refused"), (503, "busy"), (200, "ok")]
    assert row.status == "delivered" and row.attempts == 3
    shown = live[live.index(f'id="delivery-{sent.pk}"'):]
    assert "· no answer</li>" in shown and "· 503</li>" in shown and "· 200</li>" in shown
