"""
Appending to and reading a conversation's log.

`append` is the only way entries are written. In one transaction it chains and signs the new
entries, writes them, applies the store changes they imply (`projection.changes`) and moves the
log head, then broadcasts the new head once the transaction commits.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import partial
from typing import Any

import rfc8785
from django.db import connection, models, transaction
from django.db.models import F, Func, Value

from apps.actions.models import ActionLog
from apps.conversations import broadcast
from apps.conversations.models import ChatMessage, Conversation, Lease
from apps.ledger import chain
from apps.ledger.keys import signing_key
from apps.ledger.models import Event
from apps.ledger.projection import KEYS, Change, apply_change, changes
from apps.ledger.types import EventKind, Recorded
from apps.people.models import Participant
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.workspaces.models import Artifact, Closure, Memory

MODELS: dict[str, type[models.Model]] = {
    "conversations": Conversation,
    "workflow_logs": WorkflowLog,
    "tool_usage_logs": ToolUsageLog,
    "chat_messages": ChatMessage,
    "action_logs": ActionLog,
    "participants": Participant,
    "memories": Memory,
    "artifacts": Artifact,
    "closures": Closure,
}


class LeaseLost(Exception):
    """The writer's lease was taken over; it must stop writing."""

    code = "lease_lost"


def iso(moment: datetime) -> str:
    """The one text form of a time in the log and the projection."""
    return moment.isoformat(timespec="microseconds")


def append(
    *,
    conversation_id: str,
    events: list[EventKind],
    turn_id: str = "",
    actor: str = "",
    now: datetime,
    head: tuple[int, str] | None = None,
    lease: tuple[str, int] | None = None,
) -> list[Recorded]:
    """
    Append entries to a conversation's log and apply what they imply to the four stores.

    Must run inside `transaction.atomic()` with the conversation row locked by the caller (or, for
    a new conversation, with `head` = (0, GENESIS)).
    :raises LeaseLost: `lease` (holder, version) no longer holds the conversation
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("append must run inside a transaction")
    cid = str(conversation_id)
    if lease is not None:
        holder, version = lease
        if not Lease.objects.filter(conversation_id=cid, holder=holder, version=version).exists():
            raise LeaseLost(cid)
    if head is None:
        head = Conversation.objects.filter(id=cid).values_list("head_seq", "head_hash").get()
    seq, prev = head
    key = signing_key()
    created_at = iso(now)
    partition = f"conv-{cid}"
    rows: list[Event] = []
    recorded: list[Recorded] = []
    for body in events:
        seq += 1
        payload = json.loads(rfc8785.dumps(body.payload()))
        canonical = chain.canonical(
            partition=partition, seq=seq, kind=body.kind, turn_id=turn_id, payload=payload, actor=actor, created_at=created_at
        )
        digest = chain.entry_hash(prev, canonical)
        rows.append(
            Event(
                conversation_id=cid,
                seq=seq,
                kind=body.kind,
                turn_id=turn_id,
                payload=rfc8785.dumps(payload).decode("utf-8"),
                actor=actor,
                created_at=now,
                prev_hash=prev,
                hash=digest,
                signature=key.sign(digest),
                key_id=key.key_id,
            )
        )
        recorded.append(Recorded(seq=seq, kind=body.kind, turn_id=turn_id, actor=actor, created_at=created_at, payload=payload))
        prev = digest
    Event.objects.bulk_create(rows)
    # Plain updates of the conversation's own row ride on the head update: one UPDATE, not one each.
    own: dict[str, Any] = {}
    for rec in recorded:
        for change in changes(cid, rec):
            if _plain_own_row(cid, change):
                if own.keys() & {*change.set, *change.incr}:
                    _update_own_row(cid, own)
                own.update({name: _db_value(Conversation, name, v) for name, v in change.set.items()})
                own.update({name: F(name) + n for name, n in change.incr.items()})
                continue
            if change.store == "conversations" and own:
                _update_own_row(cid, own)
            _apply(cid, change)
    Conversation.objects.filter(id=cid).update(**own, head_seq=seq, head_hash=prev)
    transaction.on_commit(partial(broadcast.state_changed, cid, seq))
    return recorded


def _db_value(model: type[models.Model], name: str, value: Any) -> Any:
    field = model._meta.get_field(name)
    if isinstance(field, models.DateTimeField) and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value


def _key_filter(change: Change) -> dict[str, Any]:
    return dict(zip(KEYS[change.store], change.key, strict=True))


def _plain_own_row(conversation_id: str, change: Change) -> bool:
    """A change that only sets or adds to plain fields of the conversation row itself."""
    return (
        change.store == "conversations" and change.create is None and str(change.key[0]) == conversation_id
        and not change.append and not change.discard and all("." not in name for name in change.incr)
    )


def _update_own_row(conversation_id: str, updates: dict[str, Any]) -> None:
    if Conversation.objects.filter(id=conversation_id).update(**updates) != 1:
        raise ValueError(f"conversations ({conversation_id},) does not exist")
    updates.clear()


class _JsonbAppend(Func):
    """`list || [item]` in PostgreSQL: appends to a JSON list without reading it first."""

    arg_joiner = " || "
    template = "%(expressions)s"
    output_field = models.JSONField()


def _apply(conversation_id: str, change: Change) -> None:
    model = MODELS[change.store]
    if change.create is not None:
        values = {name: _db_value(model, name, v) for name, v in change.create.items()}
        if change.store != "conversations":
            values["conversation_id"] = conversation_id
        row = model(**values)
        row.save(force_insert=True)
        return
    query = model.objects.filter(**_key_filter(change))
    plain_incr = all("." not in name for name in change.incr)
    in_sql = not change.append or (
        connection.vendor == "postgresql" and not change.append.keys() & {*change.set, *change.incr}
    )
    if plain_incr and not change.discard and in_sql:
        updates = {name: _db_value(model, name, v) for name, v in change.set.items()}
        updates.update({name: F(name) + n for name, n in change.incr.items()})
        updates.update({name: _JsonbAppend(F(name), Value([item], output_field=models.JSONField()))
                        for name, item in change.append.items()})
        if query.update(**updates) != 1:
            raise ValueError(f"{change.store} {change.key} does not exist")
        return
    names = [*change.set, *{n.split(".")[0] for n in change.incr}, *change.append, *change.discard]
    current = query.values(*names).get()
    after = apply_change(current, change)
    query.update(**{name: _db_value(model, name, after[name]) for name in names})


def read(conversation_id: str, *, after_seq: int = 0, turn_id: str | None = None) -> list[Recorded]:
    """
    Return a conversation's entries after `after_seq`, in order.

    :raises ValueError: an entry's payload is unreadable (see `conversation repair`)
    """
    query = Event.objects.filter(conversation_id=conversation_id, seq__gt=after_seq)
    if turn_id is not None:
        query = query.filter(turn_id=turn_id)
    out = []
    for seq, kind, tid, actor, created_at, payload in query.order_by("seq").values_list(
        "seq", "kind", "turn_id", "actor", "created_at", "payload"
    ):
        try:
            body = json.loads(payload)
        except ValueError as exc:
            raise ValueError(f"entry {seq} of conv-{conversation_id} is unreadable") from exc
        out.append(Recorded(seq=seq, kind=kind, turn_id=tid, actor=actor, created_at=iso(created_at), payload=body))
    return out
