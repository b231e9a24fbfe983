"""
A message's fields as every client reads them (PRODUCT.md "Conversation state", `messages`), once.

Each field names the `ChatMessage` columns it is read from and how they are shown. The state's
statement selects exactly these columns (`apps/agent/statements.py: MESSAGES_AFTER`), the state
builds each message from this table (`apps/agent/state.py`), and a test holds the API's
`MessageOut` schema to the same names. A new field of a message is a column, its projection
(`apps/conversations/projection.py`) and an entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.ledger.identities import persona_name
from apps.ledger.store import iso


def _author(role: str, author: str, author_name: str, *, assistant: dict[str, str]) -> dict[str, str]:
    """Who wrote a message (PRODUCT.md "Human handoff"): the customer, the assistant or a person on the staff side."""
    if role == "assistant":
        return assistant
    if role == "staff":
        return {"kind": "staff", "id": author, "name": author_name or persona_name(author)}
    return {"kind": "customer", "id": author, "name": persona_name(author) if author else ""}


def _as_is(value: Any, **_: Any) -> Any:
    return value


@dataclass(frozen=True)
class Shown:
    """One field of a message: its name for clients, the columns it is read from, and how they are shown."""

    name: str
    columns: tuple[str, ...] = ()  # the field's own column when empty
    show: Callable[..., Any] = _as_is  # the columns' values (and `assistant=`) -> what clients read

    @property
    def read(self) -> tuple[str, ...]:
        return self.columns or (self.name,)


MESSAGE_FIELDS = (
    Shown("id"),
    Shown("role"),
    Shown("text"),
    Shown("turn_id"),
    Shown("author", ("role", "author", "author_name"), _author),
    Shown("seq"),
    Shown("created_at", show=lambda value, **_: iso(value)),
    Shown("citations", show=lambda value, **_: value or []),
    Shown("offer_handoff", show=lambda value, **_: bool(value)),
)

# The columns a message is read from, each once, in the order the statement selects them.
MESSAGE_COLUMNS = tuple(dict.fromkeys(column for shown in MESSAGE_FIELDS for column in shown.read))
_AT = {column: index for index, column in enumerate(MESSAGE_COLUMNS)}


def _compiled() -> Callable[[tuple, dict[str, str]], dict[str, Any]]:
    # Written out as one dict display: every page load, poll and push shows every message of the
    # conversation, and a loop over this table per message cost seven times as much.
    shows, items = [], []
    for shown in MESSAGE_FIELDS:
        args = ", ".join(f"row[{_AT[column]}]" for column in shown.read)
        if shown.show is _as_is:
            items.append(f"{shown.name!r}: {args}")
        else:
            shows.append(shown.show)
            items.append(f"{shown.name!r}: shows[{len(shows) - 1}]({args}, assistant=assistant)")
    return eval(f"lambda row, assistant: {{{', '.join(items)}}}", {"shows": tuple(shows)})  # noqa: S307


_message_of = _compiled()


def message_of(row: tuple, *, assistant: dict[str, str]) -> dict[str, Any]:
    """Show one row of `MESSAGE_COLUMNS` as clients read a message; `assistant` is the assistant's author."""
    return _message_of(row, assistant)
