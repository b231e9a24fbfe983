"""
The `action_logs` store as a projection of the log (pure: no Django).

Registered in `ActionsConfig.ready()`; see `apps/ledger/projection.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

from apps.ledger.projection import Change, Entry, Projection
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    QuarantineResolved,
    QuarantineSettled,
    TurnAmbiguous,
    TurnHandedOff,
)

projection = Projection({"action_logs": ("turn_id", "call_id")})

RESOLVED = {"done": "resolved_done", "not_done_retry": "resolved_not_done", "abandon": "abandoned"}


@projection.handles(ActionStarted)
def _(event: ActionStarted, at: Entry) -> Iterator[Change]:
    key = (at.turn_id, event.call_id)
    if event.attempt > 1:
        yield Change("action_logs", key, set={"status": "started", "attempts": event.attempt, "started_at": at.created_at})
        return
    yield Change(
        "action_logs",
        key,
        create={
            "turn_id": at.turn_id,
            "call_id": event.call_id,
            "run_id": event.run_id,
            "tool": event.tool,
            "action": event.action,
            "arguments": event.arguments,
            "side_effecting": event.side_effecting,
            "idempotency_key": event.idempotency_key,
            "status": "started",
            "output": None,
            "error": "",
            "attempts": 1,
            "started_at": at.created_at,
            "finished_at": None,
            "reattempt_of": event.reattempt_of or {},
        },
    )


@projection.handles(ActionFinished)
def _(event: ActionFinished, at: Entry) -> Iterator[Change]:
    yield Change(
        "action_logs",
        (at.turn_id, event.call_id),
        set={
            "status": "succeeded" if event.ok else "failed",
            "output": event.output,
            "error": event.error,
            "finished_at": at.created_at,
        },
    )


@projection.handles(TurnAmbiguous)
def _(event: TurnAmbiguous, at: Entry) -> Iterator[Change]:
    yield Change("action_logs", (at.turn_id, event.call_id), set={"status": "ambiguous"})


@projection.handles(TurnHandedOff)
def _(event: TurnHandedOff, at: Entry) -> Iterator[Change]:
    for call_id in event.interrupted:
        yield Change("action_logs", (at.turn_id, call_id), set={"status": "interrupted", "finished_at": at.created_at})


@projection.handles(QuarantineSettled)
def _(event: QuarantineSettled, at: Entry) -> Iterator[Change]:
    yield Change("action_logs", (event.turn_id, event.call_id), set={"status": "settled"})


@projection.handles(QuarantineResolved)
def _(event: QuarantineResolved, at: Entry) -> Iterator[Change]:
    yield Change("action_logs", (at.turn_id, event.call_id), set={"status": RESOLVED[event.resolution]})
