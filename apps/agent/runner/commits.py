"""
The commit protocol: how a run's steps reach the log, each once, under the run's lease.

A step goes on the head the run's previous commit left, with the lease given up in the same round
trip when it ends or pauses the run (`store.commit_optimistic`); when anyone else appended since,
the conversation's row is locked and the append made under the lock, control read there first
(`control.ControlCheck`). A database that dropped its connection is waited out, and a commit whose
answer was lost is recognised in the log rather than written twice. The journal keeps what the
run's commits wrote, so that its next step reads the turn from memory, not from the log.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from apps.agent.runner.control import ControlCheck
from apps.conversations import broadcast, lease
from apps.ledger import store

log = logging.getLogger(__name__)


@dataclass
class Journal:
    """What one run's appends committed: the head they left, and the entries since the turn was last read."""

    head: tuple[int, str] | None = None
    written: list = field(default_factory=list)
    control: ControlCheck = field(default_factory=ControlCheck)  # who had control at `head`, as far as the run knows


def append(conversation_id: str, turn_id: str, events: list, held: lease.Held, journal: Journal, actor: str = "agent",
           *, release: bool = False) -> list:
    """
    Commit a step's entries, on a fresh connection if the database dropped the one in use.

    `release`: the step ends or pauses the run, and the lease is given up in the same commit.

    What the step holds (an action's outcome above all) is never thrown away for a broken
    connection: a restart or failover of PostgreSQL is waited out for WAYPOINT_DB_RETRY_SECONDS,
    and a commit whose answer was lost is recognised in the log rather than written twice.
    :raises HandedOff: the step is the agent's, and a person took control since the run last knew it
    """
    guess = journal.head
    delay, deadline = 0.05, time.monotonic() + settings.WAYPOINT_DB_RETRY_SECONDS
    journal.control.committing()
    while True:
        try:
            if guess is not None:
                # The usual step: the append, and the lease given up with it, in one round trip.
                recorded, journal.head = store.commit_optimistic(
                    guess, held.token, conversation_id=conversation_id, events=events, turn_id=turn_id, actor=actor,
                    now=timezone.now(), then=[lease.releasing(conversation_id=conversation_id, held=held)] if release else [],
                )
            else:
                with transaction.atomic():
                    # Off the run's own head: control as of this commit is read under the row lock.
                    journal.control.at_locked_commit(conversation_id, events)
                    recorded, journal.head = store.append_optimistic(
                        None, held.token, conversation_id=conversation_id, events=events, turn_id=turn_id, actor=actor,
                        now=timezone.now(),
                    )
                    if release:
                        lease.release(conversation_id=conversation_id, held=held)
            broadcast.on_commit(conversation_id, recorded[-1].seq)
            break
        except store.HeadMoved:
            guess = None  # someone else appended (or took the lease): lock the row and see
        except (OperationalError, InterfaceError):
            if time.monotonic() > deadline:
                raise
            log.warning("the database connection broke while committing to %s; trying again", conversation_id, exc_info=True)
            connection.close()
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
            guess = None
            landed = _landed(conversation_id, turn_id, events)
            if landed is not None:
                recorded, journal.head = landed, None
                journal.control.lost()
                break
    journal.written.extend(recorded)
    return recorded


def _landed(conversation_id: str, turn_id: str, events: list) -> list | None:
    """The entries of a commit that went through though its answer was lost, or None if it did not."""
    try:
        tail = store.read(conversation_id, turn_id=turn_id)[-len(events):]
    except (OperationalError, InterfaceError):
        connection.close()
        return None  # still unreachable: the next attempt finds out
    if len(tail) == len(events) and all(
        (r.kind, r.payload) == (e.kind, json.loads(json.dumps(e.payload()))) for r, e in zip(tail, events, strict=True)
    ):
        return tail
    return None


MEMORY_KINDS = frozenset({"memory_remembered", "memory_cleared"})


def turn_events(conversation_id: str, turn_id: str, known: list, journal: Journal) -> tuple[list, bool]:
    """
    Return the turn's entries: `known` plus what the journal says was appended since, or the log read afresh.

    The entries just appended are used only when they directly follow `known` in the conversation's
    log (no gap in `seq`, so no other writer appended in between); otherwise the log is read. The
    flag says whether anything but this run's own turn entries may have been written since.
    """
    written, journal.written = journal.written, []
    if known and not written:
        return known, False  # nothing committed since (a model round waiting for its action)
    seqs = [r.seq for r in written]
    if known and written and seqs == list(range(known[-1].seq + 1, known[-1].seq + 1 + len(written))) and all(
        r.turn_id == turn_id for r in written
    ):
        return known + written, any(r.kind in MEMORY_KINDS for r in written)
    return store.read(conversation_id, turn_id=turn_id), True
