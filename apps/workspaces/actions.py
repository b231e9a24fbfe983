"""
Writes of a conversation's workspace state: memory, artifact acknowledgments, idle close,
reopening and the retention reconciler.

Each write that changes what the log says appends a signed entry in one transaction with the
conversation row locked; runtime clean-up (files, lease and runtime rows) never touches messages,
logs or events.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F

from apps.conversations import broadcast
from apps.conversations.actions import locked
from apps.conversations.errors import BadInput, NotFound
from apps.conversations.models import Conversation, Lease
from apps.ledger import store
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ArtifactAcknowledged,
    ConversationClosed,
    ConversationReopened,
    EventKind,
    MemoryCleared,
    MemoryRemembered,
)
from apps.people.actions import check_persona
from apps.runs.machine import OPEN
from apps.runs.models import WorkflowLog
from apps.runs.statements import has_open_run
from apps.workspaces import statements
from apps.workspaces.models import Artifact, Closure, Memory, Runtime
from apps.workspaces.policy import MalformedDuration, idle_due, idle_timeout_seconds, parse_duration
from apps.workspaces.queries import open_closure
from apps.workspaces.storage import Workspace, artifact_dict

log = logging.getLogger(__name__)

MAX_FACT_CHARS = 1000
MAX_FACTS = 200


def _append(conversation: Conversation, events: list[EventKind], *, actor: str, now: datetime, turn_id: str = "") -> None:
    recorded = store.append(conversation, events, turn_id=turn_id, actor=actor, now=now)
    broadcast.on_commit(conversation.id, recorded[-1].seq)


# --- memory -------------------------------------------------------------------------------------


def remember_call(*, conversation_id: str, run_id: str, turn_id: str, call_id: str, arguments: Any, persona: str) -> list[EventKind]:
    """
    Return the entries that execute one call of the built-in `remember` tool ({"fact": str}).

    The runner appends them as one batch: the action log opens and closes with the fact recorded
    in between, so a crash cannot leave the call half done. An unusable fact becomes an error
    result the model sees.
    """
    fact = arguments.get("fact") if isinstance(arguments, dict) else None
    started = ActionStarted(run_id=run_id, call_id=call_id, tool="remember", action="remember", arguments=arguments
                            if isinstance(arguments, dict) else {}, side_effecting=False, idempotency_key=f"{turn_id}:{call_id}")
    problem = ""
    if not isinstance(fact, str) or not fact.strip():
        problem = 'remember needs {"fact": "<text>"}'
    elif len(fact) > MAX_FACT_CHARS:
        problem = f"a fact may have at most {MAX_FACT_CHARS} characters"
    elif Memory.objects.filter(conversation_id=conversation_id, status="active").count() >= MAX_FACTS:
        problem = f"memory is full ({MAX_FACTS} facts); ask the person to clear some"
    if problem:
        return [started, ActionFinished(run_id=run_id, call_id=call_id, tool="remember", ok=False, error=problem)]
    fact_id = f"fact_{secrets.token_hex(10)}"
    return [
        started,
        MemoryRemembered(run_id=run_id, call_id=call_id, fact_id=fact_id, text=fact.strip(), persona=persona),
        ActionFinished(run_id=run_id, call_id=call_id, tool="remember", ok=True, output={"remembered": fact.strip(), "fact_id": fact_id}),
    ]


def clear_memory(*, conversation_id: str, persona: str, now: datetime, fact_ids: list[str] | None = None) -> dict[str, Any]:
    """
    Clear remembered facts (all of them, or those named); clearing is a log entry.

    A cleared fact never reaches the model again. Clearing nothing records nothing.
    :raises BadInput: a malformed persona or fact id list
    :raises NotFound: no such conversation, or a named fact is not remembered there
    """
    persona = check_persona(persona)
    if fact_ids is not None and (not isinstance(fact_ids, list) or not all(isinstance(f, str) for f in fact_ids)):
        raise BadInput("fact_ids must be a list of fact ids")
    with transaction.atomic():
        conversation = locked(conversation_id)
        active = Memory.objects.filter(conversation_id=conversation.id, status="active")
        if fact_ids is not None:
            found = set(active.filter(fact_id__in=fact_ids).values_list("fact_id", flat=True))
            unknown = sorted(set(fact_ids) - found)
            if unknown:
                raise NotFound(f"no remembered fact {unknown[0]} in this conversation")
            active = active.filter(fact_id__in=fact_ids)
        cleared = list(active.order_by("remembered_at", "fact_id").values_list("fact_id", flat=True))
        if cleared:
            _append(conversation, [MemoryCleared(fact_ids=cleared, cleared_by=persona)], actor=persona, now=now)
    return {"cleared": cleared}


# --- artifacts ----------------------------------------------------------------------------------


def acknowledge_artifact(*, conversation_id: str, artifact_id: str, persona: str, now: datetime) -> dict[str, Any]:
    """
    Record that the application received an artifact.

    Idempotent: acknowledging again returns the artifact as it is and records nothing.
    :raises NotFound: no such conversation, or no such artifact in it
    :raises BadInput: a malformed persona
    """
    from apps.conversations import faults

    persona = check_persona(persona)
    with transaction.atomic():
        conversation = locked(conversation_id)
        artifact = Artifact.objects.filter(conversation_id=conversation.id, artifact_id=artifact_id).first()
        if artifact is None:
            raise NotFound("no such artifact in this conversation")
        if artifact.status != "acknowledged":
            _append(conversation, [ArtifactAcknowledged(artifact_id=artifact_id, acknowledged_by=persona)],
                    actor=persona, now=now, turn_id=artifact.turn_id)
            transaction.on_commit(partial(faults.reach, "after_artifact_ack"))
            artifact.refresh_from_db()
    return artifact_dict(artifact)


# --- idle close, reopening, retention -----------------------------------------------------------


def reopen_events(*, conversation_id: str) -> list[EventKind]:
    """
    Return the entry that reopens a closed conversation, for the batch one of its next turn.

    Call with the conversation row locked. The turn's `turn_dispatched` resets the idle timer.
    """
    found = statements.OPEN_CLOSURE.rows(conversation_id)
    return [ConversationReopened(closed_seq=closed_seq) for closed_seq, _ in found]


def open_runtime(*, conversation_id: str, now: datetime) -> None:
    """Make sure a conversation taking a turn has an open runtime record (after batch one's append)."""
    statements.OPEN_RUNTIME.execute(conversation_id, now)


def close_if_idle(*, conversation_id: str, now: datetime) -> bool:
    """
    Close a conversation that has been idle for its timeout: a `conversation_closed` entry, its
    lease row deleted and its workspace runtime released (files and artifacts stay).

    Not idle: completed, already closed, a run running or waiting, a customer waiting for a person,
    a live lease, a zero timeout or no last turn. Returns whether it closed.
    """
    with transaction.atomic():
        conversation = locked(conversation_id)
        timeout = idle_timeout_seconds(conversation.assistant.config, settings.WAYPOINT_IDLE_TIMEOUT_SECONDS)
        if conversation.status == "completed" or open_closure(str(conversation.id)) is not None:
            return False
        if conversation.control_mode == "queued":
            return False  # the queue's own timeout decides when nobody came
        if not idle_due(last_turn_at=conversation.last_turn_at, timeout_seconds=timeout, now=now):
            return False
        if has_open_run(str(conversation.id)):
            return False
        if Lease.objects.filter(conversation_id=conversation.id, expires_at__gt=now).exclude(holder="").exists():
            return False
        event = ConversationClosed(reason="idle", last_turn_at=store.iso(conversation.last_turn_at), idle_timeout_seconds=timeout)
        _append(conversation, [event], actor="system", now=now)
        Lease.objects.filter(conversation_id=conversation.id).delete()
        Runtime.objects.filter(conversation_id=conversation.id).update(closed_at=now)
        transaction.on_commit(Workspace(str(conversation.id)).release_runtime)
    return True


def release_completed_runtime(*, conversation_id: str, now: datetime) -> bool:
    """
    Release the runtime of a completed conversation idle for its timeout: lease row deleted, runtime
    record closed, scratch space removed. Its log says nothing new: completion already ended it.
    """
    with transaction.atomic():
        conversation = locked(conversation_id)
        timeout = idle_timeout_seconds(conversation.assistant.config, settings.WAYPOINT_IDLE_TIMEOUT_SECONDS)
        if conversation.status != "completed" or not idle_due(last_turn_at=conversation.last_turn_at, timeout_seconds=timeout, now=now):
            return False
        if Lease.objects.filter(conversation_id=conversation.id, expires_at__gt=now).exclude(holder="").exists():
            return False
        if not Runtime.objects.filter(conversation_id=conversation.id, closed_at__isnull=True).update(closed_at=now):
            return False
        Lease.objects.filter(conversation_id=conversation.id).delete()
        transaction.on_commit(Workspace(str(conversation.id)).release_runtime)
    return True


def _timeouts() -> dict[int, list]:
    """Assistant ids by their idle timeout (0, disabled, left out); reads one JSON key per assistant."""
    by_timeout: dict[int, list] = {}
    # The assistants, through the conversation's relation: their configuration is the agent's, read here for one key.
    assistants = Conversation.assistant.field.related_model
    for assistant_id, own in assistants.objects.annotate(own=F("config__idle_timeout_seconds")).values_list("id", "own"):
        timeout = idle_timeout_seconds({"idle_timeout_seconds": own}, settings.WAYPOINT_IDLE_TIMEOUT_SECONDS)
        if timeout:
            by_timeout.setdefault(timeout, []).append(assistant_id)
    return by_timeout


def close_idle_conversations(*, now: datetime, limit: int = 100) -> list[str]:
    """
    Close every conversation idle for its assistant's timeout (or the deployment's); return their ids.

    Completed conversations are not closed (they stay completed) but their runtime is released the
    same way. Candidates are found per timeout so that the database does the filtering.
    """
    closed: list[str] = []
    for timeout, assistant_ids in sorted(_timeouts().items()):
        idle = Conversation.objects.filter(assistant_id__in=assistant_ids, last_turn_at__lte=now - timedelta(seconds=timeout))
        due = (
            idle.filter(status="active")
            .exclude(id__in=Closure.objects.filter(reopened_seq__isnull=True).values("conversation_id"))
            .exclude(id__in=WorkflowLog.objects.filter(status__in=OPEN, quarantined=False).values("conversation_id"))
            .order_by("last_turn_at")
            .values_list("id", flat=True)[:limit]
        )
        for conversation_id in due:
            if close_if_idle(conversation_id=str(conversation_id), now=now):
                closed.append(str(conversation_id))
        finished = idle.filter(status="completed", runtime__isnull=False, runtime__closed_at__isnull=True)
        for conversation_id in finished.values_list("id", flat=True)[:limit]:
            release_completed_runtime(conversation_id=str(conversation_id), now=now)
    return closed


_reported: set[str] = set()


def retention_window():
    """
    The deployment's retention window, or None (deletion disabled) for a malformed setting.

    The reason is logged once per process and setting.
    """
    try:
        return parse_duration(settings.WAYPOINT_RETENTION)
    except MalformedDuration as exc:
        if settings.WAYPOINT_RETENTION not in _reported:
            _reported.add(settings.WAYPOINT_RETENTION)
            log.error("WAYPOINT_RETENTION is malformed, so closed runtime records are never deleted: %s", exc)
        return None


def delete_expired_runtimes(*, now: datetime, limit: int = 200) -> int | None:
    """
    Delete the runtime records of conversations closed for longer than the retention window.

    Only conversations still closed (or completed) are touched; messages, logs, events, files and artifacts are
    not. Returns how many were deleted, or None when a malformed setting disables deletion.
    """
    window = retention_window()
    if window is None:
        return None
    deleted = 0
    due = Runtime.objects.filter(closed_at__isnull=False, closed_at__lte=now - window).values_list("conversation_id", flat=True)[:limit]
    for conversation_id in due:
        with transaction.atomic():
            conversation = locked(str(conversation_id))
            if conversation.status != "completed" and open_closure(str(conversation_id)) is None:
                continue  # reopened meanwhile: its runtime is in use again
            deleted += Runtime.objects.filter(conversation_id=conversation_id, closed_at__lte=now - window).delete()[0]
            Lease.objects.filter(conversation_id=conversation_id).delete()
            transaction.on_commit(Workspace(str(conversation_id)).release_runtime)
    return deleted


def reconcile(*, now: datetime) -> dict[str, Any]:
    """Run one pass of idle close and retention (called by the runner's recovery loop)."""
    return {"closed": close_idle_conversations(now=now), "deleted": delete_expired_runtimes(now=now)}
