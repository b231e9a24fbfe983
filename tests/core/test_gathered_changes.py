"""
An append writes the changes its entries make to one row as one statement where it can
(`compiler.Gathered`): the rows must come out exactly as the changes written one by one leave them.
"""

import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.ledger import compiler
from apps.ledger.projection import Change
from apps.runs.models import ToolUsageLog, WorkflowLog

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def random_changes(rng: random.Random, run_id: str, n: int) -> list[Change]:
    """Changes of one run's row and of tool calls made and answered in the same append, in a random order."""
    moment = timezone.now()
    changes: list[Change] = []
    pending: list[str] = []
    calls: list[str] = []
    for i in range(n):
        roll = rng.randrange(9)
        if roll == 0:
            changes.append(Change("workflow_logs", (run_id,), set={"status": rng.choice(["running", "waiting"]),
                                                                   "updated_at": moment + timedelta(seconds=i)}))
        elif roll == 1:
            changes.append(Change("workflow_logs", (run_id,), incr={"rounds": rng.randrange(1, 3)}))
        elif roll == 2:
            changes.append(Change("workflow_logs", (run_id,), incr={f"usage.{rng.choice('ab')}": rng.randrange(1, 50)}))
        elif roll == 3:
            changes.append(Change("workflow_logs", (run_id,), append={"progress": {"n": i, "text": f"step {i}"}}))
        elif roll == 4:
            pending.append(f"call_{i}")
            changes.append(Change("workflow_logs", (run_id,), append={"pending": pending[-1]}))
        elif roll == 5 and pending:
            changes.append(Change("workflow_logs", (run_id,), discard={"pending": pending.pop(rng.randrange(len(pending)))}))
        elif roll == 6:
            changes.append(Change("workflow_logs", (run_id,), set={"pending": [f"reset_{i}"], "error": f"e{i}"}))
            pending = [f"reset_{i}"]
        elif roll == 7:
            calls.append(f"call_{i}")
            changes.append(Change("tool_usage_logs", (run_id, calls[-1]), create={
                "run_id": run_id, "call_id": calls[-1], "turn_id": "turn_x", "kind": "approval", "tool": "refund",
                "arguments": {"i": i}, "status": "pending", "requested_at": moment,
            }))
        elif calls:
            changes.append(Change("tool_usage_logs", (run_id, rng.choice(calls)), set={
                "status": rng.choice(["approved", "denied"]), "output": {"i": i}, "answered_at": moment + timedelta(seconds=i),
            }))
    return changes


def rows(cid: str) -> dict:
    run = WorkflowLog.objects.get(conversation_id=cid)
    calls = ToolUsageLog.objects.filter(conversation_id=cid).order_by("call_id")
    return {
        "run": model_to_dict(run, exclude=["run_id", "conversation", "turn_id", "dispatched_seq", "started_at", "caller"]),
        "calls": [model_to_dict(c, exclude=["id", "run_id", "conversation"]) for c in calls],
    }


def gathered(cid: str, changes: list[Change]) -> int:
    """Write `changes` as an append does; the number of statements sent."""
    with transaction.atomic(), CaptureQueriesContext(connection) as sent:
        writes = compiler.Writes(cid)
        together = compiler.Gathered(writes)
        for change in changes:
            together.add(change)
        together.flush(own=True)
        count = len(writes.statements)
        writes.run()
    assert sent  # they went
    return count


def one_by_one(cid: str, changes: list[Change]) -> None:
    with transaction.atomic():
        for change in changes:
            compiler.apply(cid, change)


class TestAnAppendsChangesOfOneRow:
    @pytest.mark.parametrize("seed", range(12))
    def test_merged_they_leave_the_rows_as_written_one_by_one(self, start, seed):
        first, second = start("hello")["conversation_id"], start("hello")["conversation_id"]
        # The same run row in both, but for its keys: the two turns' progress had their own times.
        WorkflowLog.objects.filter(conversation_id__in=[first, second]).update(progress=[], updated_at=timezone.now())
        assert rows(first) == rows(second)
        rng = random.Random(seed)
        template = random_changes(rng, "RUN", 40)

        def of(cid: str) -> list[Change]:
            run_id = WorkflowLog.objects.get(conversation_id=cid).run_id
            return [Change(c.store, tuple(run_id if k == "RUN" else k for k in c.key), create=(
                {**c.create, "run_id": run_id} if c.create else None), set=c.set, incr=c.incr, append=c.append,
                discard=c.discard) for c in template]

        sent = gathered(first, of(first))
        one_by_one(second, of(second))

        assert rows(first) == rows(second)
        assert sent < len(template)

    def test_a_call_made_and_answered_in_one_append_is_one_insert(self, start):
        cid = start("hello")["conversation_id"]
        run_id = WorkflowLog.objects.get(conversation_id=cid).run_id
        moment = timezone.now()
        changes = [
            Change("workflow_logs", (run_id,), set={"updated_at": moment}, incr={"rounds": 1}, append={"progress": {"n": 1}}),
            Change("tool_usage_logs", (run_id, "c1"), create={
                "run_id": run_id, "call_id": "c1", "turn_id": "t", "kind": "question", "tool": "ask_question",
                "arguments": {}, "status": "pending", "requested_at": moment,
            }),
            Change("workflow_logs", (run_id,), set={"updated_at": moment}, append={"progress": {"n": 2}}),
            Change("tool_usage_logs", (run_id, "c1"), set={"status": "answered", "output": {"answer": "yes"}}),
        ]

        assert gathered(cid, changes) == 2

        run = WorkflowLog.objects.get(run_id=run_id)
        assert run.progress[-2:] == [{"n": 1}, {"n": 2}]
        assert ToolUsageLog.objects.get(run_id=run_id, call_id="c1").output == {"answer": "yes"}
