"""
The history summary folded forward (apps/agent/history.py `Summary`) equals a fold of the whole log.

Random logs of every shape a conversation takes — ambiguous and re-attempted actions, staff
resolutions arriving turns later, facts remembered and cleared, handed-off runs, the parts a person
held — are fed in random pieces, and at every piece the summary's history must be what `build`
reads from all the entries so far, for every turn left out, asked once or several times.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.agent import history
from apps.ledger import types as t
from tests.unit.test_history import REFUND, Log

OPERATIONS = ("done", "ambiguous", "reattempt", "resolve", "remember", "clear", "handed_off", "human", "superseded",
              "continuation", "staff_only", "repaired")


def random_log(draw_ops: list[str]) -> Log:
    """A log that applies the operations in order; each adds a turn or entries to earlier ones."""
    log = Log()
    turns: list[str] = []
    ambiguous: list[str] = []
    facts: list[str] = []
    for n, op in enumerate(draw_ops):
        turn_id = f"T{n}"
        if op == "resolve" and not ambiguous or op == "clear" and not facts:
            op = "done"
        if op in ("done", "remember", "superseded", "handed_off"):
            log.turn(turn_id, f"message {n}").round(turn_id, 1, ("c1", "lookup_order", {"order_id": f"A-{n % 3}"}))
            log.add(turn_id, t.ActionStarted(run_id=f"run-{turn_id}", call_id="c1", tool="lookup_order", action="echo",
                                             arguments={"order_id": f"A-{n % 3}"}, side_effecting=False,
                                             idempotency_key=f"{turn_id}:c1"))
            log.finished(turn_id, "c1", "lookup_order", output={"n": n})
            if op == "remember":
                log.round(turn_id, 2, ("c2", "remember", {"fact": f"fact {n}"}))
                log.add(turn_id, t.MemoryRemembered(run_id=f"run-{turn_id}", call_id="c2", fact_id=f"f{n}", text=f"fact {n}"))
                facts.append(f"f{n}")
            if op == "superseded":
                log.round(turn_id, 2, ("c3", "pick_date", {"label": "when"}))
                log.add(turn_id, t.ClientActionRequested(run_id=f"run-{turn_id}", call_id="c3", tool="pick_date", arguments={}))
                log.add(turn_id, t.TurnSuperseded(run_id=f"run-{turn_id}", call_ids=["c3"], reason="later"))
            elif op == "handed_off":
                log.round(turn_id, 2, ("c3", "issue_refund", REFUND))
                log.add(turn_id, t.ApprovalRequest(run_id=f"run-{turn_id}", call_id="c3", tool="issue_refund", arguments=REFUND))
                log.add(turn_id, t.TurnHandedOff(run_id=f"run-{turn_id}", call_ids=["c3"], reason="handed to a person"))
                log.add("", t.HandoffRequested(source="customer", requested_by="guest:alice", reason="a person"))
            else:
                log.reply(turn_id, f"reply {n}")
        elif op in ("ambiguous", "reattempt"):
            log.turn(turn_id, "refund please").round(turn_id, 1, ("call_1_1", "issue_refund", REFUND))
            log.started(turn_id, "call_1_1", "issue_refund", REFUND, key=f"{ambiguous[0]}:call_1_1" if op == "reattempt" and ambiguous else "")
            if op == "reattempt" and ambiguous:
                log.finished(turn_id, "call_1_1", "issue_refund", ok=n % 2 == 0, output={"refunded": True}, error="boom")
                log.reply(turn_id, "done")
            else:
                log.ambiguous(turn_id, "call_1_1", "issue_refund")
                ambiguous.append(turn_id)
        elif op == "resolve":
            earlier = ambiguous.pop(0)
            log.resolved(earlier, "call_1_1", ("done", "abandon", "not_done_retry")[n % 3], note="checked", visible=n % 2 == 0)
        elif op == "clear":
            log.add("", t.MemoryCleared(fact_ids=[facts.pop(0)], cleared_by="staff:ops"))
        elif op == "continuation":
            log.turn(turn_id, "", continuation=True).reply(turn_id, "went on")
        elif op == "human":
            log.add("", t.ControlTaken(staff="staff:dana", name="Dana"))
            log.add(turn_id, t.CustomerMessage(message_id=f"m{n}", text=f"customer {n}", edge="link", caller="guest:alice"))
            log.add("", t.StaffMessage(message_id=f"s{n}", text=f"staff {n}", staff="staff:dana", name="Dana"))
            log.add("", t.ControlReturned(staff="staff:dana", name="Dana", note=f"note {n}"))
        elif op == "repaired":  # an unreadable entry removed by `conversation repair`, which records that
            victims = [i for i, e in enumerate(log.entries) if e.kind in ("action_finished", "turn_complete", "staff_message")]
            if victims:
                gone = log.entries.pop(victims[n % len(victims)])
                log.add("", t.Repair(removed=[{"seq": gone.seq, "reason": "the payload is not a JSON object"}]), actor="ops:alice")
        else:  # staff_only: a part a person held with nothing but a timeout
            log.add("", t.HandoffRequested(source="application", requested_by="api:shop"))
            log.add("", t.HandoffTimedOut(requested_at="2026-12-01T10:00:00Z", timeout_seconds=60, message="nobody"))
        turns.append(turn_id)
    return log


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.sampled_from(OPERATIONS), min_size=1, max_size=14), cuts=st.lists(st.integers(1, 6), max_size=30),
       data=st.data())
def test_the_summary_folded_forward_equals_a_fold_of_the_whole_log(ops, cuts, data):
    entries = random_log(ops).entries
    summary = history.Summary()
    fed, pieces = 0, iter(cuts)
    while fed < len(entries):
        step = next(pieces, len(entries))
        summary.feed(entries[fed:fed + step])
        fed = min(len(entries), fed + step)
        turn_ids = sorted({e.turn_id for e in entries[:fed] if e.turn_id}) + [""]
        assert summary.head == entries[fed - 1].seq
        # Asked again with another turn left out, it goes on from what it folded the time before.
        for excluded in data.draw(st.lists(st.sampled_from(turn_ids), min_size=1, max_size=3)):
            assert summary.history(exclude_turn=excluded) == _whole(entries[:fed], excluded)


def _whole(entries, excluded):
    """The fold of the whole log, as the builder did it before the summary: entry by entry, from the first."""
    once = history.Summary()
    for entry in entries:
        once.feed([entry])
    return once.history(exclude_turn=excluded)


@pytest.mark.parametrize("ops", [["ambiguous", "human", "reattempt", "resolve"], ["remember", "handed_off", "clear", "done"]])
def test_the_summary_reads_only_the_turns_that_changed(ops, monkeypatch):
    """A piece that only adds a turn reads that turn; a fact cleared later reads the turn that remembered it again."""
    log = random_log(ops)
    summary = history.Summary()
    summary.feed(log.entries)
    summary.history()
    read: list[str] = []
    real = history._read_turn
    monkeypatch.setattr(history, "_read_turn", lambda turn_id, *a: read.append(turn_id) or real(turn_id, *a))

    log.turn("new", "hello").reply("new", "hi")
    summary.feed(log.entries[-3:])
    summary.history()

    assert read == ["new"]
