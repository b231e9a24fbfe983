"""
Recovery after a crash, and the clock's work: runs whose writer is gone, requests whose time ran out.

Each server process runs a recovery loop (`start`): a run left `running` by a process that died is
driven again under its original turn id, as a retry (`recover_once`). The clock's work
(`housekeep`: expiry, handoff requests nobody took, idle close and retention) is minutes-scale and
done less often. Both are driven from committed rows, so any process may do them after a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from apps.agent import followups, handoff
from apps.agent.runner.drive import claim, drive, kick, recover_in_worker
from apps.agent.statements import HOUSEKEEPING_DUE, ORPHANED
from apps.conversations import broadcast
from apps.conversations.actions import locked
from apps.ledger import store
from apps.ledger.types import ApprovalResponse, TurnExpired
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.workspaces import actions as workspace_actions

log = logging.getLogger(__name__)

_started = threading.Event()


def recover_once(*, housekeeping: bool = True) -> int:
    """
    Drive every conversation that has a run left `running` by a writer that is gone.

    A run is orphaned when it has not moved for a lease period and its conversation's lease is free
    or expired. With `housekeeping`, also does the clock's work (`housekeep`). Returns how many
    conversations were handed to workers.
    """
    now = timezone.now()
    stale = now - timedelta(seconds=settings.WAYPOINT_LEASE_SECONDS)
    handed = 0
    for (cid,) in ORPHANED.rows(stale, now):
        cid = str(cid)
        if settings.WAYPOINT_RUNNER == "thread":
            if not recover_in_worker(cid):
                continue  # still queued from an earlier pass: one recovery per conversation at a time
        else:
            drive(cid, recovering=True)
        handed += 1
    if housekeeping:
        housekeep(now=now)
    return handed


def housekeep(*, now) -> None:
    """
    The clock's work, which only has to be on time to the second or so: expired simple runs, handoff
    requests nobody took, idle close and retention.

    Each part asks first, in one named statement, whether anything is due at all, so an idle
    server's pass is one round trip.
    """
    [(expiring, queued, replied)] = HOUSEKEEPING_DUE.rows(now, now)
    if expiring:
        expire_requests(now=now)
    if queued:
        handoff.time_out_handoffs(now=now)  # the queue's clock: requests that nobody took in time
    if replied:
        followups.send_due(now=now)
    workspace_actions.reconcile(now=now)


def expire_requests(*, now) -> int:
    """
    Resolve the pending requests whose time ran out: approvals as `expired`, simple runs as a whole.

    An approval that expired is answered by the clock (PRODUCT.md "Approvals: expiry, edits,
    approvers") and its run goes on; a simple run's client action that expired ends the run as
    `expired`. Each is decided under the conversation's row lock on what is still pending then,
    so two processes' clocks and a person answering at the same moment resolve it once.
    """
    expired = 0
    due = (
        ToolUsageLog.objects.filter(status="pending", expires_at__lte=now)
        .values_list("conversation_id", "run_id", "turn_id")
        .distinct()[:200]
    )
    for cid, run_id, turn_id in due:
        with transaction.atomic():
            conversation = locked(str(cid))
            run = WorkflowLog.objects.filter(run_id=run_id, status="waiting").first()
            if run is None:
                continue
            if expire_approvals(conversation, run, now=now):
                expired += 1
                continue
            calls = list(ToolUsageLog.objects.filter(run_id=run_id, status="pending").values_list("call_id", flat=True))
            if not calls:
                continue
            recorded = store.append(conversation, [TurnExpired(run_id=run_id, call_ids=calls)], turn_id=turn_id, actor="system", now=now)
            broadcast.on_commit(cid, recorded[-1].seq)
            expired += 1
    return expired


def expire_approvals(conversation, run: WorkflowLog, *, now) -> int:
    """
    Resolve a waiting run's approvals that passed their time as `expired`, in the caller's transaction.

    The caller holds the conversation's row lock. The run resumes once nothing else of it is
    pending: the model is told `{"expired": true}` and may go on. Returns how many expired.
    """
    due = list(ToolUsageLog.objects.filter(run_id=run.run_id, kind="approval", status="pending", expires_at__lte=now)
               .order_by("requested_at", "id").values_list("call_id", flat=True))
    if not due:
        return 0
    remaining = set(run.pending) - set(due)
    events = [ApprovalResponse(run_id=run.run_id, call_id=call_id, decision="expired", reviewed={},
                               run_resumes=not remaining and i == len(due) - 1) for i, call_id in enumerate(due)]
    recorded = store.append(conversation, events, turn_id=run.turn_id, actor="system", now=now)
    broadcast.on_commit(str(conversation.id), recorded[-1].seq)
    if not remaining:
        held = claim(str(conversation.id))
        transaction.on_commit(partial(kick, str(conversation.id), held))
    return len(due)


def start() -> None:
    """Start this process's recovery loop (once); called when the ASGI application loads."""
    if settings.WAYPOINT_RUNNER != "thread" or _started.is_set():
        return
    _started.set()
    threading.Thread(target=_recovery_loop, daemon=True, name="waypoint-recovery").start()


def _recovery_loop() -> None:
    # Orphans are looked for every WAYPOINT_RECOVERY_INTERVAL_SECONDS: a crashed turn resumes that
    # soon. The clock's work is minutes-scale (expiry, queue time-outs, idle close) and waits for
    # WAYPOINT_HOUSEKEEPING_INTERVAL_SECONDS, so an idle server spends next to nothing.
    last_housekeeping = 0.0
    while True:
        try:
            close_old_connections()
            due = time.monotonic() - last_housekeeping >= settings.WAYPOINT_HOUSEKEEPING_INTERVAL_SECONDS
            recover_once(housekeeping=due)
            if due:
                last_housekeeping = time.monotonic()
        except Exception:
            log.exception("recovery pass failed")
        finally:
            connection.close()
        time.sleep(settings.WAYPOINT_RECOVERY_INTERVAL_SECONDS)
