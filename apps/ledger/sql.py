"""
Whole, named SQL statements for the paths every turn or poll takes.

Building an ORM query costs several times what PostgreSQL spends answering a small one
(bench/before-after.md), so the hot reads and writes are written as SQL: each one whole and
readable, named in the `statements.py` of the app that owns its tables. Tables and columns are
named by the models (psycopg `sql.Identifier`, quoted the same way for PostgreSQL and SQLite), and
parameters and results go through the model fields' own conversions, as the ORM would convert
them: `Statement` is the one way to write such a statement.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property, partial
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, models
from psycopg import sql as psql


def database():
    """
    This thread's database connection, looked up once.

    `django.db.connection` is a proxy that finds the thread's connection again on every attribute
    read (through asgiref's context-local storage): a turn's writes and reads passed it to a field
    conversion a few hundred times, once per value. Hot paths take the connection once per
    statement and hand it on.
    """
    return connections[DEFAULT_DB_ALIAS]


@dataclass(frozen=True)
class Table:
    """One model's table: its quoted name, and how each field is named and written."""

    model: type[models.Model]
    name: str
    fields: dict[str, models.Field]
    columns: dict[str, str]  # each field's column, quoted

    def column(self, name: str) -> str:
        return self.columns[name]

    def value(self, name: str, value: Any, db=None) -> Any:
        """`value` as the database `db` (this thread's) takes it for field `name` (a UUID on PostgreSQL, hex on SQLite, JSON adapted)."""
        return self.fields[name].get_db_prep_save(value, db or database())


@cache
def table(model: type[models.Model]) -> Table:
    fields = {f.name: f for f in model._meta.concrete_fields}
    fields.update({f.attname: f for f in model._meta.concrete_fields})
    quote = connection.ops.quote_name
    return Table(model, quote(model._meta.db_table), fields, {name: quote(f.column) for name, f in fields.items()})


class Statement:
    """
    One statement on the tables of `tables` (a short name for each model).

    In `text`, `{name}` is a table and `{name.field}` one of its columns (unqualified: write joins
    as subqueries); `%s` are the parameters, each named in `params` as `name.field`, whose value is
    converted by that field. `returns` names the field of each selected column, which converts it
    back as the ORM would (a datetime, a UUID, parsed JSON); "" takes a computed column as the
    database gives it.
    """

    def __init__(
        self, text: str, *, tables: dict[str, type[models.Model]], params: tuple[str, ...] = (), returns: tuple[str, ...] = ()
    ):
        self.template, self.tables, self.params, self.returns = text, tables, params, returns

    def _field(self, ref: str) -> models.Field:
        name, field = ref.split(".", 1)
        return table(self.tables[name]).fields[field]

    @cached_property
    def text(self) -> str:
        names: dict[str, psql.Composable] = {}
        for name, model in self.tables.items():
            names[name] = psql.Identifier(model._meta.db_table)
            for field in model._meta.concrete_fields:
                names[f"{name}.{field.name}"] = names[f"{name}.{field.attname}"] = psql.Identifier(field.column)
        return psql.SQL(self.template).format(**names).as_string(None)

    def _values(self, values: tuple[Any, ...], db) -> list[Any]:
        if len(values) != len(self.params):
            raise TypeError(f"the statement takes {len(self.params)} parameters, got {len(values)}")
        return [field.get_db_prep_save(v, db) for field, v in zip(self._params, values, strict=True)]

    @cached_property
    def _params(self) -> list[models.Field]:
        return [self._field(ref) for ref in self.params]

    def rows(self, *values: Any) -> list[tuple]:
        """Run it; return its rows, each column converted by its field."""
        db = database()
        with db.cursor() as cursor:
            cursor.execute(self.text, self._values(values, db))
            return self._converted(cursor.fetchall(), db)

    def _converted(self, found: list[tuple], db) -> list[tuple]:
        converters = self._converters
        return [tuple(convert(v, db) for convert, v in zip(converters, row, strict=True)) for row in found]

    def execute(self, *values: Any) -> int:
        """Run it; how many rows it changed."""
        db = database()
        with db.cursor() as cursor:
            cursor.execute(self.text, self._values(values, db))
            return cursor.rowcount

    @cached_property
    def _converters(self) -> list:
        out = []
        for ref in self.returns:
            if not ref:
                out.append(lambda v, db: v)
                continue
            field = self._field(ref)
            col = field.get_col(field.model._meta.db_table)  # a foreign key converts as the field it points at
            steps = [*connection.ops.get_db_converters(col), *col.get_db_converters(connection)]
            out.append(partial(_converted, steps=steps, col=col) if steps else lambda v, db: v)
        return out


def _converted(value: Any, db, *, steps: list, col: Any) -> Any:
    for step in steps:
        value = step(value, col, db)
    return value


# Between the statements of one query text, which PostgreSQL runs in turn, each with its own result.
STATEMENT_SEPARATOR = ";\n"


def batch(*reads: tuple[Statement, tuple[Any, ...]]) -> list[list[tuple]]:
    """
    Run several statements (each with its values) in one round trip; return each one's rows.

    On PostgreSQL they go as one query text, each bound on its own as `Statement.rows` binds it,
    and come back as one result each, in order; elsewhere they run one after the other. For reads
    that every push and page load makes together: each round trip costs a wait for the server and
    Python's cursor work, whatever the statement.
    """
    db = database()
    if db.vendor != "postgresql" or len(reads) < 2:
        return [statement.rows(*values) for statement, values in reads]
    out = []
    with db.cursor() as cursor:
        cursor.execute(STATEMENT_SEPARATOR.join(cursor.mogrify(statement.text, statement._values(values, db))
                                                for statement, values in reads))
        for statement, _ in reads:
            out.append(statement._converted(cursor.fetchall(), db))
            cursor.nextset()
    return out


def together(db, statements: list[tuple[str, list[Any], Exception | None]]) -> list[int]:
    """
    Run statements in one round trip to PostgreSQL; return each one's row count.

    One query text of several statements: Django's cursor binds parameters on the client, so
    PostgreSQL takes them as one message and answers each with its own result. (psycopg's
    pipeline mode does the same with more Python work per statement: measured slower here.)
    Each statement is bound on its own (`mogrify`): psycopg keeps the parse of a short query text
    with few parameters, while the joined text, longer and different every step, was parsed anew
    each time. The third item of each statement is left to the caller (`compiler.Writes.run`).
    """
    with db.cursor() as cursor:
        cursor.execute(STATEMENT_SEPARATOR.join(cursor.mogrify(text, params) for text, params, _ in statements))
        counts = [cursor.rowcount]
        while cursor.nextset():
            counts.append(cursor.rowcount)
    return counts


# The failure `ledger_one_row` raises names the statement whose update did not find its one row.
_NOT_ONE_ROW = "ledger: statement {} changed no row"


def committed_together(db, statements: list[tuple[str, list[Any], Exception | None]]) -> None:
    """
    Run statements in one round trip as one implicit transaction of PostgreSQL, outside `atomic()`.

    A query text of several statements is one transaction unless it says otherwise: it commits
    when its last statement ends, and an error in any of them rolls all of them back. So an update
    that must change one row asks the server to check it (`ledger_one_row`, migration 0003); a
    statement's third item is what to raise when it did not (None: no check).
    """
    texts = []
    with db.cursor() as cursor:
        for i, (text, params, missing) in enumerate(statements):
            if missing is not None:
                text = f"WITH changed AS ({text} RETURNING 1) SELECT ledger_one_row((SELECT COUNT(*) FROM changed), %s)"
                params = [*params, _NOT_ONE_ROW.format(i)]
            texts.append(cursor.mogrify(text, params))
        try:
            cursor.execute(STATEMENT_SEPARATOR.join(texts))
        except DatabaseError as exc:
            failed = getattr(getattr(exc.__cause__, "diag", None), "message_primary", None) or ""
            for i, (_, _, missing) in enumerate(statements):
                if missing is not None and failed == _NOT_ONE_ROW.format(i):
                    raise missing from None
            raise


def whole_row(alias: str, model: type[models.Model]) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    """
    Every column of `model`, for a `Statement` that names its table `alias`: the fields' names (in
    the order `Model.from_db` takes them), the select list and the `returns`.
    """
    names = tuple(field.attname for field in model._meta.concrete_fields)
    return names, ", ".join(f"{{{alias}.{name}}}" for name in names), tuple(f"{alias}.{name}" for name in names)


@cache
def _by_key(model: type[models.Model], lock: bool) -> tuple[tuple[str, ...], Statement]:
    names, columns, returns = whole_row("rows", model)
    text = f"SELECT {columns} FROM {{rows}} WHERE {{rows.{model._meta.pk.attname}}} = %s"
    if lock and connection.features.has_select_for_no_key_update:
        text += " FOR NO KEY UPDATE"
    elif lock and connection.features.has_select_for_update:
        text += " FOR UPDATE"
    # Elsewhere (SQLite) the writing transaction holds the whole database, as the ORM assumes too.
    return names, Statement(text, tables={"rows": model}, params=(f"rows.{model._meta.pk.attname}",), returns=returns)


@cache
def _through(model: type[models.Model], name: str) -> tuple[type[models.Model], tuple[str, ...], Statement]:
    """The whole row that `model`'s foreign key `name` points to, asked by `model`'s primary key."""
    field = model._meta.get_field(name)
    target = field.related_model
    names, columns, returns = whole_row("rows", target)
    key = model._meta.pk.attname
    text = (f"SELECT {columns} FROM {{rows}} WHERE {{rows.{target._meta.pk.attname}}} = "
            f"(SELECT {{owners.{field.attname}}} FROM {{owners}} WHERE {{owners.{key}}} = %s)")
    return target, names, Statement(text, tables={"rows": target, "owners": model}, params=(f"owners.{key}",), returns=returns)


def instance(model: type[models.Model], key: Any, *, lock: bool = False, related: str = "") -> models.Model | None:
    """
    The row of `model` with primary key `key`, as the ORM would load it (`from_db`), or None.

    For rows read on every push, page load and turn: `Model.objects.filter(pk=key).first()` builds
    its query anew each time, which cost more CPU than PostgreSQL spent finding the row. `lock`
    locks the row for an update that leaves its key alone (`select_for_update(no_key=True)`);
    `related` names a foreign key whose row comes along, read in the same round trip and not
    locked (`select_related`, `of=("self",)`).
    """
    names, statement = _by_key(model, lock)
    if not related:
        found = statement.rows(key)
        return model.from_db(connection.alias, names, found[0]) if found else None
    target, target_names, through = _through(model, related)
    found, target_found = batch((statement, (key,)), (through, (key,)))
    if not found:
        return None
    row = model.from_db(connection.alias, names, found[0])
    setattr(row, related, target.from_db(connection.alias, target_names, target_found[0]))
    return row


def rows(statement: str, params: list[Any]) -> list[tuple]:
    """Run one statement; return its rows."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall()


def execute(statement: str, params: list[Any]) -> int:
    """Run one statement that returns no rows; how many rows it changed."""
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount
