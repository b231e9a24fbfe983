import pytest

from apps.agent import actions, answers
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.errors import ActionResultConflict, ConversationIsCompleted, TurnConflict
from apps.ledger.replay import replay

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def state(conversation_id):
    return conversation_state(queries.conversation_for(conversation_id))


def assert_parity(conversation_id):
    report = replay(conversation_id)
    assert report.ok, report.differences


class TestTurnFlow:
    def test_a_message_gets_a_committed_reply(self, start):
        started = start("hello there")

        s = state(started["conversation_id"])

        assert [m["role"] for m in s["messages"]] == ["user", "assistant"]
        assert s["messages"][1]["text"] == "You said: hello there"
        assert s["run_status"] == "completed"
        assert_parity(started["conversation_id"])

    def test_a_client_tool_pauses_the_run_and_its_result_continues_it(self, start, clock):
        started = start("when can you deliver?")
        paused = state(started["conversation_id"])

        answers.accept_results(conversation_id=started["conversation_id"], run_id=paused["run_id"],
                               results=[{"call_id": paused["pending_client_actions"][0]["call_id"], "output": {"label": "2026-12-24"}}],
                               persona="guest:alice", now=clock())

        assert paused["run_status"] == "waiting" and len(paused["messages"]) == 1
        done = state(started["conversation_id"])
        assert done["run_status"] == "completed"
        assert done["messages"][-1]["text"] == 'Booked for {"label": "2026-12-24"}.'
        assert_parity(started["conversation_id"])

    def test_a_different_second_answer_is_a_conflict_and_changes_nothing(self, start, clock):
        started = start("when?")
        paused = state(started["conversation_id"])
        call_id = paused["pending_client_actions"][0]["call_id"]
        answers.accept_results(conversation_id=started["conversation_id"], run_id=paused["run_id"],
                               results=[{"call_id": call_id, "output": {"label": "A"}}], persona="guest:alice", now=clock())

        with pytest.raises(ActionResultConflict) as caught:
            answers.accept_results(conversation_id=started["conversation_id"], run_id=paused["run_id"],
                                   results=[{"call_id": call_id, "output": {"label": "B"}}], persona="guest:bob", now=clock())

        assert caught.value.details["accepted"]["output"] == {"label": "A"}
        assert state(started["conversation_id"])["messages"][-1]["text"] == 'Booked for {"label": "A"}.'

    def test_an_identical_retry_of_an_answer_is_idempotent(self, start, clock):
        started = start("when?")
        paused = state(started["conversation_id"])
        result = [{"call_id": paused["pending_client_actions"][0]["call_id"], "output": {"label": "A"}}]
        answers.accept_results(conversation_id=started["conversation_id"], run_id=paused["run_id"], results=result,
                               persona="guest:alice", now=clock())
        head = state(started["conversation_id"])["seq"]

        again = answers.accept_results(conversation_id=started["conversation_id"], run_id=paused["run_id"], results=result,
                                       persona="guest:alice", now=clock())

        assert again.accepted == [] and again.already == [result[0]["call_id"]]
        assert state(started["conversation_id"])["seq"] == head

    def test_a_stale_head_loses_with_turn_conflict(self, start, clock):
        started = start("hello")
        head = state(started["conversation_id"])["seq"]
        actions.start_turn(conversation_id=started["conversation_id"], message="one", persona="guest:alice", edge="api",
                           now=clock(), expected_seq=head)

        with pytest.raises(TurnConflict):
            actions.start_turn(conversation_id=started["conversation_id"], message="two", persona="guest:alice", edge="api",
                               now=clock(), expected_seq=head)

    def test_completion_makes_the_conversation_read_only(self, start, clock):
        started = start("bye")

        s = state(started["conversation_id"])

        assert s["conversation_status"] == "completed" and s["messages"][-1]["text"] == "Goodbye!"
        with pytest.raises(ConversationIsCompleted):
            actions.start_turn(conversation_id=started["conversation_id"], message="more", persona="guest:alice",
                               edge="api", now=clock())
        assert_parity(started["conversation_id"])

    def test_the_database_refuses_to_change_a_logged_event(self, start):
        from django.db import DatabaseError, transaction

        from apps.ledger.models import Event

        started = start("hello")

        with pytest.raises(DatabaseError), transaction.atomic():
            Event.objects.filter(conversation_id=started["conversation_id"], seq=1).update(actor="mallory")
        with pytest.raises(DatabaseError), transaction.atomic():
            Event.objects.filter(conversation_id=started["conversation_id"], seq=1).delete()
