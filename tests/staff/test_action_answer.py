"""An htmx staff action answers with what changed since the page's head, not the whole inspector again."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from apps.agent import actions, handoff
from apps.conversations.models import Conversation
from apps.ledger import replay
from tests.staff.conftest import HTMX

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def entries_read(monkeypatch):
    """How many log entries each read of the log returned."""
    counts: list[int] = []
    real = replay.log_rows

    def counting(*args, **kwargs):
        rows = real(*args, **kwargs)
        counts.append(len(rows))
        return rows

    monkeypatch.setattr(replay, "log_rows", counting)
    return counts


def head(cid: str) -> int:
    return Conversation.objects.get(pk=cid).head_seq


def shown(page: str) -> str:
    """The head the page says it shows, as its control forms send it."""
    return re.search(r'name="shown" value="(\d*)"', page)[1]


def test_take_over_answers_with_the_new_entries_and_messages_only(dana, long_queued, entries_read):
    page = dana.get(f"/staff/conversations/{long_queued}/").content.decode()
    before = head(long_queued)
    entries_read.clear()

    answer = dana.post(f"/staff/conversations/{long_queued}/take-over", {"shown": shown(page)}, headers=HTMX).content.decode()

    added = head(long_queued) - before
    assert before > 60 and added >= 1
    assert re.findall(r'<tr id="event-(\d+)"', answer) == [str(seq) for seq in range(before + 1, head(long_queued) + 1)]
    # Taking over says nothing to the customer: the transcript gains only its line, in the customer's words.
    assert re.findall(r'<li id="message-([^"]+)"', answer) == [f"control-{head(long_queued)}"]
    assert "Dana joined" in answer
    # The new entries, and the last one verified before them, which the verification checks again.
    assert sum(entries_read) <= 2 * added + 1
    assert f"✓ {head(long_queued)} entries verify" in answer
    assert 'hx-swap-oob="beforeend:#event-rows"' in answer and "Dana (staff:dana) took over" in answer


def test_a_reply_appends_its_message_and_entry_after_those_the_page_shows(dana, long_queued):
    page = dana.post(f"/staff/conversations/{long_queued}/take-over", {"shown": ""}, headers=HTMX).content.decode()
    before = head(long_queued)

    answer = dana.post(f"/staff/conversations/{long_queued}/reply", {"text": "Hi, Dana here.", "shown": shown(page)},
                       headers=HTMX).content.decode()

    assert shown(page) == str(before)
    assert re.findall(r'<tr id="event-(\d+)"', answer) == [str(head(long_queued))]
    messages = re.findall(r'<li id="message-[^"]+" class="message (\w+)"', answer)
    assert messages == ["staff"] and "Hi, Dana here." in answer
    assert 'hx-swap-oob="beforeend:#transcript-messages"' in answer
    assert shown(answer) == str(head(long_queued))


def test_the_participants_still_name_who_took_over(dana, long_queued):
    page = dana.get(f"/staff/conversations/{long_queued}/").content.decode()

    answer = dana.post(f"/staff/conversations/{long_queued}/take-over", {"shown": shown(page)}, headers=HTMX).content.decode()

    participants = answer.split('<section id="participants"')[1].split("</section>")[0]
    assert "staff:dana" in participants and "guest:alice" in participants


def test_the_run_a_take_over_stops_is_updated_in_place(dana, start, make_assistant):
    from tests.conftest import SUPPORT_CONFIG

    support = make_assistant(handoff={"enabled": True}, model=SUPPORT_CONFIG["model"])
    started = start("refund please", assistant=support)  # its run waits for the refund's approval
    page = dana.get(f"/staff/conversations/{started['conversation_id']}/").content.decode()

    answer = dana.post(f"/staff/conversations/{started['conversation_id']}/take-over", {"shown": shown(page)},
                       headers=HTMX).content.decode()

    runs = answer.split('hx-swap-oob="beforeend:#run-rows"')[1].split("</table>")[0]
    assert f'<tr id="run-{started["run_id"]}">' in runs and "handed_off" in runs
    assert re.search(r'<span id="pending-count"[^>]*>0</span>', answer)


def test_without_the_pages_head_the_answer_is_the_whole_inspector(dana, long_queued):
    answer = dana.post(f"/staff/conversations/{long_queued}/take-over", headers=HTMX).content.decode()

    assert len(re.findall(r'<tr id="event-', answer)) == head(long_queued)
    assert '<section id="timeline" hx-swap-oob="true"' in answer


def test_a_page_that_shows_a_broken_log_gets_the_whole_timeline_again(dana, long_queued):
    from tests.staff.test_verified_mark import tamper

    tamper(long_queued, 5)
    page = dana.get(f"/staff/conversations/{long_queued}/").content.decode()

    answer = dana.post(f"/staff/conversations/{long_queued}/take-over", {"shown": shown(page)}, headers=HTMX).content.decode()

    assert shown(page) == ""
    assert '<section id="timeline" hx-swap-oob="true"' in answer
    assert re.search(r'<tr id="event-5" class="first-bad', answer)


def test_a_poll_with_the_pages_head_gets_only_the_entries_after_it(dana, long_queued, clock):
    page = dana.get(f"/staff/conversations/{long_queued}/").content.decode()
    before = head(long_queued)
    actions.start_turn(conversation_id=long_queued, message="still there?", persona="guest:alice", edge="api", now=clock())

    polled = dana.get(f"/staff/conversations/{long_queued}/live", {"shown": re.search(r'data-shown="(\d+)"', page)[1]}).content.decode()

    assert re.findall(r'<tr id="event-(\d+)"', polled) == [str(seq) for seq in range(before + 1, head(long_queued) + 1)]
    assert "still there?" in polled and 'id="control"' in polled


async def test_a_push_after_the_first_brings_only_what_changed(long_queued, clock, staff_user, client):
    from asgiref.sync import sync_to_async
    from django.conf import settings

    from tests.staff.test_inspector import _socket

    await sync_to_async(client.force_login)(staff_user)
    communicator, _ = await _socket(long_queued, f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}")
    first = await communicator.receive_from()
    before = await sync_to_async(head)(long_queued)

    await sync_to_async(handoff.take_control)(conversation_id=long_queued, staff="staff:ops", name="Ops", now=timezone.now())
    pushed = await communicator.receive_from(timeout=5)

    assert len(re.findall(r'<tr id="event-', first)) == before
    after = await sync_to_async(head)(long_queued)
    assert re.findall(r'<tr id="event-(\d+)"', pushed) == [str(seq) for seq in range(before + 1, after + 1)]
    assert 'hx-swap-oob="beforeend:#event-rows"' in pushed and "Ops (staff:ops) took over" in pushed
    await communicator.disconnect()
