"""
The run state machine (PRODUCT.md `run_status`, rules 5, 6 and 8).

Pure: no Django. A run is `running` from its turn's dispatch; a client action, approval or question
makes it `waiting` until every pending call has its answer; its turn ends `completed`, `failed` or
`expired`, or it stops `interrupted` (ambiguous, quarantined) until staff resolve it or Continue
starts a new turn. The projection (`apps/runs/projection.py`) moves a run's status by these states.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    RUNNING = "running"
    WAITING = "waiting"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    EXPIRED = "expired"
    HANDED_OFF = "handed_off"  # control left the agent: the run stopped, its pending requests withdrawn


# A turn is still open: no new turn may start on the conversation (unless it is quarantined).
OPEN = frozenset({RunStatus.RUNNING, RunStatus.WAITING})
# A turn that stopped short: Continue starts a new turn with the stored history.
CONTINUABLE = frozenset({RunStatus.INTERRUPTED, RunStatus.FAILED, RunStatus.EXPIRED})

TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    # a request pauses it; batch two completes it; bounded failure fails it; ambiguity interrupts it;
    # a retry after a crash or an error keeps it running
    # control leaving the agent hands it off
    RunStatus.RUNNING: frozenset({RunStatus.RUNNING, RunStatus.WAITING, RunStatus.COMPLETED, RunStatus.FAILED,
                                  RunStatus.INTERRUPTED, RunStatus.HANDED_OFF}),
    # the last answer resumes it; a simple run's pending request expires; an answer that is not the
    # last keeps it waiting; the customer writing instead declines what waits and ends it
    RunStatus.WAITING: frozenset({RunStatus.WAITING, RunStatus.RUNNING, RunStatus.EXPIRED, RunStatus.COMPLETED,
                                  RunStatus.HANDED_OFF}),
    # staff: not done and retry runs it again; done or abandon leave it for Continue
    RunStatus.INTERRUPTED: frozenset({RunStatus.RUNNING, RunStatus.INTERRUPTED}),
    RunStatus.COMPLETED: frozenset(),
    RunStatus.FAILED: frozenset(),
    RunStatus.EXPIRED: frozenset(),
    RunStatus.HANDED_OFF: frozenset(),
}


def can_move(before: RunStatus | str, after: RunStatus | str) -> bool:
    """Whether a run in status `before` may move to `after`."""
    return RunStatus(after) in TRANSITIONS[RunStatus(before)]


def is_final(status: RunStatus | str) -> bool:
    """Whether a run in this status takes no further step in its turn."""
    return not TRANSITIONS[RunStatus(status)]


class TurnStatus(StrEnum):
    """How a turn stands in the history a model is given (PRODUCT.md rule 8, "History is the record")."""

    OPEN = "open"
    COMPLETED = "completed"
    FAILED = "failed"
    EXPIRED = "expired"
    INTERRUPTED = "interrupted"  # ambiguous, or staff confirmed the unknown outcome: it waits for Continue
    ABANDONED = "abandoned"
    HANDED_OFF = "handed_off"  # control left the agent before the turn ended
    HUMAN = "human"  # not a turn: the part of the conversation a person held
