"""The hot statements on the agent's tables (`apps/ledger/sql.py: Statement`)."""

from __future__ import annotations

from apps.agent.models import Assistant
from apps.conversations.models import Conversation
from apps.ledger.sql import Statement

# The configuration of a conversation's assistant: every step of a run asks.
ASSISTANT_CONFIG = Statement(
    """
    SELECT {assistants.config}
    FROM {assistants}
    WHERE {assistants.id} = (SELECT {conversations.assistant} FROM {conversations} WHERE {conversations.id} = %s)
    """,
    tables={"assistants": Assistant, "conversations": Conversation},
    params=("conversations.id",),
    returns=("assistants.config",),
)


def assistant_config(conversation_id: str) -> dict:
    """The configuration of the conversation's assistant."""
    [(config,)] = ASSISTANT_CONFIG.rows(conversation_id)
    return config
