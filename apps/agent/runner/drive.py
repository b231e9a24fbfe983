"""
Claim, kick and drive: how this process comes to be the single writer of a conversation, and is.

`claim` takes the conversation's lease in the transaction that gives a run work, and `kick` hands
the conversation to this process once that commits: driven inline, or by a worker thread. `drive`
executes the conversation's running runs oldest first (`steps.execute_run`) under the lease until
none is left; a run stopped by a handoff or an error goes to `stops`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from apps.agent.runner.control import HandedOff
from apps.agent.runner.leases import HOLDER, renewals
from apps.agent.runner.steps import execute_run
from apps.agent.runner.stops import hand_off, retry_after_error
from apps.conversations import lease
from apps.conversations.models import Lease
from apps.ledger.store import LeaseLost
from apps.runs.statements import oldest_running

log = logging.getLogger(__name__)

_workers_guard = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_recovering: set[str] = set()  # conversations handed to a worker by recovery and not yet driven


class ConversationLocks:
    """
    One lock per conversation that this process is driving, kept only while someone holds or waits for it.

    A process drives many conversations over its life; a lock is dropped with its last user, so the
    table holds the conversations in progress, not every one ever driven.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._held: dict[str, tuple[threading.Lock, int]] = {}  # conversation -> (its lock, holders and waiters)

    @contextlib.contextmanager
    def hold(self, conversation_id: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._held.get(conversation_id, (None, 0))
            lock = lock or threading.Lock()
            self._held[conversation_id] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._held[conversation_id]
                if users == 1:
                    del self._held[conversation_id]
                else:
                    self._held[conversation_id] = (lock, users - 1)

    def __len__(self) -> int:
        return len(self._held)


_locks = ConversationLocks()


def claim(conversation_id: str) -> lease.Held | None:
    """
    Take a conversation's lease inside the caller's transaction, for the drive its commit kicks.

    Batch one (or the answer that resumes a paused run) then commits with the lease: one commit,
    not two. Only a free or expired lease is taken; a live one, this process's too, stays with
    its holder, whose drive looks for new runs before it lets go. None where nothing drives here.
    """
    if settings.WAYPOINT_RUNNER not in ("inline", "thread"):
        return None
    return lease.acquire(conversation_id=conversation_id, holder=HOLDER, now=timezone.now(),
                         seconds=settings.WAYPOINT_LEASE_SECONDS, only_free=True)


def kick(conversation_id: str, held: lease.Held | None = None) -> None:
    """Have this process drive a conversation whose runs may have work to do (under `held`, from `claim`)."""
    mode = settings.WAYPOINT_RUNNER
    if mode == "inline":
        drive(conversation_id, held=held)
    elif mode == "thread":
        _workers().submit(_drive_in_worker, conversation_id, False, held)


def recover_in_worker(conversation_id: str) -> bool:
    """Hand a conversation that recovery found to a worker; False when an earlier pass's is still queued."""
    with _workers_guard:
        if conversation_id in _recovering:
            return False
        _recovering.add(conversation_id)
    _workers().submit(_drive_in_worker, conversation_id, True)
    return True


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _workers_guard:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=int(os.environ.get("WAYPOINT_WORKERS", "8")), thread_name_prefix="waypoint-run")
        return _pool


def _drive_in_worker(conversation_id: str, recovering: bool, held: lease.Held | None = None) -> None:
    close_old_connections()
    try:
        drive(conversation_id, recovering=recovering, held=held)
    except Exception:
        log.exception("driving conversation %s failed", conversation_id)
    finally:
        if recovering:
            with _workers_guard:
                _recovering.discard(conversation_id)
        connection.close()


def drive(conversation_id: str, *, recovering: bool = False, held: lease.Held | None = None) -> None:
    """
    Execute a conversation's running runs, oldest first, as its single writer.

    `recovering`: the recovery loop found a run orphaned by a writer that is gone, so the first
    run is retried (`turn_retried`) unless its outcome is ambiguous. `held`: the lease the kicking
    commit took (`claim`); otherwise it is acquired here. Returns at once when another process
    holds the lease; in thread mode this process looks again when that lease would expire, in
    case its holder died.
    """
    with _locks.hold(conversation_id):
        while _drive_once(conversation_id, recovering=recovering, held=held):
            recovering, held = False, None


def _drive_once(conversation_id: str, *, recovering: bool, held: lease.Held | None) -> bool:
    """Drive under one lease; True when a run was dispatched after the last look and needs another pass."""
    held = held or lease.acquire(
        conversation_id=conversation_id, holder=HOLDER, now=timezone.now(), seconds=settings.WAYPOINT_LEASE_SECONDS
    )
    if held is None:
        _look_again_at_expiry(conversation_id)
        return False
    renewals.keep(conversation_id, held)
    drained = released = False
    try:
        # A holder that never released the lease died mid-drive: its run resumes as a retry too.
        retry = "recovery" if recovering else "takeover" if held.previous_holder else ""
        run = oldest_running(conversation_id)
        while run is not None:
            try:
                released = execute_run(run, held, retry=retry)
            except HandedOff:
                released = hand_off(conversation_id, run, held)
            except LeaseLost:
                raise
            except Exception as exc:  # noqa: BLE001 - a run that fails for any reason is retried a bounded number of times
                log.exception("run %s of conversation %s failed", run.run_id, conversation_id)
                retry = ""
                try:
                    if retry_after_error(conversation_id, run, held, exc):
                        continue
                except HandedOff:
                    # A person took the conversation meanwhile: the run stops now, not after recovery finds it.
                    released = hand_off(conversation_id, run, held)
            retry = ""
            if released:
                break  # the run's last commit gave the lease up: another run needs a lease of its own
            after = oldest_running(conversation_id)
            if after is not None and after.run_id == run.run_id:
                log.error("run %s made no progress; leaving it for recovery", run.run_id)
                break
            run = after
        else:
            drained = True
    except LeaseLost:
        log.warning("lost the lease of conversation %s; another process continues", conversation_id)
    finally:
        renewals.drop(conversation_id)
        if not released:
            lease.release(conversation_id=conversation_id, held=held)
    # A turn dispatched between our last look and the release had its own kick refused by our
    # lease: nobody else will drive it until recovery, so take it now.
    return (drained or released) and oldest_running(conversation_id) is not None


def _look_again_at_expiry(conversation_id: str) -> None:
    """
    Kick a conversation again when the lease that refused us expires, if it still has a running run.

    A live holder renews its lease and drives the run itself; a holder that died leaves a lease
    that expires, and this process takes over then instead of waiting for the recovery loop.
    """
    if settings.WAYPOINT_RUNNER != "thread" or oldest_running(conversation_id) is None:
        return
    expires_at = Lease.objects.filter(conversation_id=conversation_id).values_list("expires_at", flat=True).first()
    if expires_at is None:
        return
    delay = max(0.05, (expires_at - timezone.now()).total_seconds() + 0.05)
    timer = threading.Timer(delay, kick, args=[conversation_id])
    timer.daemon = True
    timer.start()
