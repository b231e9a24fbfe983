"""The outbox is written with the log entry that causes it; the workers send it signed, and retry."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import transaction
from django.test import override_settings
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from apps.conversations.models import Conversation
from apps.ledger.models import Event
from apps.webhooks import delivery, endpoints
from apps.webhooks.events import BY_KIND, TYPES
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.fakes.receiver import Receiver

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

private = override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="5,60")


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


def due_now():
    WebhookDelivery.objects.filter(status="pending").update(next_attempt_at=timezone.now())


@private
def test_every_announced_entry_has_a_delivery_per_subscribed_endpoint(start, receiver):
    everything = endpoints.create(url=receiver.url)
    replies = endpoints.create(url=receiver.url, events=["turn.completed"])
    started = start("hello there")

    cid = started["conversation_id"]
    kinds = list(Event.objects.filter(conversation_id=cid).order_by("seq").values_list("kind", "seq"))
    expected = [(BY_KIND[k][0], seq) for k, seq in kinds if k in BY_KIND]
    expected += [("message.created", seq) for k, seq in kinds if k in ("turn_dispatched", "turn_complete")]
    mine = WebhookDelivery.objects.filter(endpoint=everything).order_by("seq", "type")
    assert sorted((d.type, d.seq) for d in mine) == sorted(expected)
    assert [d.type for d in mine] == ["conversation.started", "message.created", "message.created", "turn.completed"]
    assert [d.type for d in WebhookDelivery.objects.filter(endpoint=replies)] == ["turn.completed"]
    assert all(d.assistant == str(Conversation.objects.get(pk=cid).assistant_id) for d in mine)


@private
def test_an_append_that_rolls_back_leaves_no_delivery(start, receiver):
    endpoints.create(url=receiver.url)

    with pytest.raises(RuntimeError), transaction.atomic():
        start("hello there")
        assert WebhookDelivery.objects.count() >= 1  # written in the append's transaction…
        raise RuntimeError("the caller fails after the append")

    assert WebhookDelivery.objects.count() == 0  # …and gone with it
    assert Event.objects.count() == 0


@private
def test_a_delivery_verifies_with_standardwebhooks_and_keeps_its_id(start, receiver):
    endpoint = endpoints.create(url=receiver.url, events=["turn.completed"])
    started = start("hello there")

    assert delivery.deliver_due() == 1
    [got] = receiver.deliveries
    headers = {k.lower(): v for k, v in got["headers"].items()}
    event = Webhook(endpoint.secret).verify(got["body"], headers)
    assert event["type"] == "turn.completed"
    data = event["data"]
    assert data["conversation_id"] == started["conversation_id"]
    assert data["reply"] == "You said: hello there"
    assert {"assistant", "seq", "turn_id", "run_id"} <= data.keys()
    assert isinstance(event["timestamp"], str)
    sent = WebhookDelivery.objects.get()
    assert (sent.status, sent.attempts, sent.last_status_code) == ("delivered", 1, 200)
    assert headers["webhook-id"] == sent.webhook_id

    endpoints.retry(sent)
    assert delivery.deliver_due() == 1
    assert [d["headers"]["webhook-id"] for d in receiver.deliveries] == [sent.webhook_id] * 2
    with pytest.raises(Exception):  # noqa: B017 - any verification failure
        Webhook("whsec_" + "A" * 44).verify(got["body"], headers)


@private
def test_failures_follow_the_schedule_then_fail(start, receiver):
    endpoints.create(url=receiver.url, events=["turn.completed"])
    start("hello there")
    receiver.status = 500

    before = timezone.now()
    delivery.deliver_due()
    d = WebhookDelivery.objects.get()
    assert (d.status, d.attempts, d.last_status_code) == ("pending", 1, 500)
    assert timedelta(seconds=4) < d.next_attempt_at - before < timedelta(seconds=7)
    assert delivery.deliver_due() == 0  # not due yet

    due_now()
    delivery.deliver_due()
    d.refresh_from_db()
    assert d.attempts == 2 and timedelta(seconds=55) < d.next_attempt_at - before < timedelta(seconds=65)

    due_now()
    delivery.deliver_due()
    d.refresh_from_db()
    assert (d.status, d.attempts, d.next_attempt_at) == ("failed", 3, None)
    assert len({x["headers"]["webhook-id"] for x in receiver.deliveries}) == 1


@private
def test_a_redirect_is_not_followed(start, receiver):
    endpoints.create(url=receiver.url, events=["turn.completed"])
    start("hello there")
    receiver.status = 302
    delivery.deliver_due()
    d = WebhookDelivery.objects.get()
    assert (d.status, d.last_status_code, len(receiver.deliveries)) == ("pending", 302, 1)


@private
def test_gone_disables_the_endpoint(start, receiver):
    endpoint = endpoints.create(url=receiver.url)
    start("hello there")
    receiver.status = 410

    delivery.deliver_due()

    endpoint.refresh_from_db()
    assert not endpoint.enabled
    # conversation.started, turn.completed and the two messages' message.created
    assert WebhookDelivery.objects.filter(status="failed").count() == WebhookDelivery.objects.count() == 4
    start("again")
    assert WebhookDelivery.objects.filter(status="pending").count() == 0


def test_private_addresses_unknown_types_and_plain_http_are_refused(db):
    for url, events in [
        ("https://127.0.0.1/hook", []), ("https://10.1.2.3/hook", []), ("http://example.com/hook", []),
        ("ftp://example.com/x", []), ("https://example.com/hook", ["turn.finished"]),
    ]:
        with pytest.raises(endpoints.EndpointRefused):
            endpoints.create(url=url, events=events)
    assert WebhookEndpoint.objects.count() == 0


@private
def test_a_private_address_is_refused_at_sending_when_not_allowed(start, receiver):
    endpoints.create(url=receiver.url, events=["turn.completed"])
    start("hello there")
    with override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=False):
        delivery.deliver_due()
    d = WebhookDelivery.objects.get()
    assert receiver.deliveries == [] and d.status == "pending" and d.last_response.startswith("refused")


def test_every_type_of_the_table_is_a_contract_type():
    assert {t for t, _ in BY_KIND.values()} | {"message.created", "webhook.test"} == set(TYPES)
    body = json.loads(delivery.envelope(WebhookDelivery(type="webhook.test", timestamp="t", data="{}", seq=0)))
    assert body.keys() == {"type", "timestamp", "data"} and {"conversation_id", "assistant", "seq"} <= body["data"].keys()


@private
def test_each_change_of_control_is_announced_with_the_control_after_it(start, make_assistant, receiver):
    from apps.agent import handoff

    endpoint = endpoints.create(url=receiver.url, events=["handoff.requested", "handoff.accepted", "handoff.returned",
                                                          "handoff.timed_out"])
    cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
    now = timezone.now()
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", reason="a person", now=now)
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=now)
    handoff.return_control(conversation_id=cid, staff="staff:dana", note="sorted", now=now)
    handoff.request_handoff(conversation_id=cid, source="application", requested_by="api:shop", now=now)
    handoff.time_out_handoffs(now=now + timedelta(hours=1))
    due_now()  # the timeout's entry is dated an hour on

    while delivery.deliver_due():
        pass

    events = [Webhook(endpoint.secret).verify(d["body"], {k.lower(): v for k, v in d["headers"].items()})
              for d in receiver.deliveries]
    assert [e["type"] for e in events] == ["handoff.requested", "handoff.accepted", "handoff.returned", "handoff.requested",
                                           "handoff.timed_out"]
    assert [e["data"]["control"]["mode"] for e in events] == ["queued", "human", "agent", "queued", "agent"]
    assert events[0]["data"]["reason"] == "a person" and events[0]["data"]["source"] == "customer"
    assert events[1]["data"]["control"]["staff"] == {"id": "staff:dana", "name": "Dana"}
    assert events[2]["data"]["note"] == "sorted"
    assert events[4]["data"]["reason"] == "No one is free right now; I'll keep helping."
    assert all(e["data"]["conversation_id"] == cid for e in events)


@private
def test_every_message_is_announced_with_its_author_so_a_backend_can_mirror_the_chat(start, make_assistant, receiver, clock):
    from apps.agent import actions, handoff

    endpoint = endpoints.create(url=receiver.url, events=["message.created"])
    assistant = make_assistant(handoff={"enabled": True})
    cid = start("hello there", assistant=assistant)["conversation_id"]
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())
    actions.start_turn(conversation_id=cid, message="Hello?", persona="guest:alice", edge="api", now=clock())
    handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Dana here: it ships today.", now=timezone.now())
    handoff.staff_note(conversation_id=cid, staff="staff:dana", name="Dana", text="internal only", now=timezone.now())

    while delivery.deliver_due():
        pass

    events = sorted((Webhook(endpoint.secret).verify(d["body"], {k.lower(): v for k, v in d["headers"].items()})
                     for d in receiver.deliveries), key=lambda e: e["data"]["seq"])  # delivery keeps no order
    assert {e["type"] for e in events} == {"message.created"}
    said = [(e["data"]["message"]["role"], e["data"]["message"]["author"]["kind"], e["data"]["message"]["text"]) for e in events]
    reply = Conversation.objects.get(pk=cid).messages.get(role="assistant").text
    assert said == [("user", "customer", "hello there"), ("assistant", "assistant", reply),
                    ("user", "customer", "Hello?"), ("staff", "staff", "Dana here: it ships today.")]
    assert events[1]["data"]["message"]["author"] == {"kind": "assistant", "id": f"assistant:{assistant.id}", "name": assistant.name}
    assert events[3]["data"]["message"]["author"] == {"kind": "staff", "id": "staff:dana", "name": "Dana"}
    state_messages = {m.id for m in Conversation.objects.get(pk=cid).messages.all()}
    assert {e["data"]["message"]["id"] for e in events} == state_messages
    assert len({d.webhook_id for d in WebhookDelivery.objects.filter(endpoint=endpoint)}) == 4

