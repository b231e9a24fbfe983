"""
Appending to and reading a conversation's log.

`append` is the only way entries are written. In one transaction it chains and signs the new
entries, writes them, applies the store changes the registered projections say they imply
(`projection.projector`) and moves the log head. Telling clients is the caller's: the actions
schedule the broadcast of the head they committed.

The log knows no app: the row that holds a partition's head is the one `Event.conversation`
points at, and the table of the writer's lease is named by the app that owns it (`fence_with`).

The write is plain SQL compiled from the projection's changes (`compiler`), not the ORM. On
PostgreSQL the statements of one append travel in one round trip, as one query text (`sql.together`).
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache

import rfc8785
from django.db import IntegrityError, connection, models, transaction

from apps.ledger import chain, compiler, sql
from apps.ledger.compiler import head_store, partition_model
from apps.ledger.keys import signing_key
from apps.ledger.models import Event
from apps.ledger.projection import Change, projector
from apps.ledger.types import EventKind, Recorded

# The registered stores' models and key fields, by store name (filled by the apps' ready()).
MODELS: dict[str, type[models.Model]] = projector.models
KEYS: dict[str, tuple[str, ...]] = projector.keys


_fence: list[type[models.Model]] = []


def fence_with(lease: type[models.Model]) -> None:
    """
    Name the table of the single-writer lease that optimistic appends are fenced by.

    Its rows have `conversation_id`, `holder` and `version` (the app that owns leases calls this
    from its `ready()`).
    """
    _fence[:] = [lease]


def lease_model() -> type[models.Model]:
    return _fence[0]


class LeaseLost(Exception):
    """The writer's lease was taken over; it must stop writing."""

    code = "lease_lost"


class HeadMoved(Exception):
    """
    The log moved past the head an optimistic append assumed, or the lease no longer holds.

    The transaction must be rolled back; `append_optimistic` with no head then says which.
    """


def iso(moment: datetime) -> str:
    """The one text form of a time in the log and the projection."""
    return moment.isoformat(timespec="microseconds")


def append(
    conversation: models.Model,
    events: list[EventKind],
    *,
    turn_id: str = "",
    actor: str = "",
    now: datetime,
    lease: tuple[str, int] | None = None,
) -> list[Recorded]:
    """
    Append entries on a conversation the caller has locked, and apply what they imply to the stores.

    For actions. Must run inside `transaction.atomic()`. `conversation` is the partition row, locked
    in this transaction (`conversations.actions.locked`), whose `head_seq`/`head_hash` are the head
    the entries chain on; a conversation being created is its unsaved row (head 0, GENESIS). Its
    head is moved on in place. With `lease` (holder, version) the append also checks that this
    writer's lease still holds.
    :raises LeaseLost: `lease` no longer holds the conversation
    """
    _in_transaction()
    cid = str(conversation.pk)
    head = (conversation.head_seq, conversation.head_hash)
    if lease is not None:
        _lock_head(cid, lease, head)
    recorded, (conversation.head_seq, conversation.head_hash) = _write(cid, events, turn_id=turn_id, actor=actor, now=now, head=head)
    return recorded


def append_optimistic(
    head: tuple[int, str] | None,
    lease: tuple[str, int],
    *,
    conversation_id: str,
    events: list[EventKind],
    turn_id: str,
    actor: str,
    now: datetime,
) -> tuple[list[Recorded], tuple[int, str]]:
    """
    Append on the head this writer itself wrote last, without locking the row first.

    For the runner, the single writer of a running turn, which usually knows the head: it wrote it.
    Its append then goes to PostgreSQL in one round trip, the head update checking that head and
    the lease (holder, version). Returns the entries and the new head. With `head` None the row is
    locked and read first.
    :raises HeadMoved: another entry came first or the lease is gone; roll back and try with None
    :raises LeaseLost: (`head` None) the lease no longer holds
    """
    _in_transaction()
    cid = str(conversation_id)
    if head is None:
        return _write(cid, events, turn_id=turn_id, actor=actor, now=now, head=_lock_head(cid, lease, None))
    return _write(cid, events, turn_id=turn_id, actor=actor, now=now, head=head, fence=lease)


def commit_optimistic(
    head: tuple[int, str],
    lease: tuple[str, int],
    *,
    conversation_id: str,
    events: list[EventKind],
    turn_id: str,
    actor: str,
    now: datetime,
    then: list[tuple[sql.Statement, tuple]] = (),
) -> tuple[list[Recorded], tuple[int, str]]:
    """
    `append_optimistic` on a known head and commit it, with the statements of `then` after it.

    For the runner's steps after its first. On PostgreSQL, outside any transaction, the append and
    `then` go as one query text, which the server runs as one implicit transaction: one round trip
    for the step where BEGIN, the statements and COMMIT took three. The checks that an update found
    its row (the head still there, the lease held) then fail that transaction in the server
    (`ledger_one_row`). Elsewhere, or inside a transaction, the same in `transaction.atomic()`.
    Returns the entries and the new head.
    :raises HeadMoved: another entry came first or the lease is gone; try `append_optimistic` with None
    """
    db = sql.database()
    if db.vendor != "postgresql" or db.in_atomic_block or not db.get_autocommit():
        with transaction.atomic():
            written = append_optimistic(head, lease, conversation_id=conversation_id, events=events, turn_id=turn_id,
                                        actor=actor, now=now)
            for statement, values in then:
                statement.execute(*values)
        return written
    return _write(str(conversation_id), events, turn_id=turn_id, actor=actor, now=now, head=head, fence=lease,
                  then=then, commit=True)


def _in_transaction() -> None:
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("append must run inside a transaction")


def _write(
    cid: str, events: list[EventKind], *, turn_id: str, actor: str, now: datetime, head: tuple[int, str],
    fence: tuple[str, int] | None = None, then: list[tuple[sql.Statement, tuple]] = (), commit: bool = False,
) -> tuple[list[Recorded], tuple[int, str]]:
    seq, prev = head
    key = signing_key()
    created_at = iso(now)
    partition = f"conv-{cid}"
    rows: list[tuple] = []
    recorded: list[Recorded] = []
    for body in events:
        seq += 1
        text = rfc8785.dumps(body.payload()).decode("utf-8")
        payload = json.loads(text)
        canonical = chain.canonical_from_text(
            partition=partition, seq=seq, kind=body.kind, turn_id=turn_id, payload_text=text, actor=actor, created_at=created_at
        )
        digest = chain.entry_hash(prev, canonical)
        rows.append((seq, body.kind, turn_id, text, actor, digest, prev, key.sign(digest), key.key_id))
        recorded.append(Recorded(seq=seq, kind=body.kind, turn_id=turn_id, actor=actor, created_at=created_at, payload=payload))
        prev = digest
    writes = compiler.Writes(cid)
    writes.events(rows, now)
    gathered = compiler.Gathered(writes)
    for rec in recorded:
        for change in projector.changes(cid, rec):
            gathered.add(change)
    gathered.close(Change(head_store(), (cid,), set={"head_seq": seq, "head_hash": prev}),
                   guard=_unmoved(writes, head, fence) if fence else None)
    for announcer in projector.announcers:
        writes.statements += [(text, params, None) for text, params in announcer(cid, recorded)]
    writes.statements += [(statement.text, statement._values(values, writes.db), None) for statement, values in then]
    try:
        writes.run(commit=commit)
    except IntegrityError:
        if fence is None:
            raise
        raise HeadMoved(cid) from None  # an entry took the seq this one assumed
    return recorded, (seq, prev)


def _unmoved(writes: compiler.Writes, head: tuple[int, str], fence: tuple[str, int]) -> compiler.Guard:
    """What the head update of an optimistic append checks: the head is still `head` and the lease `fence` holds."""
    lease_table = sql.table(lease_model())
    return (
        f" AND head_seq = %s AND head_hash = %s AND EXISTS (SELECT 1 FROM {lease_table.name}"
        " WHERE conversation_id = %s AND holder = %s AND version = %s)",
        [*head, lease_table.value("conversation_id", writes.cid, writes.db), *fence],
        HeadMoved(writes.cid),
    )


@cache
def _lock_head_statement(fenced: bool) -> sql.Statement:
    """The head read under the row lock, with the writer's lease checked in the same statement."""
    lock = "FOR NO KEY UPDATE" if connection.features.has_select_for_no_key_update else ""
    holds = (
        "(SELECT COUNT(*) FROM {leases} WHERE {leases.conversation} = %s AND {leases.holder} = %s AND {leases.version} = %s)"
        if fenced else "1"
    )
    key = partition_model()._meta.pk.name
    return sql.Statement(
        f"SELECT {{heads.head_seq}}, {{heads.head_hash}}, {holds} FROM {{heads}} WHERE {{heads.{key}}} = %s {lock}",
        tables={"heads": partition_model(), "leases": lease_model()},
        params=(*(("leases.conversation", "leases.holder", "leases.version") if fenced else ()), f"heads.{key}"),
        returns=("heads.head_seq", "heads.head_hash", ""),
    )


def _lock_head(cid: str, lease: tuple[str, int] | None, known: tuple[int, str] | None) -> tuple[int, str]:
    """Lock the conversation row, read its head and check the writer's lease, in one statement."""
    found = _lock_head_statement(lease is not None).rows(*((cid, *lease) if lease is not None else ()), cid)
    if not found:
        raise ValueError(f"conversations ({cid},) does not exist")
    [(head_seq, head_hash, fenced)] = found
    if not fenced:
        raise LeaseLost(cid)
    return known if known is not None else (head_seq, head_hash)


def _read_statement(by_turn: bool) -> sql.Statement:
    return sql.Statement(
        f"""
        SELECT {{events.seq}}, {{events.kind}}, {{events.turn_id}}, {{events.actor}}, {{events.created_at}}, {{events.payload}}
        FROM {{events}}
        WHERE {{events.conversation}} = %s AND {{events.seq}} > %s {"AND {events.turn_id} = %s" if by_turn else ""}
        ORDER BY {{events.seq}}
        """,
        tables={"events": Event},
        params=("events.conversation", "events.seq", *(("events.turn_id",) if by_turn else ())),
        # The payload is the stored text, parsed here so that an unreadable one can be named.
        returns=("events.seq", "events.kind", "events.turn_id", "events.actor", "events.created_at", ""),
    )


# Every run reads its turn, and the entries since its summary of the earlier turns, at each start.
_READ = {False: _read_statement(False), True: _read_statement(True)}


def read(conversation_id: str, *, after_seq: int = 0, turn_id: str | None = None) -> list[Recorded]:
    """
    Return a conversation's entries after `after_seq`, in order.

    :raises ValueError: an entry's payload is unreadable (see `conversation repair`)
    """
    statement, values = reading(conversation_id, after_seq=after_seq, turn_id=turn_id)
    return entries(conversation_id, statement.rows(*values))


def reading(conversation_id: str, *, after_seq: int = 0, turn_id: str | None = None) -> tuple[sql.Statement, tuple]:
    """`read` as a statement and its values, for a caller that sends it with other reads (`sql.batch`); `entries` decodes its rows."""
    by_turn = turn_id is not None
    return _READ[by_turn], (conversation_id, after_seq, *((turn_id,) if by_turn else ()))


def entries(conversation_id: str, rows: list[tuple]) -> list[Recorded]:
    """
    The rows of a `reading` as entries.

    :raises ValueError: an entry's payload is unreadable (see `conversation repair`)
    """
    out = []
    for seq, kind, tid, actor, created_at, payload in rows:
        try:
            body = json.loads(payload)
        except ValueError as exc:
            raise ValueError(f"entry {seq} of conv-{conversation_id} is unreadable") from exc
        out.append(Recorded(seq=seq, kind=kind, turn_id=tid, actor=actor, created_at=iso(created_at), payload=body))
    return out
