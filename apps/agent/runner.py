"""
Executing runs: the single writer of each conversation, and recovery after a crash.

`kick` hands a conversation to this process's workers once batch one (or the last answer of a
paused run) has committed. `drive` takes the conversation's lease, then executes its running runs
oldest first, one committed step at a time, until none is left. The recovery loop finds runs left
`running` by a process that died and drives them again under their original turn id.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import (
    DatabaseError,
    InterfaceError,
    OperationalError,
    close_old_connections,
    connection,
    transaction,
)
from django.utils import timezone

from apps.actions.registry import ACTIONS, ActionCall, ActionError, OutcomeUnknown
from apps.agent import calls, followups, handoff, history, knowledge, turns
from apps.agent.providers import ModelFailed, ModelRequest, provider_for
from apps.agent.statements import ASSISTANT_CONFIG, HOUSEKEEPING_DUE, ORPHANED, assistant_config
from apps.agent.tools import approval_settings, named_approver
from apps.conversations import broadcast, faults, lease
from apps.conversations import statements as conversation_statements
from apps.conversations.actions import locked, new_id
from apps.conversations.models import Lease
from apps.ledger import sql, store
from apps.ledger.store import LeaseLost
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ApprovalRequest,
    ApprovalResponse,
    ClientActionRequested,
    CompletionRequested,
    ConversationCompleted,
    ModelRound,
    QuarantineSettled,
    QuestionRequest,
    Recorded,
    TurnAmbiguous,
    TurnComplete,
    TurnExpired,
    TurnFailed,
    TurnHandedOff,
    TurnRetried,
)
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.runs.statements import oldest_running
from apps.toolsources.resolve import resolved
from apps.workspaces import actions as workspace_actions
from apps.workspaces.queries import active_facts, reading_active_facts
from apps.workspaces.storage import Workspace

log = logging.getLogger(__name__)

HOLDER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
_locks_guard = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_started = threading.Event()
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


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _locks_guard:
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
            with _locks_guard:
                _recovering.discard(conversation_id)
        connection.close()


class _Renewals:
    """
    Renews the leases this process's drives hold while their steps run (a slow model or action).

    One thread for all of them: a thread started and joined per drive cost about half a
    millisecond a turn, and most drives end before their first renewal is due. A renewal that
    finds the lease gone (released, or taken by another writer) stops renewing it; the drive
    learns of the loss from its next commit, which checks the lease.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._due: dict[str, tuple[lease.Held, float]] = {}  # conversation -> (its lease, when to renew it)
        self._wakes_at = float("inf")
        self._thread: threading.Thread | None = None
        self._pid = 0

    def keep(self, conversation_id: str, held: lease.Held) -> None:
        at = time.monotonic() + settings.WAYPOINT_LEASE_SECONDS / 3
        with self._changed:
            if self._pid != os.getpid():  # not started yet, or started in the process this one forked from
                self._pid = os.getpid()
                self._due.clear()  # a parent's drives are not this process's to keep
                self._thread = None
            if self._thread is None or not self._thread.is_alive():
                self._wakes_at = float("inf")
                self._thread = threading.Thread(target=self._run, daemon=True, name="lease-renewals")
                self._thread.start()
            self._due[conversation_id] = (held, at)
            if at < self._wakes_at:
                self._changed.notify()

    def drop(self, conversation_id: str) -> None:
        """Stop renewing; a renewal already sent meanwhile is harmless: it cannot outlive a release."""
        with self._changed:
            self._due.pop(conversation_id, None)

    def _run(self) -> None:
        while True:
            with self._changed:
                due = self._wait_for_due()
                period = settings.WAYPOINT_LEASE_SECONDS / 3
                for conversation_id, held in due:
                    self._due[conversation_id] = (held, time.monotonic() + period)
            try:
                for conversation_id, held in due:
                    self._renew(conversation_id, held)
                connection.close()  # no connection held between renewals, seconds apart
            except Exception:  # noqa: BLE001 - this thread renews every drive's lease: it must not end
                log.warning("a round of lease renewals failed", exc_info=True)

    def _wait_for_due(self) -> list[tuple[str, lease.Held]]:
        while True:
            now = time.monotonic()
            due = [(conversation_id, held) for conversation_id, (held, at) in self._due.items() if at <= now]
            if due:
                return due
            self._wakes_at = min((at for _, at in self._due.values()), default=float("inf"))
            self._changed.wait(None if self._wakes_at == float("inf") else self._wakes_at - now)
            self._wakes_at = float("inf")

    def _renew(self, conversation_id: str, held: lease.Held) -> None:
        try:
            ok = lease.renew(conversation_id=conversation_id, held=held, now=timezone.now(),
                             seconds=settings.WAYPOINT_LEASE_SECONDS)
        except Exception:  # noqa: BLE001 - one failed renewal must not let the lease lapse silently
            log.warning("renewing the lease of %s failed; trying again", conversation_id, exc_info=True)
            with contextlib.suppress(Exception):  # a broken connection is opened again for the next one
                connection.close()
            return
        if not ok:
            with self._changed:
                if self._due.get(conversation_id, (None,))[0] == held:
                    del self._due[conversation_id]


_renewals = _Renewals()


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
    _renewals.keep(conversation_id, held)
    drained = released = False
    try:
        # A holder that never released the lease died mid-drive: its run resumes as a retry too.
        retry = "recovery" if recovering else "takeover" if held.previous_holder else ""
        run = oldest_running(conversation_id)
        while run is not None:
            try:
                released = execute_run(run, held, retry=retry)
            except HandedOff:
                released = _hand_off(conversation_id, run, held)
            except LeaseLost:
                raise
            except Exception as exc:  # noqa: BLE001 - a run that fails for any reason is retried a bounded number of times
                log.exception("run %s of conversation %s failed", run.run_id, conversation_id)
                retry = ""
                try:
                    if _retry_after_error(conversation_id, run, held, exc):
                        continue
                except HandedOff:
                    # A person took the conversation meanwhile: the run stops now, not after recovery finds it.
                    released = _hand_off(conversation_id, run, held)
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
        _renewals.drop(conversation_id)
        if not released:
            lease.release(conversation_id=conversation_id, held=held)
    # A turn dispatched between our last look and the release had its own kick refused by our
    # lease: nobody else will drive it until recovery, so take it now.
    return (drained or released) and oldest_running(conversation_id) is not None


class HandedOff(Exception):
    """Control left the agent (PRODUCT.md "Human handoff"): the run takes no further step."""


def _check_control(conversation_id: str, *, lock: bool = False, found: list[tuple] | None = None) -> None:
    """
    :raises HandedOff: a person has the conversation, or one was asked for

    `lock`: read it under the conversation's row lock, which a change of control takes too, so
    that no change can commit between this read and the caller's append. `found`: the rows of
    that read, made already with others (`_opening`) and nothing committed since.
    """
    if found is None:
        found = conversation_statements.control_mode(locked=lock).rows(conversation_id)
    if found and found[0][0] != "agent":
        raise HandedOff()


def _hand_off(conversation_id: str, run: WorkflowLog, held: lease.Held) -> bool:
    """
    Stop a run whose conversation left the agent's control: `turn_handed_off`, and the lease given up.

    A waiting run was stopped by the write that took control; one that was running stops here, at
    the step boundary where it found out; one whose side effect started without a recorded outcome
    (its writer died) is quarantined as ambiguous instead, and one without side effects is closed
    as interrupted with the run. True: the lease went with the commit.
    """
    events = store.read(conversation_id, turn_id=run.turn_id)
    state = turns.turn_state(events)
    if state.ended or state.ambiguous_call:
        return False
    config = assistant_config(conversation_id)
    step = turns.next_step(state, config, turns.effective_budget(settings.WAYPOINT_STEP_BUDGET, config, state))
    if isinstance(step, turns.Ambiguous):
        # A side effect that went out before its writer died: ambiguous and quarantined exactly as
        # without a handoff (PRODUCT.md), so staff learn its outcome is unknown; nothing is retried.
        call = step.call
        stop = TurnAmbiguous(run_id=run.run_id, call_id=call.call_id, tool=call.tool,
                             idempotency_key=call.idempotency_key or f"{run.turn_id}:{call.call_id}")
    else:
        # An action without side effects that its dead writer left started is not run again now:
        # closed with the run, or its row and the tool summary would show it under way for ever.
        interrupted = [c.call_id for c in state.calls.values() if c.started and c.finished is None]
        stop = TurnHandedOff(run_id=run.run_id, reason=handoff.WITHDRAWN, interrupted=interrupted)
    _append(conversation_id, run.turn_id, [stop], held, _Journal(), release=True)
    return True


def _retry_after_error(conversation_id: str, run: WorkflowLog, held: lease.Held, exc: Exception) -> bool:
    """
    Record an unexpected error of a run: a retry after a backoff (True), or at the bound its failure.

    The retry is `turn_retried` with a safe reason (the error's type, never its text, which may
    hold model output or a secret). After `turns.MAX_RETRIES` retries in a row without a step
    committed in between, the run is `failed` and the conversation takes new turns again
    (PRODUCT.md rule 8, "Bounded failure").
    :raises LeaseLost: another writer took the conversation meanwhile
    """
    if isinstance(exc, DatabaseError):
        connection.close_if_unusable_or_obsolete()  # a lost connection is opened again for the record
    events = store.read(conversation_id, turn_id=run.turn_id)
    state = turns.turn_state(events)
    if state.ended or state.ambiguous_call or not events:
        return False
    reason = f"an unexpected error ({type(exc).__name__})"
    retries = turns.stalled_retries(events)
    journal = _Journal()
    if retries >= turns.MAX_RETRIES:
        config = assistant_config(conversation_id)
        step = turns.next_step(state, config, turns.effective_budget(settings.WAYPOINT_STEP_BUDGET, config, state))
        if isinstance(step, turns.Ambiguous):
            # A side effect may have happened: quarantined, so its outcome stays unknown (one identity), not failed.
            call = step.call
            _append(conversation_id, run.turn_id, [TurnAmbiguous(
                run_id=run.run_id, call_id=call.call_id, tool=call.tool,
                idempotency_key=call.idempotency_key or f"{run.turn_id}:{call.call_id}")], held, journal)
            return False
        error = f"The run stopped after {retries} retries, each ending in {reason}. Send a new message to try again."
        _append(conversation_id, run.turn_id, [TurnFailed(run_id=run.run_id, error=error)], held, journal)
        return False
    marker = TurnRetried(run_id=run.run_id, attempt=state.retries + 1, after_seq=events[-1].seq, reason=reason)
    _append(conversation_id, run.turn_id, [marker], held, journal)
    time.sleep(settings.WAYPOINT_RUN_RETRY_SECONDS * 2**retries)  # the lease is renewed meanwhile (_Renewals)
    return True


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


@dataclass
class _Journal:
    """What one run's appends committed: the head they left, and the entries since the turn was last read."""

    head: tuple[int, str] | None = None
    written: list = field(default_factory=list)
    # The agent had control at `head`. A change of control is an entry, so a commit on the head this
    # run left keeps that true; a commit after anyone else's reads control under the row lock.
    agent_in_control: bool = False


def _append(conversation_id: str, turn_id: str, events: list, held: lease.Held, journal: _Journal, actor: str = "agent",
            *, release: bool = False) -> list:
    """
    Commit a step's entries, on a fresh connection if the database dropped the one in use.

    `release`: the step ends or pauses the run, and the lease is given up in the same commit.

    What the step holds (an action's outcome above all) is never thrown away for a broken
    connection: a restart or failover of PostgreSQL is waited out for WAYPOINT_DB_RETRY_SECONDS,
    and a commit whose answer was lost is recognised in the log rather than written twice.
    """
    guess = journal.head
    delay, deadline = 0.05, time.monotonic() + settings.WAYPOINT_DB_RETRY_SECONDS
    # A step the agent takes needs the agent to have control as of its commit. On the fast path
    # nobody appended since this run's last commit (or, for its first, since it read control as the
    # agent's), so nobody took control meanwhile; after anyone did, the row is locked and control
    # read under that lock (a take-over waits for this commit).
    # The outcome of an action that already ran is no new step: it is recorded whoever has control
    # now, or a refund sent just before a take-over would be lost from the record.
    stops = all(isinstance(e, TurnHandedOff | TurnAmbiguous | ActionFinished | QuarantineSettled) for e in events)
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
                    if not stops:
                        _check_control(conversation_id, lock=True)
                    journal.agent_in_control = not stops
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
                recorded, journal.head, journal.agent_in_control = landed, None, False
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


def _turn_events(conversation_id: str, turn_id: str, known: list, journal: _Journal) -> tuple[list, bool]:
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


MEMORY_KINDS = frozenset({"memory_remembered", "memory_cleared"})


BATCH_ONE_KINDS = frozenset({"turn_dispatched", "ingress_directive"})


def _retry_marker(retry: str, run: WorkflowLog, events: list, state: turns.TurnState, step: turns.Step) -> TurnRetried | None:
    """
    The `turn_retried` entry a resumed run records before its next step, if it needs one.

    None for an ambiguous turn (it is quarantined, never retried), for a run with nothing left to
    do, and for a run taken over from a dead holder before it took any step (it is simply run).
    """
    if not retry or isinstance(step, turns.Ambiguous | turns.Done | turns.Wait):
        return None
    if retry == "takeover" and all(e.kind in BATCH_ONE_KINDS for e in events):
        return None
    return TurnRetried(run_id=run.run_id, attempt=state.retries + 1, after_seq=events[-1].seq)


def execute_run(run: WorkflowLog, held: lease.Held, *, retry: str = "") -> bool:
    """
    Take committed steps of one run until it ends, pauses or can do nothing more.

    The step that ends or pauses the run gives the lease up in its own commit; True when it did.

    `retry` ("recovery" or "takeover") says the run resumes after its writer died: it records
    `turn_retried` (attempt, last committed seq) before its next step.

    A model round whose next step is a read-only action (or a tool that only writes the log) is
    committed together with that action's start and finish: one transaction instead of three.
    A crash before that commit loses nothing that was done, only work to do again.
    """
    cid = str(run.conversation_id)
    opening = _opening(cid, run.turn_id)
    config = opening.config
    provider = provider_for(config)
    # A tool that cannot run now (a changed or missing tool of a tool source) is not offered; a call
    # of it that comes anyway fails with the reason.
    tools = [*(t for t in config.get("tools", []) if not t.get("unavailable")), *calls.offered_builtins(config)]
    # Control comes with the opening reads, and the first append goes on the head read with it only
    # if the agent had control then. Before a model round or a tool the run knows control as of the
    # head it last read or committed: the agent's while its commits go on its own heads (a change of
    # control is an entry, which would have moved the head and failed that commit); otherwise, after
    # a commit that followed someone else's, it reads control again. A take-over between that commit
    # and the next model round is found by the round's own commit, which locks the row and reads
    # control under the lock: no step is recorded after a change of control the run did not see.
    events: list = opening.turn
    deferred: list = []  # decided but not yet committed: a model round waiting for its read-only action
    earlier = opening.earlier  # the conversation's other turns, read once per run
    control: list[tuple] | None = opening.control  # who had control as the run began: good until its first commit
    # The head as the run began, if the agent had control: otherwise the first append locks the row and reads it.
    journal = _Journal(head=opening.head, agent_in_control=opening.head is not None)

    def commit(new: list, *, last: bool = False) -> bool:
        nonlocal deferred, control
        batch, deferred, control = [*deferred, *new], [], None
        _append(cid, run.turn_id, batch, held, journal, release=last)
        if any(isinstance(e, ModelRound) for e in batch):
            faults.reach("after_model_round")
        return last

    facts: list[str] | None = opening.facts  # the remembered facts, read again only when the log may have changed them
    while True:
        events, moved = _turn_events(cid, run.turn_id, events, journal)
        if moved:
            facts = None
        state = turns.turn_state(events + [_provisional(e, run.turn_id) for e in deferred])
        budget = turns.effective_budget(settings.WAYPOINT_STEP_BUDGET, config, state)
        step = turns.next_step(state, config, budget)
        if deferred and not _joins_model_round(step):
            commit([])
            continue
        marker = _retry_marker(retry, run, events, state, step)
        retry = ""
        if marker is not None and turns.stalled_retries(events) >= turns.MAX_RETRIES:
            # Resumed again and again without getting a step further: a turn that takes its process down.
            return commit([TurnFailed(run_id=run.run_id, error=f"The run stopped after {turns.MAX_RETRIES} resumptions "
                                      "that got no further. Send a new message to try again.")], last=True)
        if marker is not None:
            commit([marker])
            continue
        if isinstance(step, turns.Done | turns.Wait):
            return False
        if isinstance(step, turns.CallModel | turns.RunAction) and not deferred and not journal.agent_in_control:
            # No model round and no tool once a person has the conversation.
            found, control = control, None
            _check_control(cid, found=found)
        if isinstance(step, turns.CallModel):
            request = ModelRequest(
                history=earlier.turns, message=state.message, continuation=state.continuation,
                rounds=turns.past_rounds(state), tools=tools, closing=step.closing,
                memory=facts if facts is not None else (facts := active_facts(cid)),
                instructions=config.get("instructions") or "",
            )
            try:
                answer = provider.complete(request, on_draft=partial(broadcast.draft_changed, cid, run.run_id, events[-1].seq))
            except ModelFailed as exc:
                return commit([TurnFailed(run_id=run.run_id, error=str(exc))], last=True)
            deferred.append(
                ModelRound(
                    run_id=run.run_id,
                    round=len(state.rounds) + 1,
                    text=answer.text,
                    calls=[c.as_dict() for c in answer.calls] if not step.closing else [],
                    usage=answer.usage,
                    closing=step.closing,
                )
            )
        elif isinstance(step, turns.RequestClient):
            return commit([_request_event(run, state, config, c, earlier) for c in step.calls], last=True)
        elif isinstance(step, turns.RunAction):
            if _run_action(cid, run, step, held, commit, earlier, state, config):
                return True
        elif isinstance(step, turns.Ambiguous):
            call = step.call
            return commit([TurnAmbiguous(run_id=run.run_id, call_id=call.call_id, tool=call.tool,
                                         idempotency_key=call.idempotency_key or f"{run.turn_id}:{call.call_id}")], last=True)
        elif isinstance(step, turns.EvaluateCompletion):
            commit([CompletionRequested(run_id=run.run_id, call_id=step.call.call_id, outcome=step.outcome, reason=step.reason)])
        elif isinstance(step, turns.Finish):
            faults.reach("before_batch_two")
            batch_two = [_turn_complete(run, state, config, step)]
            if step.complete_conversation:
                batch_two.append(ConversationCompleted(run_id=run.run_id))
            commit(batch_two, last=True)
            faults.reach("after_batch_two")
            return True


def _turn_complete(run: WorkflowLog, state: turns.TurnState, config: dict, step: turns.Finish) -> TurnComplete:
    """
    The reply; with knowledge on, its `[n]` markers resolved against the passages the turn's
    searches returned, and a person offered with it when they found nothing (`no_answer`).
    """
    text, citations, dropped, offer = step.text, [], [], False
    if knowledge.offered(config):
        results = [c.finished.output for c in state.calls.values()
                   if c.tool == knowledge.TOOL and c.finished is not None and c.finished.ok]
        text, citations, dropped = knowledge.cite(step.text, results)
        offer = knowledge.offers_a_person(config, results)
    return TurnComplete(run_id=run.run_id, message_id=new_id("msg"), text=text, fallback=step.fallback,
                        citations=citations, dropped_citations=dropped, offer_handoff=offer)


def _provisional(event, turn_id: str) -> Recorded:
    """A decided entry as the planner sees it before it is committed."""
    return Recorded(seq=0, kind=event.kind, turn_id=turn_id, actor="agent", created_at="", payload=event.payload())


def _joins_model_round(step: turns.Step) -> bool:
    """Whether a step may commit together with the model round before it (see execute_run)."""
    if not isinstance(step, turns.RunAction):
        return False
    if step.problem:
        return True  # the failure of a call that cannot be made: only log entries
    if step.call.tool in calls.BUILTINS:
        return calls.BUILTINS[step.call.tool].read_only
    if _no_linked_action(step):
        return True  # a tool the assistant does not have: its failure is only a log entry
    return ACTIONS.get(step.tool.get("action", "")) is not None and calls.tool_class(step.tool) == "read"


def _no_linked_action(step: turns.RunAction) -> bool:
    """A built-in tool or one the assistant does not have: nothing runs but the log."""
    return step.tool is None or step.tool.get("kind") == "builtin" or step.call.tool in calls.BUILTINS


class Summaries:
    """
    Each conversation's history summary (`history.Summary`) as of the last head this process read, the newest few hundred.

    A run reads only the entries after that head and folds them forward; the whole log is read again
    only for a conversation this process has not seen (after a restart, say) or whose log was
    repaired. Taken out while a run folds it and put back after, so two threads never fold one.
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._guard = threading.Lock()
        self._kept: OrderedDict[str, history.Summary] = OrderedDict()

    def take(self, conversation_id: str) -> history.Summary | None:
        with self._guard:
            return self._kept.pop(conversation_id, None)

    def keep(self, conversation_id: str, summary: history.Summary) -> None:
        with self._guard:
            self._kept[conversation_id] = summary
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


_summaries = Summaries()


@dataclass(frozen=True)
class _Opening:
    """What a run reads before its first step, asked in one round trip (`sql.batch`)."""

    config: dict
    turn: list  # the run's turn so far
    head: tuple[int, str] | None  # the head its first append may chain on (see execute_run)
    control: list[tuple]  # who has control and the head then: its first step's check, if nothing commits before it
    earlier: history.History
    facts: list[str]


def _opening(conversation_id: str, turn_id: str) -> _Opening:
    """
    The assistant's configuration, the turn's entries, who has control, the log since this process's
    summary of the other turns and the remembered facts: five reads in one round trip.
    """
    summary = _summaries.take(conversation_id) or history.Summary()
    # Read from the last entry folded: still there as it was, the log only grew since (see _earlier_turns).
    config, turn, control, since, facts = sql.batch(
        (ASSISTANT_CONFIG, (conversation_id,)),
        store.reading(conversation_id, turn_id=turn_id),
        (conversation_statements.CONTROL_AND_HEAD, (conversation_id,)),
        store.reading(conversation_id, after_seq=max(0, summary.head - 1)),
        reading_active_facts(conversation_id),
    )
    # Read with control as the agent's: while no entry comes after this head, no change of control
    # did either, so the first append may go on it as later ones go on their own (the head check
    # refuses it otherwise, and the row is locked and control read again).
    head = (control[0][1], control[0][2]) if control and control[0][0] == "agent" else None
    return _Opening(
        config=resolved(config[0][0]), turn=store.entries(conversation_id, turn), control=control, head=head,
        earlier=_earlier_turns(conversation_id, turn_id, summary, store.entries(conversation_id, since)),
        facts=active_facts(conversation_id, facts),
    )


def _earlier_turns(conversation_id: str, turn_id: str, summary: history.Summary, entries: list) -> history.History:
    """
    The conversation's other turns as the log recorded them: what every model round is told.

    `summary` is this process's fold of the log as far as it read (taken out of `_summaries`), and
    `entries` the log from its last entry on.
    """
    # From the last entry folded: still there as it was, the log only grew since; otherwise
    # `conversation repair` removed and renumbered entries, and the summary is folded anew.
    if summary.last is not None:
        if entries and entries[0] == summary.last:
            entries = entries[1:]
        else:
            summary = history.Summary()
            entries = store.read(conversation_id)
    summary.feed(entries)
    _summaries.keep(conversation_id, summary)
    return summary.history(exclude_turn=turn_id)


def _reattempt(call: turns.CallState, tool: dict, earlier: history.History) -> dict:
    """
    The first attempt a side-effecting call repeats (its `reattempt_of`), or {} for a new action.

    An approval asked for as a re-attempt stays one: the person approved sending it under the
    first attempt's key, whatever became known since.
    """
    if not calls.side_effecting(tool):
        return {}
    if call.reattempt_of:
        return call.reattempt_of
    attempt = earlier.reattempt_of(call.tool, call.run_arguments)
    return attempt.link() if attempt else {}


def _request_event(run: WorkflowLog, state: turns.TurnState, config: dict, call: turns.CallState, earlier: history.History):
    if call.tool == "ask_question":
        question = str(call.arguments.get("question") or call.arguments.get("label") or "Could you tell me more?")
        return QuestionRequest(run_id=run.run_id, call_id=call.call_id, question=question, arguments={})
    tool = next(t for t in config["tools"] if t["name"] == call.tool)
    if tool["kind"] == "server":
        settings_ = approval_settings(tool)
        required = state.required_approver or config.get("required_approver", "")
        # A required approver of "staff" raises every approval of the turn to the team; never lowers one.
        approver = "staff" if required == "staff" else settings_["approver"]
        seconds = settings_["expires_in_seconds"]
        reattempt = _reattempt(call, tool, earlier)
        return ApprovalRequest(
            run_id=run.run_id,
            call_id=call.call_id,
            tool=call.tool,
            arguments=call.arguments,
            required_approver=named_approver(required, approver),
            reattempt_of=reattempt,
            approver="" if approver == "customer" else approver,
            expires_at=store.iso(timezone.now() + timedelta(seconds=seconds)) if seconds else "",
            # A re-attempt goes under its first attempt's key, which the receiving system deduplicates
            # on: changed arguments would silently not run. It is approved as it is, or denied.
            editable=[] if reattempt else settings_["editable"],
        )
    expires_at = ""
    if state.mode == "simple":
        expires_at = store.iso(timezone.now() + timedelta(seconds=settings.WAYPOINT_SIMPLE_EXPIRY_SECONDS))
    return ClientActionRequested(run_id=run.run_id, call_id=call.call_id, tool=call.tool, arguments=call.arguments, expires_at=expires_at)


def _stored_name(tool: str) -> str:
    """A tool name as the action log keeps it: a model's name for an unknown tool may be any length."""
    return tool if len(tool) <= 64 else tool[:64] + "…"


def _run_action(cid: str, run: WorkflowLog, step: turns.RunAction, held: lease.Held, commit, earlier: history.History,
                state: turns.TurnState, config: dict) -> bool:
    """Run one action and commit its outcome; True when that commit ended the run (and gave the lease up)."""
    call = step.call
    builtin = calls.BUILTINS.get(call.tool)
    if builtin is not None and builtin.run is not None and not step.problem:
        said = next((r.text for r in state.rounds if r.number == call.round), "")
        ran = builtin.run(calls.Call(cid, run, call, step.attempt, said, config=config, state=state))
        return commit(ran.events, last=ran.ends_run)
    if step.problem or _no_linked_action(step):
        # Recorded as an action that started and failed at once: the action log row the finish
        # updates must exist, or the step cannot commit and the run never ends.
        tool = _stored_name(call.tool)
        started = ActionStarted(run_id=run.run_id, call_id=call.call_id, tool=tool, action="", arguments=call.arguments,
                                side_effecting=False, idempotency_key=f"{run.turn_id}:{call.call_id}", attempt=step.attempt)
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=tool, ok=False,
                                  error=step.problem or f"unknown tool {tool!r}")
        commit([started, finished])
        return False
    action = ACTIONS[step.tool["action"]]
    side_effecting, read_only = calls.side_effecting(step.tool), calls.tool_class(step.tool) == "read"
    # A retry in this turn keeps the key it started with; a re-attempt of an earlier turn's
    # unknown outcome takes that attempt's key, so the receiving system can deduplicate it.
    reattempt_of = _reattempt(call, step.tool, earlier) if step.attempt == 1 else {}
    first_key = call.idempotency_key or (earlier.key_of(reattempt_of) if reattempt_of else f"{run.turn_id}:{call.call_id}")
    started = ActionStarted(
        run_id=run.run_id,
        call_id=call.call_id,
        tool=call.tool,
        action=action.name,
        arguments=call.run_arguments,  # as approved: an approver's changes included
        side_effecting=side_effecting,
        idempotency_key=first_key,
        attempt=step.attempt,
        reattempt_of=reattempt_of,
    )
    if not read_only:
        commit([started])  # before the action runs: a crash then leaves a start without a finish
    try:
        output = action.run(ActionCall(cid, run.turn_id, call.call_id, step.tool, call.run_arguments,
                                       workspace=Workspace(cid, lease=held.token), first_key=first_key))
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=True, output=output,
                                  model_output=_cut_for_model(output, step.tool))
    except OutcomeUnknown:
        if side_effecting:
            # Sent, and no answer: as if its writer had died mid-call, the turn is quarantined (rule 8).
            return commit([TurnAmbiguous(run_id=run.run_id, call_id=call.call_id, tool=call.tool, idempotency_key=first_key)],
                          last=True)
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False,
                                  error="no answer came in time; it was sent again under the same key without one either")
    except ActionError as exc:
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a broken action is the tool's failure, not the turn's crash
        log.exception("action %s raised", action.name)
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False, error=type(exc).__name__)
    if side_effecting or action.remote:
        faults.reach("during_action")
    return commit([started, finished] if read_only else [finished, *_settled(reattempt_of, call, finished)])


def _cut_for_model(output, tool: dict) -> object:
    """What the model is told of a long result: its first `max_result_chars` and a note; None when it fits."""
    limit = tool.get("max_result_chars")
    if not isinstance(limit, int) or limit <= 0:
        return None
    text = output if isinstance(output, str) else json.dumps(output, sort_keys=True, ensure_ascii=False)
    if len(text) <= limit:
        return None
    return {"result": text[:limit], "note": f"the result was cut at {limit} of its {len(text)} characters"}


def _settled(reattempt_of: dict, call: turns.CallState, finished: ActionFinished) -> list[QuarantineSettled]:
    """
    The end of the quarantine a successful re-attempt settles: the outcome is known, nothing is left to decide.

    Nothing for a re-attempt that failed (the first attempt may still have gone through) or whose
    quarantine staff resolved meanwhile.
    """
    if not reattempt_of or not finished.ok:
        return []
    quarantined = (WorkflowLog.objects.filter(turn_id=reattempt_of["turn_id"], quarantined=True)
                   .values_list("run_id", flat=True).first())
    if quarantined is None:
        return []
    return [QuarantineSettled(run_id=quarantined, turn_id=reattempt_of["turn_id"], call_id=reattempt_of["call_id"],
                              by_call_id=call.call_id)]


# --- recovery ----------------------------------------------------------------------------------


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
            with _locks_guard:
                if cid in _recovering:
                    continue  # still queued from an earlier pass: one recovery per conversation at a time
                _recovering.add(cid)
            _workers().submit(_drive_in_worker, cid, True)
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
