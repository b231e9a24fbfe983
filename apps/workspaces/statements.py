"""The hot statements on the workspaces' tables (`apps/ledger/sql.py: Statement`)."""

from __future__ import annotations

from apps.actions.models import ActionLog
from apps.ledger.sql import Statement, whole_row
from apps.workspaces.models import Artifact, Closure, Memory, Runtime

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

# Every batch one asks whether the conversation is closed for being idle (its turn reopens it), and
# every state read, for its phase.
OPEN_CLOSURE = Statement(
    """
    SELECT {closures.closed_seq}, {closures.closed_at} FROM {closures}
    WHERE {closures.conversation} = %s AND {closures.reopened_seq} IS NULL
    ORDER BY {closures.closed_seq} DESC
    LIMIT 1
    """,
    tables={"closures": Closure},
    params=("closures.conversation",),
    returns=("closures.closed_seq", "closures.closed_at"),
)

# The facts a conversation's agent remembers now, as its state shows them.
MEMORY = Statement(
    """
    SELECT {memories.fact_id}, {memories.text}, {memories.persona}, {memories.turn_id}, {memories.remembered_at}
    FROM {memories}
    WHERE {memories.conversation} = %s AND {memories.status} = 'active'
    ORDER BY {memories.remembered_at}, {memories.fact_id}
    """,
    tables={"memories": Memory},
    params=("memories.conversation",),
    returns=("memories.fact_id", "memories.text", "memories.persona", "memories.turn_id", "memories.remembered_at"),
)

# Every batch one makes sure the workspace runtime is open: created with the first turn, opened
# again after an idle close, and otherwise left as it is, in one statement.
OPEN_RUNTIME = Statement(
    """
    INSERT INTO {runtimes} ({runtimes.conversation}, {runtimes.opened_at}, {runtimes.closed_at}) VALUES (%s, %s, NULL)
    ON CONFLICT ({runtimes.conversation}) DO UPDATE SET {runtimes.opened_at} = excluded.{runtimes.opened_at}, {runtimes.closed_at} = NULL
    WHERE {runtimes}.{runtimes.closed_at} IS NOT NULL
    """,
    tables={"runtimes": Runtime},
    params=("runtimes.conversation", "runtimes.opened_at"),
)

# Every state read shows the conversation's artifacts (mostly none) and asks whether a tool call
# ever wrote one, which decides whether their recovery state is worked out at all.
ARTIFACT_FIELDS, _ARTIFACT_COLUMNS, _ARTIFACT_RETURNS = whole_row("artifacts", Artifact)
ARTIFACTS = Statement(
    f"""
    SELECT {_ARTIFACT_COLUMNS}
    FROM {{artifacts}}
    WHERE {{artifacts.conversation}} = %s
    ORDER BY {{artifacts.created_at}}, {{artifacts.artifact_id}}
    """,
    tables={"artifacts": Artifact},
    params=("artifacts.conversation",),
    returns=_ARTIFACT_RETURNS,
)

ANY_ACTION = Statement(
    "SELECT 1 FROM {actions} WHERE {actions.conversation} = %s AND {actions.action} = %s LIMIT 1",
    tables={"actions": ActionLog},
    params=("actions.conversation", "actions.action"),
    returns=("",),
)
