"""
PRODUCT.md rule 8, "Bounded failure": a turn that keeps failing is retried a few times, then `failed`.

Also: a model round slower than the lease keeps its writer (the heartbeat renews the lease), so no
recovery and no other process asks the model the same round again.
"""

import threading
import time

import pytest
from django.db import connection, transaction
from django.utils import timezone

from apps.agent import actions, runner
from apps.agent.models import Assistant
from apps.agent.state import conversation_state
from apps.conversations import lease, queries
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.ledger.types import TurnRetried
from apps.runs.models import WorkflowLog
from tests.fakes import vendor as wire

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

# A configuration stored before validation refused it (or written past it): its rule's steps are
# text, not a list, and the scripted model trips over it with an AttributeError on every attempt.
POISON = {"provider": "scripted", "rules": [{"match": "poison", "steps": "say hello"}], "fallback": [{"say": "ok"}]}


def state(cid):
    return conversation_state(queries.conversation_for(cid))


def turn_kinds(cid, turn_id):
    return [e.kind for e in store.read(cid, turn_id=turn_id)]


@pytest.fixture
def quick_retries(settings):
    settings.WAYPOINT_RUN_RETRY_SECONDS = 0.01


class TestAPoisonTurn:
    def _poisoned(self, start, make_assistant, clock):
        assistant = make_assistant()
        cid = start("hello", assistant=assistant)["conversation_id"]
        config = Assistant.objects.get(id=assistant.id).config
        Assistant.objects.filter(id=assistant.id).update(config={**config, "model": POISON})
        turn = actions.start_turn(conversation_id=cid, message="poison", persona="guest:alice", edge="api", now=clock())
        return assistant, config, cid, turn

    def test_is_retried_three_times_then_its_run_is_failed_with_a_safe_message(self, start, make_assistant, clock, quick_retries):
        _, _, cid, turn = self._poisoned(start, make_assistant, clock)

        s = state(cid)
        assert turn_kinds(cid, turn["turn_id"]) == ["turn_dispatched", *["turn_retried"] * 3, "turn_failed"]
        assert s["run_status"] == "failed" and s["run_id"] == turn["run_id"]
        assert "3 retries" in s["error"] and "AttributeError" in s["error"] and "has no attribute" not in s["error"]
        assert [p["text"] for p in s["progress"]].count("Retrying after an unexpected error (AttributeError)") == 3

    def test_records_each_retry_with_its_attempt_and_reason(self, start, make_assistant, clock, quick_retries):
        _, _, cid, turn = self._poisoned(start, make_assistant, clock)

        retries = [e.body for e in store.read(cid, turn_id=turn["turn_id"]) if e.kind == "turn_retried"]

        assert [(r.attempt, r.reason) for r in retries] == [(n, "an unexpected error (AttributeError)") for n in (1, 2, 3)]

    def test_is_not_resumed_again_and_the_conversation_takes_a_new_turn(self, start, make_assistant, clock, quick_retries):
        assistant, config, cid, _ = self._poisoned(start, make_assistant, clock)
        Assistant.objects.filter(id=assistant.id).update(config=config)

        handed = runner.recover_once()
        actions.start_turn(conversation_id=cid, message="hello again", persona="guest:alice", edge="api", now=clock())

        s = state(cid)
        assert handed == 0
        assert s["run_status"] == "completed" and s["messages"][-1]["text"] == "You said: hello again"
        assert replay(cid).ok and verify(cid).ok

    def test_waits_longer_before_each_retry(self, start, make_assistant, clock, settings):
        settings.WAYPOINT_RUN_RETRY_SECONDS = 0.1

        began = time.monotonic()
        self._poisoned(start, make_assistant, clock)

        assert time.monotonic() - began >= 0.1 + 0.2 + 0.4


class TestResumptionsWithoutProgress:
    def test_a_fourth_resumption_with_no_step_between_fails_the_run(self, start, make_assistant, clock, settings):
        # As after three process deaths in a row before the turn's first step: batch one, then three retries.
        settings.WAYPOINT_RUNNER = "off"
        started = start("hello")
        cid, run_id, turn_id = started["conversation_id"], started["run_id"], started["turn_id"]
        for attempt in (1, 2, 3):
            with transaction.atomic():
                conversation = Conversation.objects.select_for_update(no_key=True).get(id=cid)
                store.append(conversation, events=[TurnRetried(run_id=run_id, attempt=attempt, after_seq=conversation.head_seq)],
                             turn_id=turn_id, actor="system", now=clock())
        settings.WAYPOINT_RUNNER = "inline"

        runner.drive(cid, recovering=True)

        s = state(cid)
        assert s["run_status"] == "failed" and "3 resumptions" in s["error"]
        assert turn_kinds(cid, turn_id)[-1] == "turn_failed" and replay(cid).ok


class TestASlowModelRound:
    def test_keeps_the_lease_for_twice_its_length_and_is_asked_once(self, start, make_assistant, settings, clock):
        settings.WAYPOINT_LEASE_SECONDS = 1.0
        settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.01
        with wire.Vendor(delay_seconds=2.0) as vendor:
            vendor.queue(wire.completion(content="Worth the wait."))
            settings.WAYPOINT_OPENAI_BASE_URL = vendor.base_url
            assistant = make_assistant(model={"provider": "openai", "model": "gpt-4o-mini"})
            first = start("hello", assistant=make_assistant())
            cid = first["conversation_id"]
            Conversation.objects.filter(id=cid).update(assistant=assistant)

            def turn():
                try:
                    actions.start_turn(conversation_id=cid, message="take your time", persona="guest:alice", edge="api", now=clock())
                finally:
                    connection.close()

            worker = threading.Thread(target=turn)
            began = time.monotonic()
            worker.start()
            while not vendor.requests and time.monotonic() - began < 5:
                time.sleep(0.02)
            asked_at = time.monotonic()
            seen = []  # (what recovery handed on, what another process's acquire got), past the lease's length
            while worker.is_alive():
                if time.monotonic() - asked_at > 1.2:
                    other = lease.acquire(conversation_id=cid, holder="another-process", now=timezone.now(), seconds=1.0)
                    seen.append((runner.recover_once(), other))
                time.sleep(0.1)
            worker.join()

        assert seen, "the round ended before the lease would have expired"
        assert all(handed == 0 and other is None for handed, other in seen)
        assert len(vendor.requests) == 1
        assert WorkflowLog.objects.get(run_id=state(cid)["run_id"]).status == "completed"
        assert state(cid)["messages"][-1]["text"] == "Worth the wait."


@pytest.mark.django_db(transaction=True)
def test_an_idle_recovery_pass_is_one_statement_and_leaves_the_clocks_work_to_housekeeping():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as orphans:
        runner.recover_once(housekeeping=False)
    with CaptureQueriesContext(connection) as clock:
        runner.housekeep(now=timezone.now())

    assert len(orphans.captured_queries) == 1
    # The two queues the clock drains are asked about in one statement and, being empty, not read.
    asked = [q["sql"] for q in clock.captured_queries if "tool_usage_logs" in q["sql"] or "control_mode" in q["sql"]]
    assert len(asked) == 1 and "control_mode" in asked[0] and "tool_usage_logs" in asked[0]
