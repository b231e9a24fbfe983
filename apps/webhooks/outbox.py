"""
The outbox: the deliveries an append's entries cause, written in the append's own transaction.

`announce` is registered with the log's projector; for each entry that announces an event it
adds one INSERT … SELECT that writes a delivery for every enabled endpoint subscribed to the
type. The statement rides in the append's round trip, so a write that rolls back sends nothing
and one that commits has its deliveries, whatever happens to the process after.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.urls import reverse

from apps.conversations import tokens
from apps.conversations.models import Conversation
from apps.conversations.queries import CONTROL_FIELDS, control
from apps.ledger import sql, store
from apps.ledger.projection import projector
from apps.ledger.types import Recorded
from apps.webhooks import delivery
from apps.webhooks.events import MESSAGES, announced, changes_control, message_created
from apps.webhooks.models import WebhookDelivery, WebhookEndpoint


def announce(conversation_id: str, recorded: list[Recorded]) -> list[tuple[str, list[Any]]]:
    statements = []
    controls = _controls(conversation_id, recorded)
    assistant = _assistant(conversation_id, recorded)
    for rec in recorded:
        found = announced(rec.kind, rec.turn_id, rec.payload, controls.get(rec.seq))
        if found is not None:
            type_, data = found
            if data.get("approver") == "staff":
                data["approve_url"] = approve_url(conversation_id, rec)
            statements.append(_insert(conversation_id, rec, type_, data))
        message = message_created(rec.kind, rec.turn_id, rec.payload, assistant)
        if message is not None:
            statements.append(_insert(conversation_id, rec, "message.created", message, also="message_"))
    if statements and connection.vendor != "postgresql":
        # PostgreSQL wakes every process's dispatcher itself (a trigger's NOTIFY at commit); the
        # embedded default is one process, woken here once the append commits.
        transaction.on_commit(delivery.wake)
    return statements


def approve_url(conversation_id: str, rec: Recorded) -> str:
    """The signed link of a staff approval, which opens its card for a logged-in staff member; valid until it expires (or a day)."""
    expires_at = datetime.fromisoformat(rec.payload["expires_at"]) if rec.payload.get("expires_at") else None
    token = tokens.approve_link(conversation_id=conversation_id, run_id=rec.payload["run_id"], call_id=rec.payload["call_id"],
                                expires_at=expires_at, now=datetime.fromisoformat(rec.created_at))
    return settings.WAYPOINT_PUBLIC_URL + reverse("staff:approve_link", args=[token])


def _assistant(conversation_id: str, recorded: list[Recorded]) -> dict[str, str]:
    """The conversation's assistant as a message's author (as the state names it), read only when an entry of the append is its message."""
    author = {"kind": "assistant", "id": "", "name": ""}
    if any(MESSAGES.get(rec.kind, ("", "", ""))[2] == "assistant" for rec in recorded):
        row = Conversation.objects.filter(id=conversation_id).values_list("assistant_id", "assistant__name").first()
        if row is not None:
            author.update(id=f"assistant:{row[0]}", name=row[1])
    return author


def _controls(conversation_id: str, recorded: list[Recorded]) -> dict[int, dict[str, Any]]:
    """
    The state's `control` right after each entry that changes it, by seq.

    Not rebuilt from the entry alone: a take-over keeps the request's time and reason, which only
    the row knows. So the row as it stands before this append (locked by the writer, or checked by
    its head) takes the append's own changes to it, as the projection writes them.
    """
    if not any(changes_control(rec.kind) for rec in recorded):
        return {}
    row = Conversation.objects.filter(id=conversation_id).values(*CONTROL_FIELDS).first()
    if row is None:
        return {}
    mine, controls = (store.head_store(), (conversation_id,)), {}
    for rec in recorded:
        for change in projector.changes(conversation_id, rec):
            if (change.store, tuple(str(part) for part in change.key)) == mine:
                row.update((name, value) for name, value in change.set.items() if name in row)
        if changes_control(rec.kind):
            controls[rec.seq] = control(row)
    return controls


def _insert(conversation_id: str, rec: Recorded, type_: str, data: dict[str, Any], *, also: str = "") -> tuple[str, list[Any]]:
    """`also`: for an event an entry announces besides its own (`message.created`), what sets its webhook-id apart."""
    d, e, c = sql.table(WebhookDelivery), sql.table(WebhookEndpoint), sql.table(Conversation)
    at = datetime.fromisoformat(rec.created_at)
    # One webhook-id per entry, event and endpoint, the same however often it is sent.
    prefix = f"msg_{conversation_id.replace('-', '')}_{rec.seq}_{also}"
    columns = ", ".join(d.column(n) for n in (
        "webhook_id", "endpoint", "type", "conversation_id", "assistant", "seq", "timestamp", "data",
        "status", "attempts", "last_response", "history", "next_attempt_at", "created_at",
    ))
    text = (
        f"INSERT INTO {d.name} ({columns})"
        f" SELECT %s || CAST({e.name}.{e.column('id')} AS TEXT), {e.name}.{e.column('id')}, %s, %s,"
        f" (SELECT CAST({c.column('assistant')} AS TEXT) FROM {c.name} WHERE {c.column('id')} = %s),"
        f" %s, %s, %s, 'pending', 0, '', '[]', %s, %s FROM {e.name}"
        f" WHERE {e.column('enabled')} AND {e.column('deleted_at')} IS NULL"
        f" AND ({e.column('events')} = '' OR {e.column('events')} LIKE %s)"
    )
    params = [
        prefix, type_, conversation_id, c.value("id", conversation_id), rec.seq, rec.created_at,
        json.dumps(data, ensure_ascii=False), d.value("next_attempt_at", at), d.value("created_at", at), f"%,{type_},%",
    ]
    return text, params
