"""
The stores as a projection of the log, and the registry of who projects what.

Pure: no Django. The log knows no store: each app that owns tables declares them in a
`Projection` with one handler per event class it cares about (`apps/<app>/projection.py`) and
registers it in its `AppConfig.ready()`. `projector.changes(conversation_id, recorded)` asks every
registered handler of the entry's class which rows it creates or updates; `fold(events)` applies
them in memory. The store applies the very same changes to the database in the append's
transaction, so the rows and the fold cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from apps.ledger.types import EventKind, Recorded


@dataclass(frozen=True)
class Change:
    store: str
    key: tuple
    create: dict[str, Any] | None = None
    set: dict[str, Any] = field(default_factory=dict)
    incr: dict[str, int] = field(default_factory=dict)
    append: dict[str, Any] = field(default_factory=dict)
    discard: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    """Where an event stands in the log: what a handler may read besides the event's own fields."""

    conversation_id: str
    seq: int
    turn_id: str
    created_at: str


Handler = Callable[[Any, Entry], Iterable[Change]]

# Told of the entries of every append, it returns statements (SQL, parameters) written in the same
# transaction: an outbox of what the entries announce outside (the outgoing webhooks).
Announcer = Callable[[str, list[Recorded]], list[tuple[str, list[Any]]]]


class Projection:
    """One app's tables (each with its key fields, in order) and its handlers, one per event class."""

    def __init__(self, tables: dict[str, tuple[str, ...]]):
        self.tables = tables
        self.handlers: dict[type[EventKind], Handler] = {}

    def handles(self, kind: type[EventKind]) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            if kind in self.handlers:
                raise ValueError(f"{kind.__name__} has a handler in this projection already")
            self.handlers[kind] = handler
            return handler

        return register


class Projector:
    """Every registered projection: the stores, their keys and models, and the handlers by event class."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, ...]] = {}  # store -> its key fields, in registration order
        self.models: dict[str, Any] = {}  # store -> its Django model (opaque here)
        self._handlers: dict[type[EventKind], list[Handler]] = {}
        self.announcers: list[Announcer] = []

    def announce(self, announcer: Announcer) -> None:
        """Have `announcer` write, with each append, the rows that tell others of its entries."""
        if announcer not in self.announcers:
            self.announcers.append(announcer)

    def register(self, projection: Projection, *, models: dict[str, Any]) -> None:
        """Add an app's projection; `models` names the model of each of its tables."""
        if set(models) != set(projection.tables):
            raise ValueError(f"models {sorted(models)} do not match the tables {sorted(projection.tables)}")
        for name, key in projection.tables.items():
            if name in self.keys and self.models[name] is not models[name]:
                raise ValueError(f"store {name} is projected by another app")
            self.keys[name], self.models[name] = key, models[name]
        for kind, handler in projection.handlers.items():
            handlers = self._handlers.setdefault(kind, [])
            if handler not in handlers:
                handlers.append(handler)

    def store_of(self, model: Any) -> str:
        return next(name for name, m in self.models.items() if m is model)

    def changes(self, conversation_id: str, rec: Recorded) -> list[Change]:
        """
        Say what one entry does to the stores.

        :raises KeyError: the entry's kind is unknown
        :raises TypeError: its payload lacks a field its kind needs
        """
        body = rec.body
        handlers = self._handlers.get(type(body))
        if not handlers:
            return []
        at = Entry(conversation_id, rec.seq, rec.turn_id, rec.created_at)
        return [change for handler in handlers for change in handler(body, at)]


projector = Projector()


def apply_change(row: dict[str, Any] | None, change: Change) -> dict[str, Any]:
    """Return the row after one change; a create replaces nothing that exists."""
    if change.create is not None:
        if row is not None:
            raise ValueError(f"{change.store} {change.key} exists already")
        row = dict(change.create)
    elif row is None:
        raise ValueError(f"{change.store} {change.key} does not exist")
    else:
        row = dict(row)
    row.update(change.set)
    for name, n in change.incr.items():
        if "." in name:
            outer, inner = name.split(".", 1)
            row[outer] = {**row[outer], inner: row[outer].get(inner, 0) + n}
        else:
            row[name] = row[name] + n
    for name, item in change.append.items():
        row[name] = [*row[name], item]
    for name, item in change.discard.items():
        row[name] = [x for x in row[name] if x != item]
    return row


@dataclass
class Folded:
    """The stores as the log says they are, keyed by each store's key."""

    rows: dict[str, dict[tuple, dict[str, Any]]] = field(default_factory=lambda: {s: {} for s in projector.keys})


def fold(conversation_id: str, events: list[Recorded], state: Folded | None = None) -> Folded:
    """
    Rebuild the stores of one conversation from its log, calling no model or tool.

    With `state`, continue folding onto it (in place) instead of starting empty.
    :raises ValueError: an event does not apply to the state so far
    :raises KeyError: an event is of an unknown kind
    :raises TypeError: an event lacks a field its kind needs
    """
    state = Folded() if state is None else state
    for rec in events:
        for change in projector.changes(conversation_id, rec):
            table = state.rows[change.store]
            table[change.key] = apply_change(table.get(change.key), change)
    return state
