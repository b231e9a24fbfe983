from apps.ledger.projection import fold
from apps.ledger.types import (
    ActionStarted,
    ApprovalRequest,
    ApprovalResponse,
    ConversationStarted,
    QuarantineResolved,
    Recorded,
    TurnAmbiguous,
    TurnComplete,
    TurnDispatched,
    TurnExpired,
)
from apps.runs.machine import CONTINUABLE, OPEN, TRANSITIONS, RunStatus, can_move, is_final

CID = "3bc02855-594b-4ef3-8f52-7a6262155a00"


def log(*events) -> list[Recorded]:
    return [
        Recorded(seq=i, kind=e.kind, turn_id="turn_1", actor="agent", created_at=f"2026-12-01T12:00:{i:02d}.000000+00:00",
                 payload=e.payload())
        for i, e in enumerate(events, start=1)
    ]


def statuses(events: list[Recorded]) -> list[str]:
    out = []
    for n in range(2, len(events) + 1):
        out.append(fold(CID, events[:n]).rows["workflow_logs"][("run_1",)]["status"])
    return out


STARTED = ConversationStarted(assistant_id="a")
DISPATCHED = TurnDispatched(run_id="run_1", message_id="msg_1", text="hi", edge="api")
ASKED = ApprovalRequest(run_id="run_1", call_id="call_1_1", tool="refund", arguments={})


class TestRunMachine:
    def test_only_completed_failed_expired_and_handed_off_are_final(self):
        assert {s for s in RunStatus if is_final(s)} == {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.EXPIRED,
                                                         RunStatus.HANDED_OFF}

    def test_an_open_run_is_never_continuable(self):
        assert OPEN.isdisjoint(CONTINUABLE) and set(TRANSITIONS) == set(RunStatus)

    def test_a_paused_run_resumes_and_completes_along_its_transitions(self):
        events = log(STARTED, DISPATCHED, ASKED,
                     ApprovalResponse(run_id="run_1", call_id="call_1_1", decision="approve", reviewed={}, run_resumes=True),
                     TurnComplete(run_id="run_1", message_id="msg_2", text="Done"))

        seen = statuses(events)

        assert seen == ["running", "waiting", "running", "completed"]
        assert all(can_move(a, b) for a, b in zip(seen, seen[1:], strict=False))

    def test_an_interrupted_run_runs_again_only_on_a_retry_resolution(self):
        started = ActionStarted(run_id="run_1", call_id="call_1_1", tool="refund", action="webhook", arguments={},
                                side_effecting=True, idempotency_key="k")
        ambiguous = TurnAmbiguous(run_id="run_1", call_id="call_1_1", tool="refund", idempotency_key="k")
        retry = log(STARTED, DISPATCHED, started, ambiguous, QuarantineResolved(run_id="run_1", call_id="call_1_1", resolution="not_done_retry"))
        done = log(STARTED, DISPATCHED, started, ambiguous, QuarantineResolved(run_id="run_1", call_id="call_1_1", resolution="done"))

        assert statuses(retry)[-2:] == ["interrupted", "running"] and can_move("interrupted", "running")
        assert statuses(done)[-1] == "interrupted" and not is_final("interrupted")

    def test_an_expired_run_moves_no_further(self):
        events = log(STARTED, DISPATCHED, ASKED, TurnExpired(run_id="run_1", call_ids=["call_1_1"]))

        assert statuses(events)[-2:] == ["waiting", "expired"]
        assert not any(can_move("expired", s) for s in RunStatus)
