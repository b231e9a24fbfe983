"""
How a run stops when its own steps do not end it: a person took the conversation, or it failed.

A run that finds control gone (`control.HandedOff`) stops at that step boundary (`hand_off`); one
that raised is retried after a backoff, a bounded number of times in a row, then fails
(`retry_after_error`); one resumed again and again without getting a step further fails in its
step loop (`steps.execute_run`). Whatever stops a run, one rule holds, kept in `stopping`: a side
effect that may have happened without a recorded outcome quarantines its turn instead.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db import DatabaseError, connection

from apps.agent import handoff, turns
from apps.agent.runner.commits import Journal, append
from apps.agent.statements import assistant_config
from apps.conversations import lease
from apps.ledger import store
from apps.ledger.types import EventKind, TurnAmbiguous, TurnFailed, TurnHandedOff, TurnRetried
from apps.runs.models import WorkflowLog


def stopping(run: WorkflowLog, step: turns.Step, stop: EventKind) -> EventKind:
    """
    The entry that stops a run: `stop`, unless a side effect of the run is in doubt.

    A side effect that went out before its writer died, with no outcome recorded (`turns.Ambiguous`),
    is ambiguous and quarantined exactly as it would be without the stop (PRODUCT.md rule 8), so
    staff learn its outcome is unknown and it keeps one identity: it is never retried, failed or
    handed off.
    """
    if isinstance(step, turns.Ambiguous):
        call = step.call
        return TurnAmbiguous(run_id=run.run_id, call_id=call.call_id, tool=call.tool,
                             idempotency_key=call.idempotency_key or f"{run.turn_id}:{call.call_id}")
    return stop


def hand_off(conversation_id: str, run: WorkflowLog, held: lease.Held) -> bool:
    """
    Stop a run whose conversation left the agent's control: `turn_handed_off`, and the lease given up.

    A waiting run was stopped by the write that took control; one that was running stops here, at
    the step boundary where it found out; one whose side effect started without a recorded outcome
    (its writer died) is quarantined as ambiguous instead (`stopping`), and one without side effects
    is closed as interrupted with the run. True: the lease went with the commit.
    """
    events = store.read(conversation_id, turn_id=run.turn_id)
    state = turns.turn_state(events)
    if state.ended or state.ambiguous_call:
        return False
    # An action without side effects that its dead writer left started is not run again now:
    # closed with the run, or its row and the tool summary would show it under way for ever.
    interrupted = [c.call_id for c in state.calls.values() if c.started and c.finished is None]
    stop = TurnHandedOff(run_id=run.run_id, reason=handoff.WITHDRAWN, interrupted=interrupted)
    append(conversation_id, run.turn_id, [stopping(run, _next_step(conversation_id, state), stop)], held, Journal(),
           release=True)
    return True


def retry_after_error(conversation_id: str, run: WorkflowLog, held: lease.Held, exc: Exception) -> bool:
    """
    Record an unexpected error of a run: a retry after a backoff (True), or at the bound its failure.

    The retry is `turn_retried` with a safe reason (the error's type, never its text, which may
    hold model output or a secret). After `turns.MAX_RETRIES` retries in a row without a step
    committed in between, the run is `failed` (or quarantined: `stopping`) and the conversation
    takes new turns again (PRODUCT.md rule 8, "Bounded failure").
    :raises LeaseLost: another writer took the conversation meanwhile
    :raises HandedOff: a person took the conversation meanwhile
    """
    if isinstance(exc, DatabaseError):
        connection.close_if_unusable_or_obsolete()  # a lost connection is opened again for the record
    events = store.read(conversation_id, turn_id=run.turn_id)
    state = turns.turn_state(events)
    if state.ended or state.ambiguous_call or not events:
        return False
    reason = f"an unexpected error ({type(exc).__name__})"
    retries = turns.stalled_retries(events)
    journal = Journal()
    if retries >= turns.MAX_RETRIES:
        error = f"The run stopped after {retries} retries, each ending in {reason}. Send a new message to try again."
        stop = stopping(run, _next_step(conversation_id, state), TurnFailed(run_id=run.run_id, error=error))
        append(conversation_id, run.turn_id, [stop], held, journal)
        return False
    marker = TurnRetried(run_id=run.run_id, attempt=state.retries + 1, after_seq=events[-1].seq, reason=reason)
    append(conversation_id, run.turn_id, [marker], held, journal)
    time.sleep(settings.WAYPOINT_RUN_RETRY_SECONDS * 2**retries)  # the lease is renewed meanwhile (leases.Renewals)
    return True


def _next_step(conversation_id: str, state: turns.TurnState) -> turns.Step:
    """The step the run would take next, under its assistant's configuration as it is now."""
    config = assistant_config(conversation_id)
    return turns.next_step(state, config, turns.effective_budget(settings.WAYPOINT_STEP_BUDGET, config, state))
