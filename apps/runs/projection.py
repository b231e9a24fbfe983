"""
The `workflow_logs` and `tool_usage_logs` stores as a projection of the log (pure: no Django).

Registered in `RunsConfig.ready()`; see `apps/ledger/projection.py`. Statuses move as
`apps/runs/machine.py` says.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from apps.ledger.projection import Change, Entry, Projection
from apps.ledger.types import (
    ActionFinished,
    ApprovalRequest,
    ApprovalResponse,
    ClientActionRequested,
    ClientResultAccepted,
    CompletionRequested,
    IngressDirective,
    ModelRound,
    QuarantineResolved,
    QuarantineSettled,
    QuestionRequest,
    QuestionResponse,
    TurnAmbiguous,
    TurnComplete,
    TurnDispatched,
    TurnExpired,
    TurnFailed,
    TurnHandedOff,
    TurnRetried,
    TurnSuperseded,
)
from apps.runs.machine import RunStatus

projection = Projection({"workflow_logs": ("run_id",), "tool_usage_logs": ("run_id", "call_id")})


def _progress(at: Entry, text: str) -> dict[str, Any]:
    return {"seq": at.seq, "at": at.created_at, "text": text}


def _run(run_id: str, at: Entry, *, status: str | None = None, progress: str = "", **extra: Any) -> Change:
    values = {"updated_at": at.created_at, **extra}
    if status:
        values["status"] = status
    return Change(
        "workflow_logs",
        (run_id,),
        set=values,
        append={"progress": _progress(at, progress)} if progress else {},
    )


def _by(who: str) -> str:
    return f" by {who}" if who else ""


@projection.handles(TurnDispatched)
def _(event: TurnDispatched, at: Entry) -> Iterator[Change]:
    yield Change(
        "workflow_logs",
        (event.run_id,),
        create={
            "run_id": event.run_id,
            "turn_id": at.turn_id,
            "mode": event.mode,
            "status": RunStatus.RUNNING,
            "pending": [],
            "usage": {},
            "progress": [_progress(at, "Continuing" if event.continuation else "Working on it")],
            "rounds": 0,
            "quarantined": False,
            "edge": event.edge,
            "caller": event.caller,
            "error": "",
            "dispatched_seq": at.seq,
            "started_at": at.created_at,
            "updated_at": at.created_at,
        },
    )


@projection.handles(IngressDirective)
def _(event: IngressDirective, at: Entry) -> Iterator[Change]:
    yield _run(event.run_id, at, directives={"step_budget": event.step_budget, "required_approver": event.required_approver})


@projection.handles(ModelRound)
def _(event: ModelRound, at: Entry) -> Iterator[Change]:
    tools = [c["tool"] for c in event.calls]
    usage = {f"usage.{name}": n for name, n in (event.usage or {}).items() if isinstance(n, int)}
    yield Change(
        "workflow_logs",
        (event.run_id,),
        set={"updated_at": at.created_at},
        incr={"rounds": 1, **usage},
        append={"progress": _progress(at, "Using " + ", ".join(tools))} if tools else {},
    )


@projection.handles(ActionFinished)
def _(event: ActionFinished, at: Entry) -> Iterator[Change]:
    yield _run(event.run_id, at, progress=f"{event.tool} {'finished' if event.ok else 'failed'}")


def _request(
    event: ClientActionRequested | ApprovalRequest | QuestionRequest, at: Entry, *, kind: str, tool: str, arguments: dict,
    expires_at: str = "", reattempt_of: dict | None = None, waiting_for: str, approver: str = "", editable: list | None = None,
) -> Iterator[Change]:
    yield Change(
        "tool_usage_logs",
        (event.run_id, event.call_id),
        create={
            "run_id": event.run_id,
            "call_id": event.call_id,
            "turn_id": at.turn_id,
            "kind": kind,
            "tool": tool,
            "arguments": arguments,
            "status": "pending",
            "output": None,
            "answered_by": "",
            "requested_at": at.created_at,
            "answered_at": None,
            "accepted_seq": None,
            "expires_at": expires_at or None,
            "reattempt_of": reattempt_of or {},
            "approver": approver,
            "editable": editable or [],
        },
    )
    yield Change(
        "workflow_logs",
        (event.run_id,),
        set={"status": RunStatus.WAITING, "updated_at": at.created_at},
        append={"pending": event.call_id, "progress": _progress(at, waiting_for)},
    )


@projection.handles(ClientActionRequested)
def _(event: ClientActionRequested, at: Entry) -> Iterator[Change]:
    yield from _request(
        event, at, kind="client_tool", tool=event.tool, arguments=event.arguments, expires_at=event.expires_at,
        waiting_for=f"Waiting for {event.tool}",
    )


@projection.handles(ApprovalRequest)
def _(event: ApprovalRequest, at: Entry) -> Iterator[Change]:
    yield from _request(
        event, at, kind="approval", tool=event.tool, arguments=event.arguments, reattempt_of=event.reattempt_of,
        expires_at=event.expires_at, approver=event.approver, editable=event.editable,
        waiting_for=f"Waiting for approval of {event.tool}{' from the team' if event.approver == 'staff' else ''}",
    )


@projection.handles(QuestionRequest)
def _(event: QuestionRequest, at: Entry) -> Iterator[Change]:
    yield from _request(
        event, at, kind="question", tool="ask_question", arguments={"question": event.question, **event.arguments},
        waiting_for="Waiting for an answer",
    )


def _answer(
    event: ClientResultAccepted | ApprovalResponse | QuestionResponse, at: Entry, *, status: str, output: Any, line: str
) -> Iterator[Change]:
    yield Change(
        "tool_usage_logs",
        (event.run_id, event.call_id),
        set={
            "status": status,
            "output": output,
            "answered_by": event.answered_by,
            "answered_at": at.created_at,
            "accepted_seq": at.seq,
        },
    )
    yield Change(
        "workflow_logs",
        (event.run_id,),
        set={"updated_at": at.created_at, **({"status": RunStatus.RUNNING} if event.run_resumes else {})},
        discard={"pending": event.call_id},
        append={"progress": _progress(at, line)},
    )


@projection.handles(ClientResultAccepted)
def _(event: ClientResultAccepted, at: Entry) -> Iterator[Change]:
    yield from _answer(event, at, status="answered", output=event.output, line=f"{event.tool} answered{_by(event.answered_by)}")


@projection.handles(ApprovalResponse)
def _(event: ApprovalResponse, at: Entry) -> Iterator[Change]:
    decided = {"approve": "approved", "deny": "denied"}.get(event.decision, "expired")
    output = {"decision": event.decision, "reviewed": event.reviewed}
    if event.edited_arguments:
        output["edited_arguments"] = event.edited_arguments
    if event.decision == "expired":
        yield from _answer(event, at, status=decided, output=output, line="The approval expired")
        return
    yield from _answer(
        event, at, status=decided, output=output,
        line=f"{event.reviewed.get('tool', 'Action')} {decided}{' with changes' if event.edited_arguments else ''}{_by(event.answered_by)}",
    )


@projection.handles(QuestionResponse)
def _(event: QuestionResponse, at: Entry) -> Iterator[Change]:
    yield from _answer(
        event, at, status="answered", output={"declined": True} if event.declined else {"answer": event.answer},
        line=f"Question {'skipped' if event.declined else 'answered'}{_by(event.answered_by)}",
    )


@projection.handles(CompletionRequested)
def _(event: CompletionRequested, at: Entry) -> Iterator[Change]:
    if event.outcome == "completed":
        yield _run(event.run_id, at, progress="Completion accepted")
    else:
        yield _run(event.run_id, at, progress=f"Completion not yet possible: {event.reason}".rstrip(": "))


@projection.handles(TurnComplete)
def _(event: TurnComplete, at: Entry) -> Iterator[Change]:
    yield _run(event.run_id, at, status=RunStatus.COMPLETED, progress="Reply ready", pending=[])


@projection.handles(TurnFailed)
def _(event: TurnFailed, at: Entry) -> Iterator[Change]:
    yield _run(event.run_id, at, status=RunStatus.FAILED, progress="The run failed", error=event.error)


@projection.handles(TurnExpired)
def _(event: TurnExpired, at: Entry) -> Iterator[Change]:
    yield _run(event.run_id, at, status=RunStatus.EXPIRED, progress="The pending request expired", pending=[])
    for call_id in event.call_ids:
        yield Change("tool_usage_logs", (event.run_id, call_id), set={"status": "expired"})


@projection.handles(TurnAmbiguous)
def _(event: TurnAmbiguous, at: Entry) -> Iterator[Change]:
    yield _run(
        event.run_id, at, status=RunStatus.INTERRUPTED, progress=f"Interrupted: the outcome of {event.tool} is unknown", quarantined=True
    )


@projection.handles(TurnSuperseded)
def _(event: TurnSuperseded, at: Entry) -> Iterator[Change]:
    for call_id in event.call_ids:
        yield Change("tool_usage_logs", (event.run_id, call_id), set={
            "status": "declined", "output": {"declined": True, "reason": event.reason}, "answered_by": event.declined_by,
            "answered_at": at.created_at, "accepted_seq": at.seq,
        })
    yield _run(event.run_id, at, status=RunStatus.COMPLETED, progress="Closed: the customer wrote instead", pending=[])


@projection.handles(TurnHandedOff)
def _(event: TurnHandedOff, at: Entry) -> Iterator[Change]:
    for call_id in event.call_ids:
        yield Change("tool_usage_logs", (event.run_id, call_id), set={
            "status": "withdrawn", "output": {"withdrawn": True, "reason": event.reason}, "answered_by": "",
            "answered_at": at.created_at, "accepted_seq": at.seq,
        })
    yield _run(event.run_id, at, status=RunStatus.HANDED_OFF, progress="Handed to a person", pending=[])


@projection.handles(TurnRetried)
def _(event: TurnRetried, at: Entry) -> Iterator[Change]:
    if event.reason:
        yield _run(event.run_id, at, status=RunStatus.RUNNING, progress=f"Retrying after {event.reason}")
    else:
        yield _run(event.run_id, at, status=RunStatus.RUNNING, progress="Resumed after an interruption")


@projection.handles(QuarantineSettled)
def _(event: QuarantineSettled, at: Entry) -> Iterator[Change]:
    # The run stays interrupted (its turn is over); only the decision staff were asked for is gone.
    yield _run(event.run_id, at, progress="Quarantine settled: a re-attempt succeeded", quarantined=False)


@projection.handles(QuarantineResolved)
def _(event: QuarantineResolved, at: Entry) -> Iterator[Change]:
    yield _run(
        event.run_id,
        at,
        # Only a retry runs on in this turn; done and abandon leave it for Continue.
        status=RunStatus.RUNNING if event.resolution == "not_done_retry" else RunStatus.INTERRUPTED,
        progress=f"Quarantine resolved ({event.resolution.replace('_', ' ')})",
        quarantined=False,
    )
