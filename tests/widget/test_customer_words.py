"""What the customer reads: approvals asked of them, the queue's lines after a time-out, the widget's greeting."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agent import handoff
from apps.conversations.models import Conversation
from tests.widget.conftest import SHOP

pytestmark = pytest.mark.django_db

QUEUED = "A person will be with you shortly."


def test_an_approval_asks_the_customer_whether_the_assistant_should_do_it(started, page, make_assistant):
    from tests.conftest import SUPPORT_CONFIG

    refund = {"display_name": "Refund", "summary": "Refund ${amount} for order {order_id}", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}}
    assistant = make_assistant(tools=[{**t, **refund} if t["name"] == "issue_refund" else t for t in SUPPORT_CONFIG["tools"]])

    html = page(started("I want a refund", assistant=assistant)).content.decode()

    heading = re.search(r'<h2 id="title-[^"]+">([^<]*)</h2>', html).group(1)
    assert heading == "Shall I refund $20 for order A-1?"
    assert "Approval needed" not in html


def test_a_tool_without_a_summary_is_asked_about_by_its_name(started, page):
    html = page(started("I want a refund")).content.decode()

    assert "Shall I go ahead with “Issue refund”?" in html


def test_after_a_time_out_the_waiting_words_are_gone_and_the_request_is_a_past_line(started, page, make_assistant, staff_online):
    assistant = make_assistant(handoff={"enabled": True, "queue_timeout_seconds": 60, "queued_message": QUEUED})
    conversation = started("hello", assistant=assistant)
    asked = timezone.now()
    handoff.request_handoff(conversation_id=conversation["conversation_id"], source="customer", requested_by="guest:alice",
                            now=asked)
    waiting = page(conversation).content.decode()

    handoff.time_out_handoffs(now=asked + timedelta(seconds=61))

    after = page(conversation).content.decode()
    assert QUEUED in waiting
    assert QUEUED not in after
    assert after.index("A person was asked to join") < after.index("No one is free right now")


def test_the_widgets_greeting_stays_after_the_first_message(client, embeddable, settle):
    with settle():
        started = client.post(f"/w/{embeddable.id}/start", {"message": "hello", "embed": "1", "host": SHOP})

    html = client.get(started["Location"]).content.decode()

    conversation = Conversation.objects.get()
    assert str(conversation.id) in started["Location"]
    greeting, first = html.index("Hi! How can we help you today?"), html.index("You said: hello")
    assert greeting < first


def test_the_link_page_has_no_widget_greeting(started, page):
    assert "Hi! How can we help you today?" not in page(started("hello")).content.decode()
