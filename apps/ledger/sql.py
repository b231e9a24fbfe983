"""
Plain statements on the stores' tables, for the paths every turn or poll takes.

Building an ORM query costs several times what PostgreSQL spends answering a small one
(bench/before-after.md), so the hot reads and writes are written as SQL. Table and column names
and parameter values still come from the models, so they follow the schema and both backends.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection, models


@dataclass(frozen=True)
class Table:
    """One model's table: its quoted name, and how each field is named and written."""

    model: type[models.Model]
    name: str
    fields: dict[str, models.Field]

    def column(self, name: str) -> str:
        return connection.ops.quote_name(self.fields[name].column)

    def value(self, name: str, value: Any) -> Any:
        """`value` as the database takes it for field `name` (a UUID on PostgreSQL, hex on SQLite, JSON adapted)."""
        return self.fields[name].get_db_prep_save(value, connection)


@cache
def table(model: type[models.Model]) -> Table:
    fields = {f.name: f for f in model._meta.concrete_fields}
    fields.update({f.attname: f for f in model._meta.concrete_fields})
    return Table(model, connection.ops.quote_name(model._meta.db_table), fields)


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
