"""
Staff reads: the conversation list, the inspector, the quarantine queue, assistants, keys, personas.

The inspector's verification reuses the ledger's own code: `replay.stored_entries` and
`chain.verify_chain` (what `conversation verify` runs), never a hashing of its own.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from django.db.models import Count, Max, OuterRef, Q, Subquery

from apps.actions.models import ActionLog
from apps.agent import tools
from apps.agent.handoff import available, control_of, control_words, handoff_settings
from apps.agent.models import Assistant
from apps.conversations import queries as conversation_queries
from apps.conversations.models import ChatMessage, ControlChange, Conversation, ConversationToken
from apps.conversations.models import StaffNote as StaffNoteRow
from apps.ledger import chain, replay
from apps.ledger.models import Event
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
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.staff.models import StaffAuditLog
from apps.workspaces.models import ApiKey
from apps.workspaces.queries import workspace_state


def last_run(run_status: str | None, quarantined: bool) -> str:
    """
    The one-word state of a conversation's latest run, shown beside its lifecycle (never in its place).

    A run `completed` is a finished turn: the conversation stays `active` until it is completed.
    """
    if quarantined and run_status == "interrupted":
        return "quarantined"
    return run_status or ""


# --- the inspector ------------------------------------------------------------------------------


def head_seq(conversation_id: str) -> int | None:
    """The conversation's log head, or None when there is no such conversation."""
    conversation = conversation_queries.conversation_for(conversation_id)
    return conversation.head_seq if conversation else None


def _pretty(value: Any) -> str:
    """JSON for people: on one line when it is short, indented when it is not."""
    if isinstance(value, str):
        return value
    line = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return line if len(line) <= 60 else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


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
            "created_at": datetime.fromisoformat(entry.created_at), "payload_text": _pretty(entry.payload),
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
            tools = ", ".join(c.get("tool", "?") for c in calls)
            text = str(text)[:60]
            return f"round {number}" + (f": calls {tools}" if tools else "") + (f" — “{text}”" if text else "")
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
            changed = tools.changes_text((reviewed or {}).get("arguments") or {}, edits) if isinstance(edits, dict) else ""
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


def _participants(conversation: Conversation, named: dict[str, list[str]], members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation's members, then everyone else its log names (`named`, see `_people`) or its tokens, with what they did."""
    people: dict[str, dict[str, Any]] = {}

    def seen(persona: str, role: str) -> None:
        if persona:
            person = people.setdefault(persona, {"persona": persona, "roles": [], "permissions": set(), "tokens": 0, "revoked": 0,
                                                 "added_by": ""})
            if role and role not in person["roles"]:
                person["roles"].append(role)

    for member in members:
        seen(member["persona"], member["role"])
        people[member["persona"]]["permissions"] |= set(member.get("permissions", []))
        people[member["persona"]]["added_by"] = member.get("added_by", "")
    for persona, roles in named.items():
        for role in roles:
            seen(persona, role)
    for token in ConversationToken.objects.filter(conversation_id=conversation.id).order_by("created_at"):
        seen(token.persona, "")
        person = people[token.persona]
        person["tokens"] += 1
        if token.revoked_at:
            person["revoked"] += 1
        else:
            person["permissions"] |= set(token.permissions)
    for person in people.values():
        person["permissions"] = sorted(person["permissions"])
    return list(people.values())


def _name_people(named: dict[str, list[str]], entries: list[chain.StoredEntry]) -> None:
    """Add to `named` (persona → roles, in the order the log first names them) whom `entries` name and as what."""

    def seen(persona: str, role: str) -> None:
        if persona:
            roles = named.setdefault(persona, [])
            if role not in roles:
                roles.append(role)

    for entry in entries:
        payload = entry.payload
        if not isinstance(payload, dict):
            continue
        if entry.kind in ("conversation_started", "turn_dispatched"):
            for persona in payload.get("participants", []):
                seen(persona, "participant")
            seen(payload.get("caller", ""), "wrote")
        if payload.get("answered_by"):
            seen(payload["answered_by"], "answered")
        if entry.actor.startswith("staff:"):
            seen(entry.actor, "staff")


class _Marks:
    """Something this process keeps of each conversation, as (seq it holds up to, value); the newest few thousand."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._guard = threading.Lock()
        self._kept: OrderedDict[str, tuple[int, Any]] = OrderedDict()

    def get(self, conversation_id: str) -> tuple[int, Any] | None:
        with self._guard:
            return self._kept.get(conversation_id)

    def keep(self, conversation_id: str, mark: tuple[int, Any]) -> None:
        with self._guard:
            known = self._kept.pop(conversation_id, None)
            self._kept[conversation_id] = mark if known is None or mark[0] >= known[0] else known  # two threads: the later entry
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


_marks = _Marks()  # the last entry verified, as (seq, hash)
_named = _Marks()  # whom the log names and as what, up to an entry (`_name_people`)


def _people(cid: str, entries: list[chain.StoredEntry], *, after: int, trusted: bool) -> dict[str, list[str]]:
    """
    Whom a conversation's log names and as what; `entries` are those after `after`, already read.

    Gone on from what this process found up to an earlier entry, when the log verifies (`trusted`):
    the participants then cost what the new entries cost, not a read of the whole log. Naming is
    idempotent, so an entry folded twice by two threads changes nothing.
    """
    kept = _named.get(cid) if trusted else None
    if kept is None and after == 0:
        upto, named = 0, {}
    elif kept is None or kept[0] < after:
        upto, named = 0, {}
        entries = [chain.StoredEntry(*row) for row in replay.log_rows(cid)]
    else:
        upto, named = kept[0], {persona: list(roles) for persona, roles in kept[1].items()}
    fresh = [e for e in entries if e.seq > upto]
    _name_people(named, fresh)
    if trusted and fresh:
        _named.keep(cid, (fresh[-1].seq, named))
    return named


def verification(conversation_id: str, *, whole: bool = False) -> chain.VerifyResult:
    """
    `replay.verify` of a conversation from the last entry this process verified of it (`whole`: from the first).

    A staff action (Take over, Send reply, Hand back) then checks the entries it and others added
    since, not the whole log again: its cost does not grow with the conversation. The mark is this
    process's own, never read from the database, so nobody who can write there can move it past
    an entry they changed; an entry changed after it still fails, and any failure is the whole
    log's verification. A page load and the Verify button check the whole log.
    """
    cid = str(conversation_id)
    result = replay.verify(cid, after=None if whole else _marks.get(cid))
    if result.ok and result.last_hash:
        _marks.keep(cid, (result.checked, result.last_hash))
    return result


@lru_cache(maxsize=256)
def verified_at(conversation_id: str, head_seq: int, head_hash: str) -> chain.VerifyResult:
    """
    `verification` of a conversation, once per log head in this process.

    The live inspector is pushed fresh fragments on every commit, to every staff socket open on the
    conversation: verifying for each of them cost tens of milliseconds per push per socket.
    """
    return verification(conversation_id)


def inspect_conversation(conversation_id: str, *, live: bool = False, since: int | None = None) -> dict[str, Any] | None:
    """
    Return everything the inspector shows about one conversation, or None when there is none.

    The transcript, the full verified timeline, runs, pending calls, tool usage, action logs,
    participants, memory, artifacts and the conversation's conditions. `live`: for a push or a
    poll of the open page, whose verification is the one of this head (`verified_at`).

    `since`: the head the open page shows, its log verified. Then the lists hold only what that
    page lacks (`"since"` in the result): the entries and messages after it, and the runs, calls
    and actions those entries touched; a staff action's answer or a push then costs what changed,
    not the whole conversation again. Without it, or when the log no longer verifies (every mark
    may change) or `since` is not a head the log had, the lists are whole (`"since"` None).
    """
    conversation = conversation_queries.conversation_for(conversation_id)
    if conversation is None:
        return None
    cid = str(conversation.id)
    known = verified_at(cid, conversation.head_seq, conversation.head_hash) if live else verification(cid, whole=True)
    if since is not None and not (known.ok and 0 < since <= conversation.head_seq):
        since = None
    read = [chain.StoredEntry(*row) for row in replay.log_rows(cid, after_seq=since or 0)]
    entries, checked = timeline(cid, verification=known, entries=read, after=since or 0)
    runs = WorkflowLog.objects.filter(conversation_id=cid)
    usage = ToolUsageLog.objects.filter(conversation_id=cid)
    action_logs = ActionLog.objects.filter(conversation_id=cid)
    messages = ChatMessage.objects.filter(conversation_id=cid)
    notes = StaffNoteRow.objects.filter(conversation_id=cid)
    changes = ControlChange.objects.filter(conversation_id=cid)
    if since is not None:
        touched = _touched(read)
        runs, usage, action_logs = runs.filter(touched), usage.filter(touched), action_logs.filter(touched)
        messages, notes, changes = messages.filter(seq__gt=since), notes.filter(seq__gt=since), changes.filter(seq__gt=since)
    runs = list(runs.order_by("dispatched_seq"))
    # The latest run: the last of the list when it is whole, else read for itself.
    latest = (runs[-1] if runs else None) if since is None else \
        WorkflowLog.objects.filter(conversation_id=cid).order_by("-dispatched_seq").first()
    usage = list(usage.order_by("requested_at", "id"))
    action_logs = list(action_logs.order_by("started_at", "id"))
    by_name = {t["name"]: t for t in conversation.assistant.config.get("tools", [])}
    for item in [*usage, *action_logs]:
        item.arguments_text = _pretty(item.arguments)
        item.output_text = "" if item.output is None else _pretty(item.output)
        item.words = call_words(by_name.get(item.tool, {}), item.tool, item.arguments)
    workspace = workspace_state(conversation, run=latest)
    named = _people(cid, read, after=since or 0, trusted=known.ok)
    return {
        "conversation": conversation,
        "assistant": conversation.assistant,
        "since": since,
        "last_run": last_run(latest.status if latest else None, bool(latest and latest.quarantined)),
        "metadata_text": _pretty(conversation.metadata),
        "messages": _transcript(conversation, list(messages.order_by("seq")), list(notes.order_by("seq")),
                                list(changes.order_by("seq"))),
        "timeline": entries,
        "verification": checked,
        "runs": runs,
        "quarantined_runs": (list(WorkflowLog.objects.filter(conversation_id=cid, quarantined=True).order_by("dispatched_seq"))
                             if since is not None else [r for r in runs if r.quarantined]),
        "pending_count": (ToolUsageLog.objects.filter(conversation_id=cid, status="pending").count()
                          if since is not None else sum(u.status == "pending" for u in usage)),
        "tool_usage": usage,
        "action_logs": action_logs,
        "participants": _participants(conversation, named, workspace["participants"]),
        "conditions": workspace["conditions"],
        "display_phase": workspace["display_phase"],
        "memory": workspace["memory"],
        "artifacts": workspace["artifacts"],
        "seq": conversation.head_seq,
        "control": control_of(conversation),
        "handoff_enabled": available(conversation.assistant.config),
        "waiting_count": waiting_count(),
    }


def _transcript(conversation: Conversation, messages: list[ChatMessage], notes: list, changes: list[ControlChange]) -> list:
    """
    The transcript as the staff see it: the messages and, where the log has them, the internal
    notes (`role` "note") and the changes of control in the customer's words (`role` "control": "Dana joined").
    """
    for note in notes:
        note.role = "note"
    unavailable = handoff_settings(conversation.assistant.config)["unavailable_message"]
    for change in changes:
        change.role = "control"
        change.words = control_words(change.kind, name=change.name, text=change.text, unavailable_message=unavailable)
    return sorted([*messages, *notes, *changes], key=lambda item: item.seq)


def _touched(entries: list[chain.StoredEntry]) -> Q:
    """
    The runs, calls and actions that `entries` may have changed: those of the runs and turns they name.

    Every projection of those stores keys its change on the entry's turn or on a `run_id` or
    `turn_id` of its payload (apps/runs/projection.py, apps/actions/projection.py).
    """
    runs, turns = set(), set()
    for entry in entries:
        turns.add(entry.turn_id)
        if isinstance(entry.payload, dict):
            runs.add(entry.payload.get("run_id"))
            turns.add(entry.payload.get("turn_id"))
    return Q(run_id__in=[r for r in runs if isinstance(r, str)]) | Q(turn_id__in=[t for t in turns if isinstance(t, str) and t])


def waiting_for_a_person(*, now=None, limit: int = 200) -> list[dict[str, Any]]:
    """
    The conversations waiting for a person (control `queued`), oldest request first, with how long each has waited.

    The index on (control_mode, control_requested_at) finds the few queued among all conversations.
    """
    now = now or datetime.now(UTC)
    queued = list(Conversation.objects.filter(control_mode="queued").select_related("assistant")
                  .order_by("control_requested_at", "id")[:limit])
    ids = [c.id for c in queued]
    last = {}
    for cid, text in (ChatMessage.objects.filter(conversation_id__in=ids, role="user")
                      .order_by("seq").values_list("conversation_id", "text")):
        last[cid] = text
    # Who asked comes from the request's own entry (the projection keeps only its time and reason);
    # the newest request of each conversation is the one it waits on.
    asked = {}
    for cid, payload in (Event.objects.filter(conversation_id__in=ids, kind="handoff_requested")
                         .order_by("seq").values_list("conversation_id", "payload")):
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            request = json.loads(payload)
            asked[cid] = {"source": ASKED_BY.get(request.get("source"), str(request.get("source", ""))),
                          "by": str(request.get("requested_by") or ""),
                          # Whether they were promised a person (None: asked before the entry said).
                          "promised": None if "staff_online" not in request
                          else bool(request["staff_online"] and request.get("within_hours", True))}
    return [{"conversation": c, "assistant": c.assistant, "requested_at": c.control_requested_at, "reason": c.control_reason,
             "waited": waited(now - c.control_requested_at) if c.control_requested_at else "", "last_message": last.get(c.id, ""),
             "asked": asked.get(c.id)}
            for c in queued]


# HandoffRequested.source in words: who pressed or called for a person.
ASKED_BY = {"customer": "The customer", "application": "The application", "model": "The assistant"}


def waiting_count() -> int:
    return Conversation.objects.filter(control_mode="queued").count()


def unanswered_count(me: str) -> int:
    """The conversations `me` holds whose last message is the customer's: each waits for their reply."""
    last_role = ChatMessage.objects.filter(conversation=OuterRef("pk")).order_by("-seq").values("role")[:1]
    return (Conversation.objects.filter(control_mode="human", control_staff=me)
            .annotate(last_role=Subquery(last_role)).filter(last_role="user").count())


def quarantine_count() -> int:
    """The quarantined turns that wait for a decision (the quarantine queue's; a quarantined run is `interrupted`)."""
    return WorkflowLog.objects.filter(status="interrupted", quarantined=True).count()


def waited(delta) -> str:
    """How long someone has waited, as people say it: "just now", "4 min", "1 h 5 min"."""
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return "just now" if seconds < 10 else f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def call_words(tool: dict[str, Any], name: str, arguments: Any) -> str:
    """What the customer's card says of a call (its tool's summary, else display name), "" when it says only the name."""
    return tools.summary(tool, arguments) or (tools.display_name(tool, name) if tool.get("display_name") else "")


# --- the quarantine queue -----------------------------------------------------------------------


def quarantine_queue(*, limit: int = 100) -> list[dict[str, Any]]:
    """
    Return the quarantined turns, oldest first, with what is known of the ambiguous action.

    A quarantined run is always `interrupted`, so the status index finds them.
    """
    runs = list(
        WorkflowLog.objects.filter(status="interrupted", quarantined=True)
        .select_related("conversation__assistant")
        .order_by("updated_at", "run_id")[:limit]
    )
    turn_ids = [r.turn_id for r in runs]
    ambiguous = {a.turn_id: a for a in ActionLog.objects.filter(turn_id__in=turn_ids, status="ambiguous").order_by("-started_at")}
    asked = {m.turn_id: m.text for m in ChatMessage.objects.filter(turn_id__in=turn_ids, role="user")}
    items = []
    for run in runs:
        action = ambiguous.get(run.turn_id)
        if action is not None:
            action.arguments_text = _pretty(action.arguments)
            tool = next((t for t in run.conversation.assistant.config.get("tools", []) if t["name"] == action.tool), {})
            action.words = call_words(tool, action.tool, action.arguments)
        items.append({"run": run, "conversation": run.conversation, "assistant": run.conversation.assistant,
                      "action": action, "message": asked.get(run.turn_id, ""), "since": _since(run, action)})
    return items


def _since(run: WorkflowLog, action: ActionLog | None) -> str:
    """What happened after the interruption: whether the customer continued, and what became of a re-attempt."""
    if not WorkflowLog.objects.filter(conversation_id=run.conversation_id, dispatched_seq__gt=run.dispatched_seq).exists():
        return "The customer has not continued yet."
    if action is not None:
        repeat = (ActionLog.objects.filter(conversation_id=run.conversation_id, reattempt_of__turn_id=run.turn_id,
                                           reattempt_of__call_id=action.call_id).order_by("-started_at").first())
        if repeat is not None:
            outcome = {"succeeded": "it succeeded", "failed": "it failed", "started": "it is under way"}.get(
                repeat.status, "its outcome is unknown too")
            return (f"The customer continued: a re-attempt went out at {repeat.started_at:%Y-%m-%d %H:%M:%S} "
                    f"under the same idempotency key, and {outcome}.")
        waiting = ToolUsageLog.objects.filter(conversation_id=run.conversation_id, status="pending",
                                              reattempt_of__turn_id=run.turn_id, reattempt_of__call_id=action.call_id)
        if waiting.exists():
            return "The customer continued: a re-attempt waits for approval, under the same idempotency key."
    return "The customer continued; the action has not been tried again."


# --- assistants, API keys, personas -------------------------------------------------------------


def assistants() -> list[Assistant]:
    """Every assistant, the demo first, then by name."""
    return list(Assistant.objects.order_by("-is_demo", "name"))


def assistant_for(assistant_id: Any) -> Assistant | None:
    """Return an assistant by id, or None for an unknown or malformed id."""
    try:
        return Assistant.objects.filter(id=uuid.UUID(str(assistant_id))).first()
    except ValueError:
        return None


def editable_config(assistant: Assistant) -> tuple[str, str]:
    """The assistant form's two fields: the configuration JSON without its origins, and the origins."""
    config = {k: v for k, v in assistant.config.items() if k != "allowed_origins"}
    return json.dumps(config, indent=2, ensure_ascii=False), "\n".join(assistant.config.get("allowed_origins", []))


def api_keys() -> list[ApiKey]:
    """Every workspace API key, newest first (their secrets are not stored)."""
    return list(ApiKey.objects.order_by("-created_at", "-id"))


def recent_audit(*, prefix: str, limit: int = 20) -> list[StaffAuditLog]:
    """The latest staff changes whose target starts with `prefix` (`assistant:`, `api_key:`)."""
    return list(StaffAuditLog.objects.filter(target__startswith=prefix).order_by("-created_at", "-id")[:limit])


def personas(*, search: str = "", limit: int = 200) -> list[dict[str, Any]]:
    """
    Return the personas that hold conversation tokens, with their permissions and reach.

    Permissions are the union over each persona's live (not revoked) tokens.
    """
    tokens = ConversationToken.objects.all()
    if search:
        tokens = tokens.filter(persona__icontains=search)
    rows = list(
        tokens.values("persona")
        .annotate(conversations=Count("conversation_id", distinct=True), tokens=Count("id"),
                  revoked=Count("id", filter=Q(revoked_at__isnull=False)), last_seen=Max("created_at"))
        .order_by("-last_seen", "persona")[:limit]
    )
    names = [r["persona"] for r in rows]
    grants: dict[str, set[str]] = {name: set() for name in names}
    edges: dict[str, set[str]] = {name: set() for name in names}
    for persona, permissions, edge in (
        ConversationToken.objects.filter(persona__in=names, revoked_at__isnull=True)
        .values_list("persona", "permissions", "edge").distinct()
    ):
        grants[persona] |= set(permissions or [])
        edges[persona].add(edge)
    for row in rows:
        row["permissions"] = sorted(grants[row["persona"]])
        row["edges"] = sorted(edges[row["persona"]])
        row["provider"] = row["persona"].split(":", 1)[0] if ":" in row["persona"] else ""
    return rows


