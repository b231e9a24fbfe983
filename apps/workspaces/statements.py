"""The hot statements on the workspaces' tables (`apps/ledger/sql.py: Statement`)."""

from __future__ import annotations

from apps.ledger.sql import Statement
from apps.workspaces.models import Memory

# Every run asks before its first model round, mostly to learn there are none.
ACTIVE_FACTS = Statement(
    """
    SELECT {memories.text}
    FROM {memories}
    WHERE {memories.conversation} = %s AND {memories.status} = 'active'
    ORDER BY {memories.remembered_at}, {memories.fact_id}
    """,
    tables={"memories": Memory},
    params=("memories.conversation",),
    returns=("memories.text",),
)
