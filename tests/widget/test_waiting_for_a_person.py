"""
The customer who asks for a person: promised one only when someone is there, told when the team is
back otherwise, their place in line, an email address for the reply, and the way back to the assistant.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone

from apps.agent import followups, handoff
from apps.conversations.models import ControlChange, Conversation, EmailFollowUp
from apps.ledger.models import Event
from apps.people import presence

pytestmark = pytest.mark.django_db

QUEUED = "A person will be with you shortly."
NEVER_OPEN = {"time_zone": "Europe/London", "weekly": {}, "closed": []}
ALWAYS_OPEN = {"time_zone": "Europe/London", "weekly": {d: ["00:00-24:00"] for d in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")}}


@pytest.fixture
def person_assistant(make_assistant):
    return make_assistant(handoff={"enabled": True, "queued_message": QUEUED, "queue_timeout_seconds": 60})


def post(client, started, what, **fields):
    return client.post(f"/c/{started['conversation_id']}/{what}", {"token": started["token"], **fields},
                       headers={"HX-Request": "true"})


def requested_entry(cid):
    return json.loads(Event.objects.filter(conversation_id=cid, kind="handoff_requested").latest("seq").payload)


class TestWhatTheCustomerIsPromised:
    def test_with_someone_online_within_hours_a_person_is_promised_and_recorded_so(self, client, started, page, make_assistant,
                                                                                   staff_online):
        conversation = started(assistant=make_assistant(handoff={"enabled": True, "queued_message": QUEUED, "hours": ALWAYS_OPEN}))

        post(client, conversation, "handoff")

        html = page(conversation).content.decode()
        assert QUEUED in html and "No one from the team is here" not in html
        entry = requested_entry(conversation["conversation_id"])
        assert (entry["staff_online"], entry["within_hours"]) == (True, True)

    def test_with_nobody_online_the_page_says_so_before_and_after_asking(self, client, started, page, person_assistant):
        conversation = started(assistant=person_assistant)
        before = page(conversation).content.decode()

        post(client, conversation, "handoff")

        after = page(conversation).content.decode()
        assert "The team is away" in before and ">Talk to a person</button>" in before
        assert QUEUED not in after and "No one from the team is here right now. Leave your email" in after
        assert requested_entry(conversation["conversation_id"])["staff_online"] is False

    def test_outside_hours_the_page_says_when_the_team_is_back(self, client, started, page, make_assistant, staff_online):
        closed = make_assistant(handoff={"enabled": True, "queued_message": QUEUED, "hours": {
            **ALWAYS_OPEN, "closed": [(timezone.now() + timedelta(days=d)).astimezone(timezone.get_default_timezone()).date().isoformat()
                                      for d in range(-1, 2)]}})
        conversation = started(assistant=closed)

        post(client, conversation, "handoff")

        html = page(conversation).content.decode()
        entry = requested_entry(conversation["conversation_id"])
        assert "No one from the team is here right now: they're back " in html
        assert entry["within_hours"] is False and entry["staff_online"] is True
        assert QUEUED not in html

    def test_someone_away_by_choice_is_not_someone_to_promise(self, client, started, page, person_assistant, staff_online):
        presence.set_away(staff_online, True, now=timezone.now())
        conversation = started(assistant=person_assistant)

        post(client, conversation, "handoff")

        assert "No one from the team is here right now" in page(conversation).content.decode()


class TestWhileWaiting:
    def test_the_place_in_line_and_the_expected_wait_from_recent_waits(self, client, started, page, person_assistant,
                                                                       staff_online):
        now = timezone.now()
        # Two earlier customers a person took after 2 and 4 minutes: usually about 3 minutes.
        for waited in (2, 4):
            earlier = started(assistant=person_assistant)["conversation_id"]
            handoff.request_handoff(conversation_id=earlier, source="customer", requested_by="guest:x", now=now - timedelta(minutes=30))
            handoff.take_control(conversation_id=earlier, staff="staff:dana", name="Dana",
                                 now=now - timedelta(minutes=30 - waited))
        ahead = started(assistant=person_assistant)
        handoff.request_handoff(conversation_id=ahead["conversation_id"], source="customer", requested_by="guest:y",
                                now=now - timedelta(minutes=1))
        conversation = started(assistant=person_assistant)

        post(client, conversation, "handoff")

        html = page(conversation).content.decode()
        assert "You&#x27;re 2nd in line · usually about 3 minutes" in html
        handoff.take_control(conversation_id=ahead["conversation_id"], staff="staff:dana", name="Dana", now=timezone.now())
        refreshed = client.get(f"/c/{conversation['conversation_id']}/team", {"token": conversation["token"]}).content.decode()
        assert "You&#x27;re next in line" in refreshed

    def test_an_email_left_keeps_the_request_past_its_time_out_and_a_reply_goes_to_it(
            self, client, started, page, person_assistant, django_capture_on_commit_callbacks):
        conversation = started(assistant=person_assistant)
        cid = conversation["conversation_id"]
        post(client, conversation, "handoff")

        left = post(client, conversation, "handoff/details", email="alice@example.com", reason="my parcel is lost")
        handoff.time_out_handoffs(now=timezone.now() + timedelta(seconds=3600))
        still = Conversation.objects.get(pk=cid)
        html = page(conversation).content.decode()
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())
        with django_capture_on_commit_callbacks(execute=True):
            handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Found it: it arrives tomorrow.",
                                  now=timezone.now(), origin="https://help.example")

        assert left.status_code == 200
        assert (still.control_mode, still.control_reason) == ("queued", "my parcel is lost")
        assert "We'll also email the reply to a•••@example.com." in html and "alice@example.com" not in html
        [sent] = mail.outbox
        assert sent.to == ["alice@example.com"] and sent.subject == "Dana replied to you"
        assert "Found it: it arrives tomorrow." in sent.body
        assert f"https://help.example/c/{cid}?token=" in sent.body
        assert EmailFollowUp.objects.get().status == "sent"

    def test_a_follow_up_that_fails_is_tried_again_later(self, started, person_assistant, settings):
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_PORT = 9  # nothing listens: the send fails
        cid = started(assistant=person_assistant)["conversation_id"]
        now = timezone.now()
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=now)
        handoff.leave_details(conversation_id=cid, persona="guest:alice", email="alice@example.com", now=now)
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=now)
        handoff.staff_message(conversation_id=cid, staff="staff:dana", text="Hello", now=now)

        followups.send_due(now=now)

        row = EmailFollowUp.objects.get()
        assert (row.status, row.attempts) == ("pending", 1) and row.next_attempt_at > now and row.last_error
        settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
        assert followups.send_due(now=row.next_attempt_at) == 1 and len(mail.outbox) == 1

    def test_a_bad_address_is_refused_in_words_and_nothing_is_recorded(self, client, started, person_assistant):
        conversation = started(assistant=person_assistant)
        post(client, conversation, "handoff")
        head = Conversation.objects.get(pk=conversation["conversation_id"]).head_seq

        refused = post(client, conversation, "handoff/details", email="not an address")

        assert refused.status_code == 422 and "is not an email address" in refused.content.decode()
        assert Conversation.objects.get(pk=conversation["conversation_id"]).head_seq == head

    def test_back_to_the_assistant_ends_the_wait_and_says_so(self, client, started, page, person_assistant):
        conversation = started(assistant=person_assistant)
        cid = conversation["conversation_id"]
        post(client, conversation, "handoff")

        back = post(client, conversation, "handoff/cancel")

        html = page(conversation).content.decode()
        assert back.status_code == 200
        assert Conversation.objects.get(pk=cid).control_mode == "agent"
        assert "Went back to the assistant" in html and ">Talk to a person</button>" in html
        assert ControlChange.objects.filter(conversation_id=cid).latest("seq").kind == "handoff_cancelled"

    def test_back_to_the_assistant_after_a_person_took_it_is_refused_with_who(self, client, started, person_assistant):
        conversation = started(assistant=person_assistant)
        cid = conversation["conversation_id"]
        post(client, conversation, "handoff")
        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())

        refused = post(client, conversation, "handoff/cancel")

        assert refused.status_code == 409 and "Dana already has this conversation." in refused.content.decode()
        assert Conversation.objects.get(pk=cid).control_mode == "human"


def test_a_conversation_with_each_new_entry_verifies_and_replays(client, started, person_assistant):
    from apps.ledger import replay

    conversation = started(assistant=person_assistant)
    cid = conversation["conversation_id"]
    post(client, conversation, "handoff")
    post(client, conversation, "handoff/details", email="alice@example.com", reason="my parcel")
    post(client, conversation, "handoff/cancel")
    post(client, conversation, "handoff")

    kinds = list(Event.objects.filter(conversation_id=cid).order_by("seq").values_list("kind", flat=True))
    assert {"handoff_details", "handoff_cancelled"} <= set(kinds)
    assert replay.verify(cid).ok
    report = replay.replay(cid)
    assert report.ok, report


def test_housekeeping_sends_a_follow_up_that_was_not_sent_and_leaves_a_request_with_an_address_queued(started, person_assistant):
    from apps.agent import runner

    cid = started(assistant=person_assistant)["conversation_id"]
    now = timezone.now()
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=now)
    handoff.leave_details(conversation_id=cid, persona="guest:alice", email="alice@example.com", now=now)
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=now)
    handoff.staff_message(conversation_id=cid, staff="staff:dana", text="On it.", now=now)  # its wake never ran: no commit here
    handoff.return_control(conversation_id=cid, staff="staff:dana", now=now)
    other = started(assistant=person_assistant)["conversation_id"]
    handoff.request_handoff(conversation_id=other, source="customer", requested_by="guest:bob", now=now)
    handoff.leave_details(conversation_id=other, persona="guest:bob", email="bob@example.com", now=now)

    runner.housekeep(now=now + timedelta(hours=1))

    assert [m.to for m in mail.outbox] == [["alice@example.com"]]
    assert Conversation.objects.get(pk=other).control_mode == "queued"
