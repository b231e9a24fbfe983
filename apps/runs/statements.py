"""The hot statements on the runs' tables (`apps/ledger/sql.py: Statement`)."""

from __future__ import annotations

from apps.ledger.sql import Statement
from apps.runs.machine import OPEN, RunStatus
from apps.runs.models import WorkflowLog

# The run a conversation's writer drives next: only what driving needs (its progress and usage
# grow with every step).
OLDEST_RUNNING = Statement(
    """
    SELECT {runs.run_id}, {runs.turn_id}, {runs.caller}, {runs.dispatched_seq}
    FROM {runs}
    WHERE {runs.conversation} = %s AND {runs.status} = %s
    ORDER BY {runs.dispatched_seq}
    LIMIT 1
    """,
    tables={"runs": WorkflowLog},
    params=("runs.conversation", "runs.status"),
    returns=("runs.run_id", "runs.turn_id", "runs.caller", "runs.dispatched_seq"),
)


# Asked by every batch one: may a new turn start (no run running or waiting for an answer)?
OPEN_RUN = Statement(
    """
    SELECT 1 FROM {runs}
    WHERE {runs.conversation} = %s AND {runs.status} IN (%s, %s) AND NOT {runs.quarantined}
    LIMIT 1
    """,
    tables={"runs": WorkflowLog},
    params=("runs.conversation", "runs.status", "runs.status"),
    returns=("",),
)


def has_open_run(conversation_id: str) -> bool:
    """Whether a run of the conversation is running or waiting, and not quarantined."""
    return bool(OPEN_RUN.rows(conversation_id, *sorted(OPEN)))


def oldest_running(conversation_id: str) -> WorkflowLog | None:
    """The running run of a conversation dispatched first, with the fields driving needs; None when none runs."""
    found = OLDEST_RUNNING.rows(conversation_id, RunStatus.RUNNING)
    if not found:
        return None
    [(run_id, turn_id, caller, dispatched_seq)] = found
    return WorkflowLog(run_id=run_id, conversation_id=conversation_id, turn_id=turn_id, caller=caller,
                       dispatched_seq=dispatched_seq, status=RunStatus.RUNNING)
