"""
The four stores as a projection of the log.

Pure: no Django. `changes(conversation_id, recorded)` says which store rows one event creates or
updates; `fold(events)` applies them in memory. The store applies the very same changes to the
database in the append's transaction, so the rows and the fold cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.ledger.types import Recorded

STORES = (
    "conversations", "workflow_logs", "tool_usage_logs", "chat_messages", "action_logs",
    # people and workspaces (docs/people.md)
    "participants", "memories", "artifacts", "closures",
)

# Each store's key fields, in order.
KEYS: dict[str, tuple[str, ...]] = {
    "conversations": ("id",),
    "workflow_logs": ("run_id",),
    "tool_usage_logs": ("run_id", "call_id"),
    "chat_messages": ("id",),
    "action_logs": ("turn_id", "call_id"),
    "participants": ("conversation_id", "persona"),
    "memories": ("fact_id",),
    "artifacts": ("artifact_id",),
    "closures": ("conversation_id", "closed_seq"),
}


@dataclass(frozen=True)
class Change:
    store: str
    key: tuple
    create: dict[str, Any] | None = None
    set: dict[str, Any] = field(default_factory=dict)
    incr: dict[str, int] = field(default_factory=dict)
    append: dict[str, Any] = field(default_factory=dict)
    discard: dict[str, Any] = field(default_factory=dict)


def apply_change(row: dict[str, Any] | None, change: Change) -> dict[str, Any]:
    """Return the row after one change; a create replaces nothing that exists."""
    if change.create is not None:
        if row is not None:
            raise ValueError(f"{change.store} {change.key} exists already")
        row = dict(change.create)
    elif row is None:
        raise ValueError(f"{change.store} {change.key} does not exist")
    else:
        row = dict(row)
    row.update(change.set)
    for name, n in change.incr.items():
        if "." in name:
            outer, inner = name.split(".", 1)
            row[outer] = {**row[outer], inner: row[outer].get(inner, 0) + n}
        else:
            row[name] = row[name] + n
    for name, item in change.append.items():
        row[name] = [*row[name], item]
    for name, item in change.discard.items():
        row[name] = [x for x in row[name] if x != item]
    return row


def _progress(rec: Recorded, text: str) -> dict[str, Any]:
    return {"seq": rec.seq, "at": rec.created_at, "text": text}


def _run(rec: Recorded, *, status: str | None = None, progress: str = "", **extra: Any) -> Change:
    run_id = rec.payload["run_id"]
    values = {"updated_at": rec.created_at, **extra}
    if status:
        values["status"] = status
    return Change(
        "workflow_logs",
        (run_id,),
        set=values,
        append={"progress": _progress(rec, progress)} if progress else {},
    )


def _answer(rec: Recorded, *, status: str, output: Any, answered_by: str) -> Change:
    p = rec.payload
    return Change(
        "tool_usage_logs",
        (p["run_id"], p["call_id"]),
        set={
            "status": status,
            "output": output,
            "answered_by": answered_by,
            "answered_at": rec.created_at,
            "accepted_seq": rec.seq,
        },
    )


def _request(rec: Recorded, kind: str, tool: str, arguments: dict, expires_at: str = "", reattempt_of: dict | None = None) -> Change:
    p = rec.payload
    return Change(
        "tool_usage_logs",
        (p["run_id"], p["call_id"]),
        create={
            "run_id": p["run_id"],
            "call_id": p["call_id"],
            "turn_id": rec.turn_id,
            "kind": kind,
            "tool": tool,
            "arguments": arguments,
            "status": "pending",
            "output": None,
            "answered_by": "",
            "requested_at": rec.created_at,
            "answered_at": None,
            "accepted_seq": None,
            "expires_at": expires_at or None,
            "reattempt_of": reattempt_of or {},
        },
    )


def _by(who: str) -> str:
    return f" by {who}" if who else ""


def changes(conversation_id: str, rec: Recorded) -> list[Change]:
    """Say what one event does to the four stores."""
    p = rec.payload
    k = rec.kind
    conv = (conversation_id,)
    if k == "conversation_started":
        return [
            Change(
                "conversations",
                conv,
                create={
                    "id": conversation_id,
                    "assistant_id": p["assistant_id"],
                    "status": "active",
                    "completed_at": None,
                    "metadata": p.get("metadata", {}),
                    "message_count": 0,
                    "visibility": p.get("visibility", "private"),
                    "owner": p.get("owner", ""),
                    "last_turn_at": None,
                    "created_at": rec.created_at,
                },
            )
        ]
    if k == "turn_dispatched":
        out = [
            Change(
                "workflow_logs",
                (p["run_id"],),
                create={
                    "run_id": p["run_id"],
                    "turn_id": rec.turn_id,
                    "mode": p.get("mode", "agent"),
                    "status": "running",
                    "pending": [],
                    "usage": {},
                    "progress": [_progress(rec, "Continuing" if p.get("continuation") else "Working on it")],
                    "rounds": 0,
                    "quarantined": False,
                    "edge": p.get("edge", ""),
                    "caller": p.get("caller", ""),
                    "error": "",
                    "dispatched_seq": rec.seq,
                    "started_at": rec.created_at,
                    "updated_at": rec.created_at,
                },
            ),
            Change("conversations", conv, set={"last_turn_at": rec.created_at}),
        ]
        if not p.get("continuation"):
            out.append(
                Change(
                    "chat_messages",
                    (p["message_id"],),
                    create={
                        "id": p["message_id"],
                        "turn_id": rec.turn_id,
                        "role": "user",
                        "text": p["text"],
                        "author": p.get("caller", ""),
                        "seq": rec.seq,
                        "created_at": rec.created_at,
                    },
                )
            )
            out.append(Change("conversations", conv, incr={"message_count": 1}))
        return out
    if k == "ingress_directive":
        return [_run(rec, directives={"step_budget": p.get("step_budget"), "required_approver": p.get("required_approver", "")})]
    if k == "model_round":
        tools = [c["tool"] for c in p.get("calls", [])]
        usage = {f"usage.{name}": n for name, n in (p.get("usage") or {}).items() if isinstance(n, int)}
        return [
            Change(
                "workflow_logs",
                (p["run_id"],),
                set={"updated_at": rec.created_at},
                incr={"rounds": 1, **usage},
                append={"progress": _progress(rec, "Using " + ", ".join(tools))} if tools else {},
            )
        ]
    if k == "tool_call_requested":
        return []
    if k == "action_started":
        key = (rec.turn_id, p["call_id"])
        if p.get("attempt", 1) > 1:
            return [Change("action_logs", key, set={"status": "started", "attempts": p["attempt"], "started_at": rec.created_at})]
        return [
            Change(
                "action_logs",
                key,
                create={
                    "turn_id": rec.turn_id,
                    "call_id": p["call_id"],
                    "run_id": p["run_id"],
                    "tool": p["tool"],
                    "action": p["action"],
                    "arguments": p["arguments"],
                    "side_effecting": p["side_effecting"],
                    "idempotency_key": p["idempotency_key"],
                    "status": "started",
                    "output": None,
                    "error": "",
                    "attempts": 1,
                    "started_at": rec.created_at,
                    "finished_at": None,
                    "reattempt_of": p.get("reattempt_of") or {},
                },
            )
        ]
    if k == "action_finished":
        return [
            Change(
                "action_logs",
                (rec.turn_id, p["call_id"]),
                set={
                    "status": "succeeded" if p["ok"] else "failed",
                    "output": p.get("output"),
                    "error": p.get("error", ""),
                    "finished_at": rec.created_at,
                },
            ),
            _run(rec, progress=f"{p['tool']} {'finished' if p['ok'] else 'failed'}"),
        ]
    if k == "client_action_requested":
        return [
            _request(rec, "client_tool", p["tool"], p["arguments"], p.get("expires_at", "")),
            Change(
                "workflow_logs",
                (p["run_id"],),
                set={"status": "waiting", "updated_at": rec.created_at},
                append={"pending": p["call_id"], "progress": _progress(rec, f"Waiting for {p['tool']}")},
            ),
        ]
    if k == "approval_request":
        return [
            _request(rec, "approval", p["tool"], p["arguments"], reattempt_of=p.get("reattempt_of")),
            Change(
                "workflow_logs",
                (p["run_id"],),
                set={"status": "waiting", "updated_at": rec.created_at},
                append={"pending": p["call_id"], "progress": _progress(rec, f"Waiting for approval of {p['tool']}")},
            ),
        ]
    if k == "question_request":
        return [
            _request(rec, "question", "ask_question", {"question": p["question"], **p.get("arguments", {})}),
            Change(
                "workflow_logs",
                (p["run_id"],),
                set={"status": "waiting", "updated_at": rec.created_at},
                append={"pending": p["call_id"], "progress": _progress(rec, "Waiting for an answer")},
            ),
        ]
    if k in ("client_result_accepted", "approval_response", "question_response"):
        if k == "client_result_accepted":
            answer = _answer(rec, status="answered", output=p["output"], answered_by=p.get("answered_by", ""))
            line = f"{p['tool']} answered{_by(p.get('answered_by', ''))}"
        elif k == "approval_response":
            decided = "approved" if p["decision"] == "approve" else "denied"
            answer = _answer(
                rec,
                status=decided,
                output={"decision": p["decision"], "reviewed": p["reviewed"]},
                answered_by=p.get("answered_by", ""),
            )
            line = f"{p['reviewed'].get('tool', 'Action')} {decided}{_by(p.get('answered_by', ''))}"
        else:
            output = {"declined": True} if p.get("declined") else {"answer": p["answer"]}
            answer = _answer(rec, status="answered", output=output, answered_by=p.get("answered_by", ""))
            line = f"Question {'skipped' if p.get('declined') else 'answered'}{_by(p.get('answered_by', ''))}"
        run = Change(
            "workflow_logs",
            (p["run_id"],),
            set={"updated_at": rec.created_at, **({"status": "running"} if p.get("run_resumes") else {})},
            discard={"pending": p["call_id"]},
            append={"progress": _progress(rec, line)},
        )
        return [answer, run]
    if k == "completion_requested":
        if p["outcome"] == "completed":
            return [_run(rec, progress="Completion accepted")]
        return [_run(rec, progress=f"Completion not yet possible: {p.get('reason', '')}".rstrip(": "))]
    if k == "turn_complete":
        out = [_run(rec, status="completed", progress="Reply ready", pending=[])]
        if p.get("text"):
            out += [
                Change(
                    "chat_messages",
                    (p["message_id"],),
                    create={
                        "id": p["message_id"],
                        "turn_id": rec.turn_id,
                        "role": "assistant",
                        "text": p["text"],
                        "author": "",
                        "seq": rec.seq,
                        "created_at": rec.created_at,
                    },
                ),
                Change("conversations", conv, incr={"message_count": 1}),
            ]
        return out
    if k == "turn_failed":
        return [_run(rec, status="failed", progress="The run failed", error=p["error"])]
    if k == "turn_expired":
        return [
            _run(rec, status="expired", progress="The pending request expired", pending=[]),
            *[
                Change("tool_usage_logs", (p["run_id"], call_id), set={"status": "expired"})
                for call_id in p.get("call_ids", [])
            ],
        ]
    if k == "turn_ambiguous":
        return [
            _run(rec, status="interrupted", progress=f"Interrupted: the outcome of {p['tool']} is unknown", quarantined=True),
            Change("action_logs", (rec.turn_id, p["call_id"]), set={"status": "ambiguous"}),
        ]
    if k == "turn_interrupted":
        return [_run(rec, status="interrupted", progress="Interrupted")]
    if k == "turn_retried":
        if p.get("reason"):
            return [_run(rec, status="running", progress=f"Retrying after {p['reason']}")]
        return [_run(rec, status="running", progress="Resumed after an interruption")]
    if k == "quarantine_resolved":
        resolution = p["resolution"]
        status = {"done": "resolved_done", "not_done_retry": "resolved_not_done", "abandon": "abandoned"}[resolution]
        return [
            Change("action_logs", (rec.turn_id, p["call_id"]), set={"status": status}),
            _run(
                rec,
                # Only a retry runs on in this turn; done and abandon leave it for Continue.
                status="running" if resolution == "not_done_retry" else "interrupted",
                progress=f"Quarantine resolved ({resolution.replace('_', ' ')})",
                quarantined=False,
            ),
        ]
    if k == "conversation_completed":
        return [Change("conversations", conv, set={"status": "completed", "completed_at": rec.created_at})]
    if k == "repair":
        return []
    if k in PEOPLE_KINDS:
        return _people(conversation_id, rec)
    raise ValueError(f"unknown event kind {k!r}")


# --- people, memory, artifacts, idle close (docs/people.md) -------------------------------------

PEOPLE_KINDS = {
    "participant_added", "participant_removed", "participant_token_issued", "memory_remembered", "memory_cleared",
    "artifact_created", "artifact_acknowledged", "conversation_closed", "conversation_reopened",
}


def _people(conversation_id: str, rec: Recorded) -> list[Change]:
    p = rec.payload
    k = rec.kind
    conv = (conversation_id,)
    if k == "participant_added":
        values = {
            "permissions": p["permissions"], "status": "active", "added_by": p["added_by"], "added_at": rec.created_at,
            "removed_by": "", "removed_at": None,
        }
        key = (conversation_id, p["persona"])
        row = (
            Change("participants", key, set=values)
            if p.get("again")
            else Change("participants", key, create={"conversation_id": conversation_id, "persona": p["persona"], **values})
        )
        return [row, Change("conversations", conv, set={"visibility": "shared"})]
    if k == "participant_removed":
        return [
            Change(
                "participants", (conversation_id, p["persona"]),
                set={"status": "removed", "removed_by": p["removed_by"], "removed_at": rec.created_at},
            )
        ]
    if k == "participant_token_issued":
        return []
    if k == "memory_remembered":
        return [
            Change(
                "memories",
                (p["fact_id"],),
                create={
                    "fact_id": p["fact_id"], "run_id": p["run_id"], "turn_id": rec.turn_id, "call_id": p["call_id"],
                    "text": p["text"], "persona": p.get("persona", ""), "status": "active",
                    "remembered_at": rec.created_at, "cleared_by": "", "cleared_at": None,
                },
            )
        ]
    if k == "memory_cleared":
        # The text is blanked in the store; the log keeps what was said, as it keeps every message.
        return [
            Change("memories", (fact_id,), set={"status": "cleared", "text": "", "cleared_by": p["cleared_by"], "cleared_at": rec.created_at})
            for fact_id in p["fact_ids"]
        ]
    if k == "artifact_created":
        return [
            Change(
                "artifacts",
                (p["artifact_id"],),
                create={
                    "artifact_id": p["artifact_id"], "run_id": p["run_id"], "turn_id": rec.turn_id, "call_id": p["call_id"],
                    "name": p["name"], "media_type": p["media_type"], "sha256": p["sha256"], "size": p["size"],
                    "path": p["path"], "source_identity": p["source_identity"], "source_revision": p.get("source_revision", ""),
                    "status": "created", "created_at": rec.created_at, "acknowledged_by": "", "acknowledged_at": None,
                },
            )
        ]
    if k == "artifact_acknowledged":
        return [
            Change(
                "artifacts", (p["artifact_id"],),
                set={"status": "acknowledged", "acknowledged_by": p["acknowledged_by"], "acknowledged_at": rec.created_at},
            )
        ]
    if k == "conversation_closed":
        return [
            Change(
                "closures",
                (conversation_id, rec.seq),
                create={
                    "conversation_id": conversation_id, "closed_seq": rec.seq, "reason": p["reason"], "closed_at": rec.created_at,
                    "last_turn_at": p["last_turn_at"], "idle_timeout_seconds": p["idle_timeout_seconds"],
                    "reopened_seq": None, "reopened_at": None,
                },
            )
        ]
    if k == "conversation_reopened":
        return [Change("closures", (conversation_id, p["closed_seq"]), set={"reopened_seq": rec.seq, "reopened_at": rec.created_at})]
    raise ValueError(f"unknown event kind {k!r}")


@dataclass
class Folded:
    """The four stores as the log says they are, keyed by each store's key."""

    rows: dict[str, dict[tuple, dict[str, Any]]] = field(default_factory=lambda: {s: {} for s in STORES})


def fold(conversation_id: str, events: list[Recorded], state: Folded | None = None) -> Folded:
    """
    Rebuild the four stores of one conversation from its log, calling no model or tool.

    With `state`, continue folding onto it (in place) instead of starting empty.
    :raises ValueError: an event is of an unknown kind or does not apply to the state so far
    :raises KeyError: an event lacks a field its kind needs
    """
    state = Folded() if state is None else state
    for rec in events:
        for change in changes(conversation_id, rec):
            table = state.rows[change.store]
            table[change.key] = apply_change(table.get(change.key), change)
    return state
