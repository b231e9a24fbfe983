"""
`conversation verify|replay` on a conversation a person held (issue 23's acceptance).

The conversation goes agent → queued → human → agent: the request for a person withdraws a
pending approval (a late approve is refused), the customer writes while queued, Dana takes over,
replies and hands back with a note, and the assistant answers again. Replay rebuilds every store,
control and its transcript lines included, from the log alone; what-if on the withdrawal shows
which rows depend on it.
"""

import json

import pytest

from apps.agent import answers, handoff
from apps.conversations.errors import RunNotWaiting
from apps.conversations.models import ControlChange
from apps.ledger import store
from tests.core.logs import state, turn
from tests.core.test_cli import entry_seq, run, seqs, snapshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

NOTE = "replacement shipped; no refund needed"


@pytest.fixture
def held(start, make_assistant, clock):
    """The conversation, and the call id of the approval that was withdrawn."""
    support = make_assistant(handoff={"enabled": True, "model_tool": True})
    cid = start("refund please", assistant=support)["conversation_id"]
    paused = state(cid)
    [pending] = paused["pending_client_actions"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice",
                            reason="I want a person", now=clock())
    with pytest.raises(RunNotWaiting):
        answers.accept_results(conversation_id=cid, run_id=paused["run_id"], persona="guest:alice", now=clock(),
                               results=[{"call_id": pending["call_id"], "output": {"decision": "approve", "reviewed": {
                                   "tool": pending["tool"], "arguments": pending["arguments"]}}}])
    turn(cid, "my parcel never came", clock)
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
    handoff.staff_message(conversation_id=cid, staff="staff:dana", text="I have sent a new one today.", now=clock())
    handoff.return_control(conversation_id=cid, staff="staff:dana", note=NOTE, now=clock())
    turn(cid, "thanks", clock)
    return cid, pending["call_id"]


def test_the_conversation_went_agent_queued_human_agent(held):
    cid, _ = held

    kinds = [e.kind for e in store.read(cid)]

    for later, earlier in [("handoff_requested", "turn_handed_off"), ("customer_message", "handoff_requested"),
                           ("control_taken", "customer_message"), ("staff_message", "control_taken"),
                           ("control_returned", "staff_message")]:
        assert kinds.index(earlier) < kinds.index(later)
    assert kinds.count("turn_dispatched") == 2 and kinds.index("control_returned") < len(kinds) - kinds[::-1].index("turn_dispatched")
    after = state(cid)
    assert after["control"]["mode"] == "agent" and after["run_status"] == "completed"
    assert [m["author"]["kind"] for m in after["messages"]] == ["customer", "customer", "staff", "customer", "assistant"]


def test_verify_passes(held):
    cid, _ = held

    code, out, _ = run("verify", cid, "--actor", "ops:alice")

    assert code == 0
    assert out.strip() == f"OK conv-{cid}: {len(seqs(cid))} entries, every hash and signature verifies"


def test_replay_rebuilds_every_store_from_the_log(held):
    cid, _ = held

    code, out, _ = run("replay", cid, "--actor", "ops:alice")

    assert code == 0 and out.strip() == f"OK conv-{cid}: {len(seqs(cid))} entries replay to exactly the stored state"


def test_replay_notices_a_transcript_line_changed_behind_the_logs_back(held):
    cid, _ = held

    ControlChange.objects.filter(conversation_id=cid, kind="control_returned").update(text="refund issued")

    code, out, error = run("replay", cid, "--actor", "ops:alice")

    assert code == 1 and "1 difference" in error
    assert f'text: log says {json.dumps(NOTE)}, store has "refund issued"' in out


def test_what_if_the_approval_had_not_been_withdrawn(held):
    cid, call_id = held
    seq = entry_seq(cid, "turn_handed_off")
    before = snapshot(cid)

    code, out, error = run("replay", cid, "--actor", "ops:alice", "--what-if", str(seq),
                           '[{"op": "replace", "path": "/call_ids", "value": []}]')

    assert code == 1 and f"entry {seq}" in error
    assert f"the stores first diverge at seq {seq}:" in out
    run_id = next(e.payload["run_id"] for e in store.read(cid) if e.seq == seq)
    assert f"tool_usage_logs ('{run_id}', '{call_id}').status: recorded \"withdrawn\", with the change \"pending\"" in out
    assert snapshot(cid) == before


def test_what_if_someone_else_had_taken_over(held):
    cid, _ = held
    seq = entry_seq(cid, "control_taken")

    code, out, _ = run("replay", cid, "--actor", "ops:alice", "--what-if", str(seq),
                       '[{"op": "replace", "path": "/name", "value": "Sam"}]')

    assert code == 1 and f"the stores first diverge at seq {seq}:" in out
    assert f"control_changes ('{cid}:{seq}',).name: recorded \"Dana\", with the change \"Sam\"" in out
    assert f"conversations ('{cid}',).control_name: recorded \"Dana\", with the change \"Sam\"" in out


