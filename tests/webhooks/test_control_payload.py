"""A handoff webhook's `control` is the state's `control` right after its entry, whole."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agent import handoff
from apps.agent.state import conversation_state
from apps.conversations.models import Conversation
from apps.webhooks import delivery, endpoints
from apps.webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

HANDOFF_TYPES = ["handoff.requested", "handoff.accepted", "handoff.returned", "handoff.timed_out"]


@pytest.fixture(autouse=True)
def endpoint(settings):
    settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE = True
    return endpoints.create(url="http://127.0.0.1:9/hooks", events=HANDOFF_TYPES)


def announced() -> list[dict]:
    """The bodies the outbox holds for sending, in the order of the log."""
    return [json.loads(delivery.envelope(d)) for d in WebhookDelivery.objects.order_by("seq")]


def control_now(cid: str) -> dict:
    return conversation_state(Conversation.objects.get(pk=cid))["control"]


class TestTheControlOfAHandoffWebhook:
    def test_a_take_over_after_a_request_sends_the_request_time_and_reason_the_state_keeps(self, start, make_assistant):
        cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
        now = timezone.now()
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", reason="a person",
                                now=now)
        requested = control_now(cid)

        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=now + timedelta(seconds=5))
        taken = control_now(cid)

        events = announced()
        assert [e["type"] for e in events] == ["handoff.requested", "handoff.accepted"]
        assert taken["requested_at"] is not None and taken["reason"] == "a person"
        assert events[0]["data"]["control"] == requested
        assert events[1]["data"]["control"] == taken

    def test_every_change_of_control_sends_the_state_it_left(self, start, make_assistant):
        cid = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
        now = timezone.now()
        controls = []

        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", reason="vip", now=now)
        controls.append(control_now(cid))
        handoff.return_control(conversation_id=cid, staff="staff:dana", note="sorted", now=now + timedelta(seconds=1))
        controls.append(control_now(cid))
        handoff.request_handoff(conversation_id=cid, source="application", requested_by="api:shop", reason="refund",
                                now=now + timedelta(seconds=2))
        controls.append(control_now(cid))
        handoff.time_out_handoffs(now=now + timedelta(hours=1))
        controls.append(control_now(cid))

        events = announced()
        assert [e["type"] for e in events] == ["handoff.accepted", "handoff.returned", "handoff.requested",
                                               "handoff.timed_out"]
        assert [e["data"]["control"] for e in events] == controls


class TestWhatARequestWasPromised:
    def test_handoff_requested_says_whether_staff_were_online_and_within_hours(self, start, make_assistant):
        from apps.people import presence

        closed = {"time_zone": "UTC", "weekly": {}, "closed": []}
        nobody = start("hello", assistant=make_assistant(handoff={"enabled": True, "hours": closed}))["conversation_id"]
        staffed = start("hello", assistant=make_assistant(handoff={"enabled": True}))["conversation_id"]
        now = timezone.now()
        handoff.request_handoff(conversation_id=nobody, source="customer", requested_by="guest:alice", now=now)
        presence.seen("tab", "staff:dana", active=True, now=now)
        handoff.request_handoff(conversation_id=staffed, source="customer", requested_by="guest:bob", now=now)

        first, second = (e["data"] for e in announced())

        assert (first["staff_online"], first["within_hours"]) == (False, False)
        assert (second["staff_online"], second["within_hours"]) == (True, True)
