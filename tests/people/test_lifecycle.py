import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.agent import actions, runner
from apps.conversations.models import ChatMessage, Conversation, Lease
from apps.ledger.models import Event
from apps.workspaces import actions as lifecycle
from apps.workspaces.models import Runtime
from apps.workspaces.storage import workspace_for
from tests.people.conftest import assert_replays, events_of, kinds, state, turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

IDLE = 600


def last_turn_at(cid):
    return Conversation.objects.get(id=cid).last_turn_at


@pytest.fixture
def idle_conversation(start, make_assistant):
    """A conversation whose assistant closes it after ten idle minutes; returns its id."""
    return start("hello", assistant=make_assistant(idle_timeout_seconds=IDLE))["conversation_id"]


def close_at(cid, seconds):
    return lifecycle.close_idle_conversations(now=last_turn_at(cid) + timedelta(seconds=seconds))


def conditions(cid):
    return {c["type"]: (c["status"], c["reason"]) for c in state(cid)["conditions"]}


class TestIdleClose:
    def test_a_conversation_idle_for_its_timeout_is_closed(self, idle_conversation):
        closed = close_at(idle_conversation, IDLE)

        assert closed == [idle_conversation]
        s = state(idle_conversation)
        assert (s["phase"], s["display_phase"]) == ("closed", "Closed")
        [entry] = events_of(idle_conversation, "conversation_closed")
        assert entry.payload["idle_timeout_seconds"] == IDLE and entry.actor == "system"
        assert_replays(idle_conversation)

    def test_it_stays_open_until_the_timeout_has_passed(self, idle_conversation):
        assert close_at(idle_conversation, IDLE - 1) == []
        assert state(idle_conversation)["phase"] == "open"

    def test_a_zero_timeout_disables_idle_close(self, start, make_assistant):
        cid = start("hello", assistant=make_assistant(idle_timeout_seconds=0))["conversation_id"]

        assert close_at(cid, 10 * 365 * 86400) == []

    def test_the_deployment_timeout_applies_when_the_assistant_sets_none(self, start, settings):
        settings.WAYPOINT_IDLE_TIMEOUT_SECONDS = 60
        cid = start("hello")["conversation_id"]

        assert close_at(cid, 60) == [cid]

    def test_a_conversation_waiting_for_a_person_is_not_idle(self, start, make_assistant):
        cid = start("when can you deliver?", assistant=make_assistant(idle_timeout_seconds=IDLE))["conversation_id"]

        assert close_at(cid, 10 * IDLE) == []
        assert state(cid)["run_status"] == "waiting"

    def test_a_customer_in_the_queue_for_a_person_is_not_idle_and_a_message_under_a_person_reopens(self, start, make_assistant):
        from apps.agent import handoff

        assistant = make_assistant(idle_timeout_seconds=IDLE, handoff={"enabled": True, "queue_timeout_seconds": 100 * IDLE})
        cid = start("hello", assistant=assistant)["conversation_id"]
        handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=timezone.now())
        assert close_at(cid, 10 * IDLE) == []

        handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=timezone.now())
        assert close_at(cid, 10 * IDLE) == [cid]
        turn(cid, "still there?", timezone.now)

        assert state(cid)["phase"] == "open" and state(cid)["messages"][-1]["text"] == "still there?"
        assert kinds(cid)[-2:] == ["conversation_reopened", "customer_message"]
        assert_replays(cid)

    def test_a_completed_conversation_is_not_closed(self, start, make_assistant):
        cid = start("bye", assistant=make_assistant(idle_timeout_seconds=IDLE))["conversation_id"]

        assert close_at(cid, 10 * IDLE) == []
        assert state(cid)["phase"] == "completed"

    def test_a_completed_conversation_releases_its_runtime_without_closing(self, start, make_assistant):
        cid = start("bye", assistant=make_assistant(idle_timeout_seconds=IDLE))["conversation_id"]

        close_at(cid, IDLE)

        assert Runtime.objects.get(conversation_id=cid).closed_at is not None
        assert not Lease.objects.filter(conversation_id=cid).exists()
        assert "conversation_closed" not in kinds(cid)

    def test_closing_releases_the_lease_and_the_scratch_space_but_keeps_files(self, idle_conversation, clock):
        handle = workspace_for(idle_conversation)
        handle.write("kept.txt", "stays", now=clock())
        handle.scratch().write("cache/tmp.bin", b"runtime", now=clock())
        assert Lease.objects.filter(conversation_id=idle_conversation).exists()

        close_at(idle_conversation, IDLE)

        assert not Lease.objects.filter(conversation_id=idle_conversation).exists()
        assert not (handle.root / "tmp").exists()
        assert handle.read("kept.txt") == b"stays"
        assert Runtime.objects.get(conversation_id=idle_conversation).closed_at is not None

    def test_closing_deletes_no_message_and_no_event(self, idle_conversation):
        messages = list(ChatMessage.objects.filter(conversation_id=idle_conversation).values_list("id", "text"))
        entries = list(Event.objects.filter(conversation_id=idle_conversation).values_list("seq", "hash"))

        close_at(idle_conversation, IDLE)

        assert list(ChatMessage.objects.filter(conversation_id=idle_conversation).values_list("id", "text")) == messages
        assert list(Event.objects.filter(conversation_id=idle_conversation).values_list("seq", "hash"))[:-1] == entries

    def test_the_recovery_loop_closes_idle_conversations(self, make_assistant):
        assistant = make_assistant(idle_timeout_seconds=IDLE)
        hour_ago = timezone.now() - timedelta(hours=1)
        cid = actions.start_conversation(assistant_id=str(assistant.id), message="hello", persona="guest:alice", edge="api",
                                         now=hour_ago)["conversation_id"]

        runner.recover_once()

        assert state(cid)["phase"] == "closed"


class TestReopen:
    def test_the_next_turn_reopens_the_conversation_in_its_batch_one(self, idle_conversation, clock):
        close_at(idle_conversation, IDLE)

        started = turn(idle_conversation, "I am back", clock)

        reopened = events_of(idle_conversation, "conversation_reopened")[0]
        dispatched = [e for e in events_of(idle_conversation, "turn_dispatched") if e.turn_id == started["turn_id"]][0]
        assert reopened.turn_id == started["turn_id"] and reopened.seq == dispatched.seq - 1
        assert reopened.payload["closed_seq"] == events_of(idle_conversation, "conversation_closed")[0].seq
        assert state(idle_conversation)["phase"] == "open"
        assert state(idle_conversation)["messages"][-1]["text"] == "You said: I am back"
        assert_replays(idle_conversation)

    def test_the_next_turn_resets_the_idle_timer(self, idle_conversation):
        first = last_turn_at(idle_conversation)
        close_at(idle_conversation, IDLE)
        back = first + timedelta(seconds=IDLE + 30)

        actions.start_turn(conversation_id=idle_conversation, message="I am back", persona="guest:alice", edge="api", now=back)

        assert last_turn_at(idle_conversation) == back
        assert lifecycle.close_idle_conversations(now=back + timedelta(seconds=IDLE - 1)) == []
        assert lifecycle.close_idle_conversations(now=back + timedelta(seconds=IDLE)) == [idle_conversation]

    def test_reopening_marks_the_runtime_in_use_again(self, idle_conversation, clock):
        close_at(idle_conversation, IDLE)

        turn(idle_conversation, "I am back", clock)

        assert Runtime.objects.get(conversation_id=idle_conversation).closed_at is None


class TestRetention:
    def test_a_closed_runtime_record_is_deleted_after_the_retention_window(self, idle_conversation, settings):
        settings.WAYPOINT_RETENTION = "24h"
        close_at(idle_conversation, IDLE)
        closed_at = Runtime.objects.get(conversation_id=idle_conversation).closed_at

        kept = lifecycle.delete_expired_runtimes(now=closed_at + timedelta(hours=24) - timedelta(seconds=1))
        deleted = lifecycle.delete_expired_runtimes(now=closed_at + timedelta(hours=24))

        assert (kept, deleted) == (0, 1)
        assert not Runtime.objects.filter(conversation_id=idle_conversation).exists()

    def test_retention_deletes_no_message_event_or_file(self, idle_conversation, clock, settings):
        settings.WAYPOINT_RETENTION = "90m"
        workspace_for(idle_conversation).write("kept.txt", "stays", now=clock())
        close_at(idle_conversation, IDLE)
        before = (ChatMessage.objects.filter(conversation_id=idle_conversation).count(),
                  Event.objects.filter(conversation_id=idle_conversation).count())

        lifecycle.delete_expired_runtimes(now=last_turn_at(idle_conversation) + timedelta(days=30))

        after = (ChatMessage.objects.filter(conversation_id=idle_conversation).count(),
                 Event.objects.filter(conversation_id=idle_conversation).count())
        assert after == before
        assert workspace_for(idle_conversation).read("kept.txt") == b"stays"
        assert state(idle_conversation)["phase"] == "closed"
        assert_replays(idle_conversation)

    def test_a_completed_conversations_runtime_record_is_deleted_after_the_window(self, start, make_assistant):
        cid = start("bye", assistant=make_assistant(idle_timeout_seconds=IDLE))["conversation_id"]
        close_at(cid, IDLE)

        deleted = lifecycle.delete_expired_runtimes(now=last_turn_at(cid) + timedelta(days=2))

        assert deleted == 1 and state(cid)["phase"] == "completed"
        assert_replays(cid)

    def test_a_reopened_conversation_keeps_its_runtime_record(self, idle_conversation, clock):
        close_at(idle_conversation, IDLE)
        turn(idle_conversation, "I am back", clock)

        assert lifecycle.delete_expired_runtimes(now=last_turn_at(idle_conversation) + timedelta(days=30)) == 0
        assert Runtime.objects.filter(conversation_id=idle_conversation).exists()

    def test_a_malformed_retention_setting_disables_deletion_and_says_why(self, idle_conversation, settings, caplog):
        settings.WAYPOINT_RETENTION = "one day"
        close_at(idle_conversation, IDLE)

        with caplog.at_level(logging.ERROR, logger="apps.workspaces.actions"):
            deleted = lifecycle.delete_expired_runtimes(now=last_turn_at(idle_conversation) + timedelta(days=365))

        assert deleted is None
        assert Runtime.objects.filter(conversation_id=idle_conversation).exists()
        assert "WAYPOINT_RETENTION is malformed" in caplog.text and "'one day' is not a duration" in caplog.text


class TestPhaseAndConditions:
    def test_an_answered_conversation_is_active_and_ready(self, start):
        cid = start("hello")["conversation_id"]

        assert (state(cid)["phase"], state(cid)["display_phase"]) == ("open", "Active")
        assert conditions(cid) == {"Ready": ("True", "Idle"), "Progressing": ("False", "TurnComplete"),
                                   "Degraded": ("False", "AsExpected")}

    def test_a_paused_conversation_is_waiting_and_not_ready(self, start):
        cid = start("when can you deliver?")["conversation_id"]

        assert state(cid)["display_phase"] == "Waiting"
        assert conditions(cid)["Ready"] == ("False", "WaitingForPerson")

    def test_a_closed_conversation_is_ready_for_the_turn_that_reopens_it(self, idle_conversation):
        close_at(idle_conversation, IDLE)

        assert conditions(idle_conversation)["Ready"] == ("True", "Closed")

    def test_a_completed_conversation_is_not_ready(self, start):
        cid = start("bye")["conversation_id"]

        assert state(cid)["display_phase"] == "Completed"
        assert conditions(cid)["Ready"] == ("False", "Completed")

    def test_each_condition_has_a_last_transition_time(self, start):
        cid = start("hello")["conversation_id"]

        assert all(c["last_transition_time"] for c in state(cid)["conditions"])
        assert "conversation_closed" not in kinds(cid)
