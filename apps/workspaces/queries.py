"""
Reads of a conversation's workspace state: memory, artifacts and their recovery state, lifecycle
phase and conditions.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

from apps.actions.models import ActionLog
from apps.conversations.models import Conversation
from apps.ledger import sql
from apps.ledger.sql import Statement
from apps.ledger.store import iso
from apps.runs.machine import CONTINUABLE
from apps.runs.models import WorkflowLog
from apps.workspaces import statements
from apps.workspaces.models import Artifact, Closure
from apps.workspaces.storage import Workspace, WorkspaceError, artifact_dict, segment

ARTIFACT_ACTION = "write_artifact"
# What `artifact_recovery_state` can say about one tool call (docs/people.md "Artifacts").
OUTCOMES = ("pending", "failed", "missing", "duplicate", "unrecorded", "unacknowledged", "acknowledged")


def _when(value) -> str | None:
    return iso(value) if value else None


# --- memory --------------------------------------------------------------------------------------


def list_memory(conversation: Conversation) -> list[dict[str, Any]]:
    """Return the facts the agent of this conversation currently remembers, oldest first."""
    return _memory(statements.MEMORY.rows(conversation.id))


def _memory(rows: list[tuple]) -> list[dict[str, Any]]:
    return [
        {"fact_id": fact_id, "text": text, "persona": persona, "turn_id": turn_id, "remembered_at": _when(remembered_at)}
        for fact_id, text, persona, turn_id, remembered_at in rows
    ]


def active_facts(conversation_id: str, rows: list[tuple] | None = None) -> list[str]:
    """The remembered facts a model is given (never a cleared one); `rows`: those of `reading_active_facts`, read already."""
    return [text for (text,) in (statements.ACTIVE_FACTS.rows(conversation_id) if rows is None else rows)]


def reading_active_facts(conversation_id: str) -> tuple[Statement, tuple]:
    """`active_facts` as a statement and its values, for a caller that sends it with other reads (`sql.batch`)."""
    return statements.ACTIVE_FACTS, (conversation_id,)


# --- artifacts ----------------------------------------------------------------------------------


def _artifacts(rows: list[tuple]) -> list[dict[str, Any]]:
    """A conversation's artifacts from the rows of ARTIFACTS (oldest first)."""
    return [artifact_dict(Artifact(**dict(zip(statements.ARTIFACT_FIELDS, row, strict=True)))) for row in rows]


def _content_ok(workspace: Workspace, artifact: Artifact) -> bool:
    try:
        content = workspace.artifact_content(artifact.path)
    except WorkspaceError:
        return False
    return hashlib.sha256(content).hexdigest() == artifact.sha256


def _outcome(action: ActionLog | None, records: list[Artifact], stray: list[str], content_ok: bool) -> tuple[str, str]:
    if len(records) > 1:
        return "duplicate", f"{len(records)} artifact records for one call"
    if records and stray:
        return "duplicate", "files for this call that no artifact record points to"
    if records:
        if not content_ok:
            return "missing", "recorded, but its content is gone from the workspace or no longer matches its hash"
        if records[0].status == "acknowledged":
            return "acknowledged", ""
        return "unacknowledged", "exists; the application has not acknowledged receipt"
    if action is None:
        return "unrecorded", "files in the workspace that no tool call or artifact record accounts for"
    if action.status == "succeeded":
        return "missing", "the call ran but no artifact exists"
    if action.status in ("failed", "abandoned"):
        return "failed", "the call failed without an artifact"
    return "pending", "the call has not finished; recovery runs it again (it is idempotent)"


def artifact_recovery_state(conversation: Conversation) -> list[dict[str, Any]]:
    """
    Say, per tool call that makes or made an artifact, what exists after a crash.

    Tells apart `missing` (the call ran, no artifact), `duplicate` (two artifacts for one call,
    or files for a recorded call that no record points to: only damaged data can show this) and
    `unacknowledged` (exists, receipt not acknowledged), besides `acknowledged`, `pending` (not
    finished: recovery re-runs it), `failed` and `unrecorded` (files no call accounts for).
    """
    cid = str(conversation.id)
    actions = {(a.turn_id, a.call_id): a for a in ActionLog.objects.filter(conversation_id=cid, action=ARTIFACT_ACTION)}
    records: dict[tuple[str, str], list[Artifact]] = defaultdict(list)
    for artifact in Artifact.objects.filter(conversation_id=cid).order_by("created_at", "artifact_id"):
        records[(artifact.turn_id, artifact.call_id)].append(artifact)
    workspace = Workspace(cid)
    on_disk = workspace.artifact_files()
    known = {*actions, *records}
    by_directory = {(segment(t), segment(c)): (t, c) for t, c in known}
    for directory in on_disk:
        known.add(by_directory.get(directory, directory))
    out = []
    for key in known:
        action, recs = actions.get(key), records.get(key, [])
        files = on_disk.get((segment(key[0]), segment(key[1])), [])
        stray = [f for f in files if f not in {r.path for r in recs}]
        content_ok = len(recs) == 1 and _content_ok(workspace, recs[0])
        outcome, detail = _outcome(action, recs, stray, content_ok)
        out.append({
            "turn_id": key[0],
            "call_id": key[1],
            "tool": action.tool if action else (recs[0].name if recs else ""),
            "call_status": action.status if action else "",
            "outcome": outcome,
            "detail": detail,
            "artifacts": [artifact_dict(r) for r in recs],
            "stray_files": stray,
            "_order": iso(action.started_at) if action else (iso(recs[0].created_at) if recs else ""),
        })
    out.sort(key=lambda item: (item.pop("_order"), item["turn_id"], item["call_id"]))
    return out


# --- lifecycle ----------------------------------------------------------------------------------


def open_closure(conversation_id: str) -> Closure | None:
    """The close a conversation is in now (its `closed_seq` and `closed_at`), or None while it is open."""
    return _closure(conversation_id, statements.OPEN_CLOSURE.rows(conversation_id))


def _closure(conversation_id: str, found: list[tuple]) -> Closure | None:
    if not found:
        return None
    [(closed_seq, closed_at)] = found
    return Closure(conversation_id=conversation_id, closed_seq=closed_seq, closed_at=closed_at)


def display_phase(phase: str, run: WorkflowLog | None) -> str:
    """The one-word display phase: Completed, Closed, Interrupted, Waiting or Active."""
    if phase == "completed":
        return "Completed"
    if phase == "closed":
        return "Closed"
    if run is not None and run.status in CONTINUABLE:
        return "Interrupted"
    if run is not None and run.status == "waiting":
        return "Waiting"
    return "Active"


def _condition(kind: str, status: bool, reason: str, message: str, at) -> dict[str, Any]:
    return {"type": kind, "status": "True" if status else "False", "reason": reason, "message": message,
            "last_transition_time": _when(at)}


def conditions(conversation: Conversation, *, phase: str, run: WorkflowLog | None,
               recovery: list[dict[str, Any]] | None = None, closure: Closure | None = None) -> list[dict[str, Any]]:
    """
    Return the standard `Ready`, `Progressing` and `Degraded` conditions of a conversation.

    Ready: it accepts a new turn. Progressing: a run is executing. Degraded: its latest run ended
    badly or an artifact is missing or duplicated. `closure`: the open close, when `phase` is closed.
    """
    if phase == "closed" and closure is None:
        closure = open_closure(str(conversation.id))
    since = run.updated_at if run is not None else conversation.created_at
    status = run.status if run is not None else ""
    if phase == "completed":
        ready = _condition("Ready", False, "Completed", "The conversation is complete and read-only.", conversation.completed_at)
    elif run is not None and run.quarantined:
        ready = _condition("Ready", False, "Quarantined", "A turn is quarantined: staff must resolve it.", since)
    elif status == "running":
        ready = _condition("Ready", False, "TurnRunning", "A turn is running.", since)
    elif status == "waiting":
        ready = _condition("Ready", False, "WaitingForPerson", "A turn waits for an answer.", since)
    elif closure is not None:
        ready = _condition("Ready", True, "Closed", "Closed after being idle; the next turn reopens it.", closure.closed_at)
    else:
        ready = _condition("Ready", True, "Idle", "Ready for the next turn.", since)
    if status == "running":
        progressing = _condition("Progressing", True, "Running", "A turn is running.", since)
    else:
        reason = {"waiting": "Waiting", "completed": "TurnComplete"}.get(status, status.capitalize() or "NoTurn")
        progressing = _condition("Progressing", False, reason, "No turn is running.", since)
    bad = [item for item in (recovery or []) if item["outcome"] in ("missing", "duplicate", "unrecorded")]
    if run is not None and (run.quarantined or status in CONTINUABLE):
        reason = "Quarantined" if run.quarantined else status.capitalize()
        degraded = _condition("Degraded", True, reason, run.error or f"The latest turn is {status}.", since)
    elif bad:
        outcome = bad[0]["outcome"]
        degraded = _condition("Degraded", True, f"Artifact{outcome.capitalize()}",
                              f"{len(bad)} tool call(s) with a {outcome} artifact: {bad[0]['detail']}", since)
    else:
        degraded = _condition("Degraded", False, "AsExpected", "", since)
    return [ready, progressing, degraded]


def state_reads(conversation_id) -> list[tuple[Statement, tuple[Any, ...]]]:
    """The reads `workspace_state` makes, for a caller to send with its own in one round trip (`sql.batch`)."""
    return [(statements.OPEN_CLOSURE, (conversation_id,)), (statements.ARTIFACTS, (conversation_id,)),
            (statements.ANY_ACTION, (conversation_id, ARTIFACT_ACTION)), (statements.MEMORY, (conversation_id,))]


def workspace_state(conversation: Conversation, *, run: WorkflowLog | None, read: list[list[tuple]] | None = None) -> dict[str, Any]:
    """
    The fields this app adds to `conversation_state`: phase, conditions, participants, memory,
    artifacts and their recovery state. `read`: the rows of `state_reads`, when the caller read
    them already; otherwise they are read here, in one round trip. The workspace directory is only
    looked at when the conversation has artifacts.
    """
    from apps.people.queries import participants

    closures, artifact_rows, artifact_calls, memory = read if read is not None else sql.batch(*state_reads(conversation.id))
    closure = None if conversation.status == "completed" else _closure(str(conversation.id), closures)
    phase = "completed" if conversation.status == "completed" else "closed" if closure is not None else "open"
    made = _artifacts(artifact_rows)
    has_artifacts = bool(made) or bool(artifact_calls)
    recovery = artifact_recovery_state(conversation) if has_artifacts else []
    return {
        "phase": phase,
        "display_phase": display_phase(phase, run),
        "conditions": conditions(conversation, phase=phase, run=run, recovery=recovery, closure=closure),
        "last_turn_at": _when(conversation.last_turn_at),
        "visibility": conversation.visibility,
        "participants": participants(conversation),
        "memory": _memory(memory),
        "artifacts": made,
        # per tool call: pending | unacknowledged | acknowledged | missing | duplicate | failed | unrecorded
        "artifact_recovery": [
            {k: item[k] for k in ("turn_id", "call_id", "tool", "call_status", "outcome", "detail", "stray_files")}
            | {"artifact_ids": [a["artifact_id"] for a in item["artifacts"]]}
            for item in recovery
        ],
    }
