"""
The inspector: everything the staff see of one conversation, and the verification of its log.

The verification reuses the ledger's own code: `replay.stored_entries` and `chain.verify_chain`
(what `conversation verify` runs), never a hashing of its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache
from typing import Any

from django.db.models import Q

from apps.actions.models import ActionLog
from apps.agent.handoff import available, control_of, control_words, handoff_settings
from apps.conversations import queries as conversation_queries
from apps.conversations.models import ChatMessage, ControlChange, Conversation, ConversationToken
from apps.conversations.models import StaffNote as StaffNoteRow
from apps.ledger import chain, replay
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.staff.queries.queues import waiting_count
from apps.staff.queries.timeline import timeline
from apps.staff.queries.words import call_words, last_run, pretty
from apps.workspaces.queries import workspace_state


def head_seq(conversation_id: str) -> int | None:
    """The conversation's log head, or None when there is no such conversation."""
    conversation = conversation_queries.conversation_for(conversation_id)
    return conversation.head_seq if conversation else None


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
        item.arguments_text = pretty(item.arguments)
        item.output_text = "" if item.output is None else pretty(item.output)
        item.words = call_words(by_name.get(item.tool, {}), item.tool, item.arguments)
    workspace = workspace_state(conversation, run=latest)
    named = _people(cid, read, after=since or 0, trusted=known.ok)
    return {
        "conversation": conversation,
        "assistant": conversation.assistant,
        "since": since,
        "last_run": last_run(latest.status if latest else None, bool(latest and latest.quarantined)),
        "metadata_text": pretty(conversation.metadata),
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
