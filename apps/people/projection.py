"""
The `participants` store as a projection of the log (pure: no Django; docs/people.md).

Registered in `PeopleConfig.ready()`; see `apps/ledger/projection.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

from apps.ledger.projection import Change, Entry, Projection
from apps.ledger.types import ParticipantAdded, ParticipantRemoved

projection = Projection({"participants": ("conversation_id", "persona")})


@projection.handles(ParticipantAdded)
def _(event: ParticipantAdded, at: Entry) -> Iterator[Change]:
    values = {
        "permissions": event.permissions, "status": "active", "added_by": event.added_by, "added_at": at.created_at,
        "removed_by": "", "removed_at": None,
    }
    key = (at.conversation_id, event.persona)
    if event.again:
        yield Change("participants", key, set=values)
    else:
        yield Change("participants", key, create={"conversation_id": at.conversation_id, "persona": event.persona, **values})


@projection.handles(ParticipantRemoved)
def _(event: ParticipantRemoved, at: Entry) -> Iterator[Change]:
    yield Change(
        "participants", (at.conversation_id, event.persona),
        set={"status": "removed", "removed_by": event.removed_by, "removed_at": at.created_at},
    )
