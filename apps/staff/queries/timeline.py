"""
The inspector's timeline: every log entry with its verification mark and a short line in words.

The marks are the ledger's own verification (`replay.verify`, what `conversation verify` runs),
never a hashing of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from apps.agent import tools as tool_words
from apps.ledger import chain, replay
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ApprovalRequest,
    ApprovalResponse,
    ArtifactAcknowledged,
    ArtifactCreated,
    ClientActionRequested,
    ClientResultAccepted,
    CompletionRequested,
    ControlReturned,
    ControlTaken,
    ConversationClosed,
    ConversationReopened,
    CustomerMessage,
    HandoffCancelled,
    HandoffDetails,
    HandoffRequested,
    HandoffTimedOut,
    MemoryCleared,
    MemoryRemembered,
    ModelRound,
    ParticipantAdded,
    ParticipantRemoved,
    ParticipantTokenIssued,
    QuarantineResolved,
    QuarantineSettled,
    QuestionResponse,
    StaffMessage,
    StaffNote,
    TurnAmbiguous,
    TurnComplete,
    TurnDispatched,
    TurnFailed,
    TurnHandedOff,
    TurnRetried,
    decode,
)
from apps.staff.queries.words import pretty


def timeline(conversation_id: str, *, verification: chain.VerifyResult | None = None,
             entries: list[chain.StoredEntry] | None = None, after: int = 0) -> tuple[list[dict[str, Any]], chain.VerifyResult]:
    """
    Return every log entry (`entries`: those after `after`) with its verification mark, and the verification of the whole log.

    The whole-log result is `replay.verify`'s, the very check of `conversation verify` (or
    `verification`, one the caller has of it); the marks follow it: entries before the first bad
    one verify, the first bad one and every one after it do not (the chain no longer vouches for them).
    """
    if entries is None:
        entries = [chain.StoredEntry(*row) for row in replay.log_rows(conversation_id, after_seq=after)]
    result = verification or replay.verify(conversation_id)
    bad = result.first_bad_seq
    rows = []
    for position, entry in enumerate(entries, start=after + 1):
        verified = result.ok or (bad is not None and position <= result.checked)
        rows.append({
            "seq": entry.seq, "kind": entry.kind, "turn_id": entry.turn_id, "actor": entry.actor,
            "created_at": datetime.fromisoformat(entry.created_at), "payload_text": pretty(entry.payload),
            "readable": isinstance(entry.payload, dict), "verified": verified,
            "first_bad": not result.ok and position == result.checked + 1,
            "summary": _summary(entry.kind, entry.payload),
        })
    return rows, result


# The kinds whose timeline line is their name alone: what they are says it all. Every other kind has
# a case in `_summary` (tests/unit/test_event_kinds.py holds the two together).
UNSUMMARISED = frozenset({"conversation_started", "ingress_directive", "question_request", "turn_expired", "turn_superseded",
                          "conversation_completed", "repair"})


def _summary(kind: str, payload: Any) -> str:
    """A short human line for a log entry, so the timeline reads without opening every payload."""
    if not isinstance(payload, dict):
        return "unreadable payload"
    try:
        event = decode(kind, payload)
    except (KeyError, TypeError):
        return ""  # an unknown kind, or a payload that does not fit it: the entry itself is shown
    match event:
        case TurnDispatched(continuation=True):
            return "Continue"
        case TurnDispatched(text=text, edge=edge):
            return f"“{str(text)[:80]}” via {edge}"
        case ModelRound(round=number, calls=calls, text=text):
            called = ", ".join(c.get("tool", "?") for c in calls)
            text = str(text)[:60]
            return f"round {number}" + (f": calls {called}" if called else "") + (f" — “{text}”" if text else "")
        case ActionFinished(tool=tool, ok=ok, error=error):
            return f"{tool} ok" if ok else f"{tool} failed: {error}"
        case ActionStarted(tool=tool, attempt=attempt):
            return f"{tool} (attempt {attempt})" if attempt > 1 else str(tool)
        case ApprovalRequest(tool=tool, approver=approver, expires_at=expires_at):
            return str(tool) + (f" · approver {approver}" if approver else "") + (f" · expires {expires_at[:19]}" if expires_at else "")
        case ClientActionRequested(tool=tool):
            return str(tool)
        case ApprovalResponse(decision="expired"):
            return "expired: nobody answered in time"
        case ApprovalResponse(answered_by=by, reviewed=reviewed, edited_arguments=edits) if edits:
            changed = tool_words.changes_text((reviewed or {}).get("arguments") or {}, edits) if isinstance(edits, dict) else ""
            return f"approve with changes ({changed or 'none'}) by {by or 'unknown'}"
        case ApprovalResponse(decision=decision, answered_by=by):
            return f"{decision} by {by or 'unknown'}"
        case ClientResultAccepted(answered_by=by) | QuestionResponse(answered_by=by):
            return f"answered by {by or 'unknown'}"
        case TurnAmbiguous(tool=tool, idempotency_key=key):
            return f"outcome of {tool} unknown (key {key})"
        case QuarantineResolved(resolution=resolution, note=note):
            return str(resolution).replace("_", " ") + (f": {note}" if note else "")
        case QuarantineSettled(turn_id=turn_id, by_call_id=by):
            return f"the re-attempt {by} succeeded: the outcome of turn {turn_id} is known"
        case TurnComplete(text=text):
            return f"“{str(text)[:80]}”"
        case TurnFailed(error=error):
            return str(error or "")
        case TurnRetried(attempt=attempt, reason=reason):
            return f"attempt {attempt} after {reason or 'an interruption'}"
        case CompletionRequested(outcome=outcome):
            return str(outcome)
        # people, memory, artifacts and idle close (docs/people.md)
        case ParticipantAdded(persona=persona, again=again, added_by=by, permissions=permissions):
            return f"{persona} added{' again' if again else ''} by {by} ({', '.join(permissions or [])})"
        case ParticipantRemoved(persona=persona, removed_by=by):
            return f"{persona} removed by {by}"
        case ParticipantTokenIssued(edge=edge, persona=persona, issued_by=by):
            return f"{edge} token for {persona} issued by {by}"
        case MemoryRemembered(text=text, persona=persona):
            return f"“{str(text)[:80]}”" + (f" for {persona}" if persona else "")
        case MemoryCleared(fact_ids=fact_ids, cleared_by=by):
            count = len(fact_ids or [])
            return f"{count} fact{'s' if count != 1 else ''} cleared by {by}"
        case ArtifactCreated(name=name, media_type=media_type, size=size, call_id=call_id):
            return f"{name} ({media_type}, {size} bytes) by {call_id}"
        case ArtifactAcknowledged(artifact_id=artifact_id, acknowledged_by=by):
            return f"{artifact_id} acknowledged by {by}"
        case ConversationClosed(reason=reason, last_turn_at=last, idle_timeout_seconds=timeout):
            return f"{reason}: no turn since {str(last)[:19]} (timeout {timeout} s)"
        case ConversationReopened(closed_seq=closed):
            return f"reopened by a new turn (closed at entry {closed})"
        # human handoff (docs/handoff.md)
        case HandoffRequested(source=source, requested_by=by, reason=reason):
            return f"a person asked for by the {source} ({by})" + (f": {reason}" if reason else "")
        case ControlTaken(staff=staff, name=name, reason=reason, from_=held_by, by=by) if by:
            return f"{by} handed it to {name or staff} ({staff})" + (f" from {held_by}" if held_by and held_by != by else "")
        case ControlTaken(staff=staff, name=name, reason=reason, from_=held_by):
            return (f"{name or staff} ({staff}) took over" + (f" from {held_by}" if held_by else "")
                    + (f": {reason}" if reason else ""))
        case ControlReturned(staff=staff, name=name, note=note, from_=held_by):
            return (f"{name or staff} ({staff}) handed back to the assistant" + (f" for {held_by}" if held_by else "")
                    + (f", note: {note}" if note else ""))
        case HandoffTimedOut(timeout_seconds=timeout):
            return f"nobody took it within {timeout} s: back to the assistant"
        case HandoffCancelled(persona=persona):
            return f"{persona} stopped waiting: back to the assistant"
        case HandoffDetails(reason=reason, email=email):
            return "; ".join(part for part in (f"why: {reason}" if reason else "",
                                               "left an email address for the reply" if email else "") if part)
        case TurnHandedOff(call_ids=call_ids, reason=reason):
            withdrawn = f"; withdrew {', '.join(call_ids)}" if call_ids else ""
            return f"run stopped: {reason}{withdrawn}"
        case CustomerMessage(text=text, edge=edge):
            # Stored while a person holds the conversation or one was asked for: either way no run answers it.
            return f"“{str(text)[:80]}” via {edge}, no run: the assistant is silent"
        case StaffMessage(text=text, name=name, staff=staff):
            return f"{name or staff}: “{str(text)[:80]}”"
        case StaffNote(text=text, name=name, staff=staff):
            return f"internal note by {name or staff}: “{str(text)[:80]}”"
    return ""
