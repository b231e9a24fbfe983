"""
The store changes of an append, compiled into SQL.

The projection says what an append's entries change in the stores (`projection.Change`); this
module writes those changes as plain SQL statements, not through the ORM: a turn appends a dozen
times, and building ORM queries cost more CPU than PostgreSQL spent committing them. The
statements of one append are gathered (`Writes`), a row's changes merged into one statement where
the result is the same (`Gathered`), and sent together (`Writes.run`, `sql.together`). How a JSON
column is changed differs by database: `dialects`.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any

from django.db import models
from django.utils import timezone

from apps.ledger import dialects, sql
from apps.ledger.models import Event
from apps.ledger.projection import Change, projector


def partition_model() -> type[models.Model]:
    """The model whose row is a partition: it holds the log head, and every entry hangs on it."""
    return Event._meta.get_field("conversation").related_model


@cache
def head_store() -> str:
    """The store name of the partition's own row (its projection is updated with the head)."""
    return projector.store_of(partition_model())


# What an update adds to its WHERE clause, its values, and what to raise unless it then updates exactly one row.
Guard = tuple[str, list[Any], Exception]


class Gathered:
    """
    The changes of one append, those of one row merged into one statement where the result is the same.

    An append's entries often change one row twice: a tool call's row is inserted as it starts and
    updated as it finishes, and a run's row takes the progress of both. Changes of a row merge while
    they touch different columns or do the same to one (set: the later value; incr: the sum; append:
    the items in order); otherwise every change gathered so far is written first, in the order they
    came. Statements on different rows never read each other's, so a merged change may go ahead
    of those that came between. The conversation's own row goes last, on its head update.
    """

    def __init__(self, writes: Writes):
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

    def close(self, head: Change, *, guard: Guard | None) -> None:
        """Write the rest, the conversation's row with the new `head` (with `guard`: only where it holds)."""
        mine = self.pending.get(self.own)
        last = head if mine is None else _merged(mine, head)
        if last is None:
            self.flush(own=True)
            last = head
        else:
            self.pending.pop(self.own, None)
            self.flush(own=False)
        self.writes.change(last, guard=guard)


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


class Writes:
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

    def change(self, change: Change, *, guard: Guard | None = None) -> None:
        table = sql.table(projector.models[change.store])
        if change.create is not None:
            self._insert(table, change)
            return
        overlap = {*change.append, *change.discard} & {*change.set, *(n.split(".")[0] for n in change.incr)}
        if overlap or change.append.keys() & change.discard.keys():
            raise ValueError(f"a change of {change.store} both sets and adds to or removes from {sorted(overlap)}")
        dialect = dialects.POSTGRESQL if self.pg else dialects.SQLITE
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
                value = db_value(field, values[attname])
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
        names = projector.keys[change.store]
        return (
            " AND ".join(f"{table.column(n)} = %s" for n in names),
            [table.value(n, v, self.db) for n, v in zip(names, change.key, strict=True)],
        )

    def run(self, *, commit: bool = False) -> None:
        """
        Send the statements gathered so far (`commit`: as one implicit transaction, see `store.commit_optimistic`).

        :raises ValueError: an update found no row (or what its guard says to raise)
        """
        statements, self.statements = self.statements, []
        if commit:
            sql.committed_together(self.db, statements)
            return
        if not statements:
            return
        if self.pg and len(statements) > 1:
            counts = sql.together(self.db, statements)
        else:
            counts = []
            with self.db.cursor() as cursor:
                for text, params, _ in statements:
                    cursor.execute(text, params)
                    counts.append(cursor.rowcount)
        for (_, _, missing), count in zip(statements, counts, strict=True):
            if missing is not None and count != 1:
                raise missing


def _json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def db_value(field: models.Field, value: Any) -> Any:
    """`value` as a model instance holds it for `field`: a time given in its text form parsed."""
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


def apply(conversation_id: str, change: Change) -> None:
    """Write one store change now (the stores' rebuild in `conversation repair`)."""
    writes = Writes(str(conversation_id))
    writes.change(change)
    writes.run()
