"""
Appending to and reading a conversation's log.

`append` is the only way entries are written. In one transaction it chains and signs the new
entries, writes them, applies the store changes the registered projections say they imply
(`projection.projector`) and moves the log head. Telling clients is the caller's: the actions
schedule the broadcast of the head they committed.

The log knows no app: the row that holds a partition's head is the one `Event.conversation`
points at, and the table of the writer's lease is named by the app that owns it (`fence_with`).

The write is plain SQL compiled from the projection's changes, not the ORM: a turn appends a dozen
times, and building ORM queries cost more CPU than PostgreSQL spent committing them. On
PostgreSQL the statements of one append travel in one round trip, as one query text.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any

import rfc8785
from django.db import DatabaseError, IntegrityError, connection, models, transaction
from django.utils import timezone

from apps.ledger import chain, sql
from apps.ledger.keys import signing_key
from apps.ledger.models import Event
from apps.ledger.projection import Change, projector
from apps.ledger.types import EventKind, Recorded

# The registered stores' models and key fields, by store name (filled by the apps' ready()).
MODELS: dict[str, type[models.Model]] = projector.models
KEYS: dict[str, tuple[str, ...]] = projector.keys


def partition_model() -> type[models.Model]:
    """The model whose row is a partition: it holds the log head, and every entry hangs on it."""
    return Event._meta.get_field("conversation").related_model


@cache
def head_store() -> str:
    """The store name of the partition's own row (its projection is updated with the head)."""
    return projector.store_of(partition_model())


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
    writes = _Writes(cid)
    writes.events(rows, now)
    gathered = _Gathered(writes)
    for rec in recorded:
        for change in projector.changes(cid, rec):
            gathered.add(change)
    gathered.close(Change(writes.head, (cid,), set={"head_seq": seq, "head_hash": prev}),
                   moved_from=head if fence else None, fence=fence)
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


# --- compiled writes -------------------------------------------------------------------------------


class _Gathered:
    """
    The changes of one append, those of one row merged into one statement where the result is the same.

    An append's entries often change one row twice: a tool call's row is inserted as it starts and
    updated as it finishes, and a run's row takes the progress of both. Changes of a row merge while
    they touch different columns or do the same to one (set: the later value; incr: the sum; append:
    the items in order); otherwise every change gathered so far is written first, in the order they
    came. Statements on different rows never read each other's, so a merged change may go ahead
    of those that came between. The conversation's own row goes last, on its head update.
    """

    def __init__(self, writes: _Writes):
        self.writes = writes
        self.own = (writes.head, (writes.cid,))
        self.pending: dict[tuple[str, tuple], Change] = {}

    def add(self, change: Change) -> None:
        key = (change.store, tuple(str(part) for part in change.key))
        if key == self.own and change.create is not None:
            # The conversation's row made by this append: written in its place, before the rows that refer to it.
            self.flush(own=True)
            self.writes.change(change)
            return
        earlier = self.pending.get(key)
        merged = change if earlier is None else _merged(earlier, change)
        if merged is None:
            self.flush(own=key == self.own)
            merged = change
        self.pending[key] = merged

    def flush(self, *, own: bool) -> None:
        """Write what is gathered (`own`: the conversation's row too, last)."""
        mine = self.pending.pop(self.own, None)
        for change in self.pending.values():
            self.writes.change(change)
        self.pending = {}
        if mine is not None:
            if own:
                self.writes.change(mine)
            else:
                self.pending[self.own] = mine

    def close(self, head: Change, *, moved_from: tuple[int, str] | None, fence: tuple[str, int] | None) -> None:
        """Write the rest, the conversation's row with the new `head` (with `moved_from`: only if its head is still that)."""
        mine = self.pending.get(self.own)
        last = head if mine is None else _merged(mine, head)
        if last is None:
            self.flush(own=True)
            last = head
        else:
            self.pending.pop(self.own, None)
            self.flush(own=False)
        self.writes.update_own_row(last, moved_from=moved_from, fence=fence)


def _merged(earlier: Change, later: Change) -> Change | None:
    """One change doing what `earlier` then `later` do to the same row, or None when they do not merge."""
    if later.create is not None:
        return None
    if earlier.create is not None:
        if later.incr or later.append or later.discard:
            return None
        return Change(earlier.store, earlier.key, create={**earlier.create, **later.set})
    if earlier.discard or later.discard:
        return None

    def columns(change: Change) -> dict[str, str]:
        found = {name: "set" for name in change.set}
        found.update((name.split(".", 1)[0], "incr." if "." in name else "incr") for name in change.incr)
        found.update((name, "append") for name in change.append)
        return found

    mine, theirs = columns(earlier), columns(later)
    if any(mine[name] != theirs[name] for name in mine.keys() & theirs.keys()):
        return None
    return Change(
        earlier.store, earlier.key,
        set={**earlier.set, **later.set},
        incr={name: earlier.incr.get(name, 0) + later.incr.get(name, 0) for name in {**earlier.incr, **later.incr}},
        append={name: _Items([*_items(earlier.append, name), *_items(later.append, name)])
                for name in {**earlier.append, **later.append}},
    )


class _Items(list):
    """The items of appends to one JSON list that were merged: appended in order by one assignment."""


def _items(append: dict[str, Any], name: str) -> list:
    if name not in append:
        return []
    item = append[name]
    return list(item) if isinstance(item, _Items) else [item]


class _Writes:
    """The statements of one append, run together at the end and checked row by row."""

    def __init__(self, conversation_id: str):
        self.cid = conversation_id
        self.head = head_store()
        self.db = sql.database()
        self.pg = self.db.vendor == "postgresql"
        # sql, params, and what to raise unless it updates exactly one row (None: no check)
        self.statements: list[tuple[str, list[Any], Exception | None]] = []

    def events(self, rows: list[tuple], now: datetime) -> None:
        table = sql.table(Event)
        cid, at = table.value("conversation_id", self.cid, self.db), table.value("created_at", now, self.db)
        columns = "conversation_id, seq, kind, turn_id, payload, actor, created_at, hash, prev_hash, signature, key_id"
        values = ", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(rows))
        params = [v for seq, kind, tid, text, actor, digest, prev, sig, kid in rows
                  for v in (cid, seq, kind, tid, text, actor, at, digest, prev, sig, kid)]
        self.statements.append((f"INSERT INTO {table.name} ({columns}) VALUES {values}", params, None))

    def update_own_row(
        self, own: Change, *, moved_from: tuple[int, str] | None = None, fence: tuple[str, int] | None = None
    ) -> None:
        """Update the conversation row; with `moved_from`, only if its head is still that and `fence` holds."""
        guard: tuple[str, list[Any], Exception] | None = None
        if moved_from is not None and fence is not None:
            lease_table = sql.table(lease_model())
            guard = (
                f" AND head_seq = %s AND head_hash = %s AND EXISTS (SELECT 1 FROM {lease_table.name}"
                " WHERE conversation_id = %s AND holder = %s AND version = %s)",
                [*moved_from, lease_table.value("conversation_id", self.cid, self.db), *fence],
                HeadMoved(self.cid),
            )
        self.change(own, guard=guard)

    def change(self, change: Change, *, guard: tuple[str, list[Any], Exception] | None = None) -> None:
        table = sql.table(MODELS[change.store])
        if change.create is not None:
            self._insert(table, change)
            return
        overlap = {*change.append, *change.discard} & {*change.set, *(n.split(".")[0] for n in change.incr)}
        if overlap or change.append.keys() & change.discard.keys():
            raise ValueError(f"a change of {change.store} both sets and adds to or removes from {sorted(overlap)}")
        dialect = _PG_JSON if self.pg else _SQLITE_JSON
        assignments: list[str] = []
        params: list[Any] = []
        for name, value in change.set.items():
            assignments.append(f"{table.column(name)} = %s")
            params.append(table.value(name, value, self.db))
        nested: dict[str, tuple[str, list[Any]]] = {}  # a JSON column's counters, one assignment each
        for name, n in change.incr.items():
            if "." in name:
                outer, inner = name.split(".", 1)
                column = table.column(outer)
                expression, values = nested.get(outer, (column, []))
                nested[outer] = (dialect["incr"].format(expression=expression, column=column), [*values, inner, inner, n])
            else:
                assignments.append(f"{table.column(name)} = {table.column(name)} + %s")
                params.append(n)
        for outer, (expression, values) in nested.items():
            assignments.append(f"{table.column(outer)} = {expression}")
            params += values
        for name in change.append:
            items = _items(change.append, name)
            if self.pg:
                assignments.append(f"{table.column(name)} = {dialect['append'].format(column=table.column(name))}")
                params.append(table.value(name, items, self.db))
            else:
                pairs = ", ".join(["'$[#]', json(%s)"] * len(items))
                assignments.append(f"{table.column(name)} = {dialect['append'].format(column=table.column(name), items=pairs)}")
                params += [_json_text(one) for one in items]
        for name, item in change.discard.items():
            assignments.append(f"{table.column(name)} = {dialect['discard'].format(column=table.column(name))}")
            params.append(_json_text(item))
        where, key_params = self._where(table, change)
        missing: Exception = ValueError(f"{change.store} {change.key} does not exist")
        if guard is not None:
            where, key_params, missing = where + guard[0], key_params + guard[1], guard[2]
        self.statements.append((f"UPDATE {table.name} SET {', '.join(assignments)} WHERE {where}", params + key_params, missing))

    def _insert(self, table: sql.Table, change: Change) -> None:
        # What saving a new model instance would write, without making one: the given values, each
        # field's default for the others, the time for auto_now fields (a turn inserts a dozen rows).
        values = {table.fields[name].attname: v for name, v in change.create.items()}
        if change.store != self.head:
            values["conversation_id"] = self.cid
        names, params = [], []
        for field, attname, automatic, stamped in _insert_fields(table.model):
            if attname in values:
                value = _db_value(field, values[attname])
            elif automatic:
                continue
            else:
                value = field.get_default()
            if stamped:
                value = timezone.now()
            names.append(attname)
            params.append(field.get_db_prep_save(value, self.db))
        self.statements.append((_insert_text(table.model, tuple(names)), params, None))

    def _where(self, table: sql.Table, change: Change) -> tuple[str, list[Any]]:
        names = KEYS[change.store]
        return (
            " AND ".join(f"{table.column(n)} = %s" for n in names),
            [table.value(n, v, self.db) for n, v in zip(names, change.key, strict=True)],
        )

    def run(self, *, commit: bool = False) -> None:
        """
        Send the statements gathered so far (`commit`: as one implicit transaction, see `commit_optimistic`).

        :raises ValueError, HeadMoved: an update found no row
        """
        statements, self.statements = self.statements, []
        if commit:
            _committed_together(self.db, statements)
            return
        if not statements:
            return
        if self.pg and len(statements) > 1:
            counts = _together(self.db, statements)
        else:
            counts = []
            with self.db.cursor() as cursor:
                for sql, params, _ in statements:
                    cursor.execute(sql, params)
                    counts.append(cursor.rowcount)
        for (_, _, missing), count in zip(statements, counts, strict=True):
            if missing is not None and count != 1:
                raise missing


def _together(db, statements: list[tuple[str, list[Any], Exception | None]]) -> list[int]:
    """
    Run statements in one round trip to PostgreSQL; return each one's row count.

    One query text of several statements: Django's cursor binds parameters on the client, so
    PostgreSQL takes them as one message and answers each with its own result. (psycopg's
    pipeline mode does the same with more Python work per statement: measured slower here.)
    Each statement is bound on its own (`mogrify`): psycopg keeps the parse of a short query text
    with few parameters, while the joined text, longer and different every step, was parsed anew
    each time.
    """
    with db.cursor() as cursor:
        cursor.execute(sql.STATEMENT_SEPARATOR.join(cursor.mogrify(text, params) for text, params, _ in statements))
        counts = [cursor.rowcount]
        while cursor.nextset():
            counts.append(cursor.rowcount)
    return counts


# The failure `ledger_one_row` raises names the statement whose update did not find its one row.
_NOT_ONE_ROW = "ledger: statement {} changed no row"


def _committed_together(db, statements: list[tuple[str, list[Any], Exception | None]]) -> None:
    """
    Run statements in one round trip as one implicit transaction of PostgreSQL, outside `atomic()`.

    A query text of several statements is one transaction unless it says otherwise: it commits
    when its last statement ends, and an error in any of them rolls all of them back. So an update
    that must change one row asks the server to check it (`ledger_one_row`, migration 0003).
    """
    texts = []
    with db.cursor() as cursor:
        for i, (text, params, missing) in enumerate(statements):
            if missing is not None:
                text = f"WITH changed AS ({text} RETURNING 1) SELECT ledger_one_row((SELECT COUNT(*) FROM changed), %s)"
                params = [*params, _NOT_ONE_ROW.format(i)]
            texts.append(cursor.mogrify(text, params))
        try:
            cursor.execute(sql.STATEMENT_SEPARATOR.join(texts))
        except DatabaseError as exc:
            failed = getattr(getattr(exc.__cause__, "diag", None), "message_primary", None) or ""
            for i, (_, _, missing) in enumerate(statements):
                if missing is not None and failed == _NOT_ONE_ROW.format(i):
                    raise missing from None
            raise


# How a JSON column's counter, list append and list removal are written in SQL, per backend: every
# change of a store is one UPDATE, never a read, an edit in Python and a write.
_PG_JSON = {
    "incr": "jsonb_set({expression}, ARRAY[%s], to_jsonb(COALESCE(({column} ->> %s)::bigint, 0) + %s))",
    "append": "{column} || %s",
    "discard": (
        "COALESCE((SELECT jsonb_agg(e.item ORDER BY e.n) FROM jsonb_array_elements({column}) WITH ORDINALITY"
        " AS e(item, n) WHERE e.item <> %s::jsonb), '[]'::jsonb)"
    ),
}
_SQLITE_JSON = {
    "incr": "json_set({expression}, '$.\"' || %s || '\"', COALESCE(json_extract({column}, '$.\"' || %s || '\"'), 0) + %s)",
    "append": "json_insert({column}, {items})",
    "discard": (
        "(SELECT json_group_array(json(e.item)) FROM (SELECT CASE WHEN j.type IN ('object', 'array') THEN j.value"
        " ELSE json_quote(j.value) END AS item FROM json_each({column}) AS j ORDER BY j.key) AS e WHERE e.item <> json(%s))"
    ),
}


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _db_value(field: models.Field, value: Any) -> Any:
    if isinstance(field, models.DateTimeField) and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value


@cache
def _insert_fields(model: type[models.Model]) -> list[tuple[models.Field, str, bool, bool]]:
    """Each column an insert may write: the field, its attname, whether the database numbers it, whether it is the time of saving."""
    return [
        (field, field.attname, isinstance(field, models.AutoField | models.BigAutoField),
         bool(getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)))
        for field in model._meta.concrete_fields
    ]


@cache
def _insert_text(model: type[models.Model], names: tuple[str, ...]) -> str:
    """The INSERT of one row into the fields `names` (attnames): one text per table and set of fields."""
    table = sql.table(model)
    return f"INSERT INTO {table.name} ({', '.join(table.column(n) for n in names)}) VALUES ({', '.join(['%s'] * len(names))})"


def _apply(conversation_id: str, change: Change) -> None:
    """Write one store change now (the stores' rebuild in `conversation repair`)."""
    writes = _Writes(str(conversation_id))
    writes.change(change)
    writes.run()


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
