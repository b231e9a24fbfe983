"""The hot statements on the agent's tables (`apps/ledger/sql.py: Statement`)."""

from __future__ import annotations

from apps.actions.models import ActionLog
from apps.agent.message_fields import MESSAGE_COLUMNS
from apps.agent.models import Assistant
from apps.conversations.models import ChatMessage, ControlChange, Conversation, EmailFollowUp, Lease
from apps.ledger.sql import Statement
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.toolsources.resolve import resolved

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
    """The configuration of the conversation's assistant, its tool sources' tools resolved (`apps/toolsources/resolve.py`)."""
    [(config,)] = ASSISTANT_CONFIG.rows(conversation_id)
    return resolved(config)


# The name the assistant's messages carry as their author (apps/agent/state.py).
ASSISTANT_NAME = Statement(
    "SELECT {assistants.name} FROM {assistants} WHERE {assistants.id} = %s",
    tables={"assistants": Assistant},
    params=("assistants.id",),
    returns=("assistants.name",),
)


# The conversation's own fields that the state shows: read again inside the state's snapshot.
STATE_FIELDS = ("status", "completed_at", "message_count", "head_seq", "last_turn_at", "visibility", "control_mode",
                "control_staff", "control_name", "control_requested_at", "control_since", "control_reason")
STATE_ROW = Statement(
    f"SELECT {', '.join(f'{{conversations.{name}}}' for name in STATE_FIELDS)} FROM {{conversations}} WHERE {{conversations.id}} = %s",
    tables={"conversations": Conversation},
    params=("conversations.id",),
    returns=tuple(f"conversations.{name}" for name in STATE_FIELDS),
)

# The state every page load, poll and push reads (apps/agent/state.py), statement by statement:
# through the ORM, building these queries cost more CPU than PostgreSQL spent answering them.

MESSAGES_AFTER = Statement(
    f"""
    SELECT {', '.join(f'{{messages.{column}}}' for column in MESSAGE_COLUMNS)}
    FROM {{messages}}
    WHERE {{messages.conversation}} = %s AND {{messages.seq}} > %s
    ORDER BY {{messages.seq}}
    """,
    tables={"messages": ChatMessage},
    params=("messages.conversation", "messages.seq"),
    returns=tuple(f"messages.{column}" for column in MESSAGE_COLUMNS),
)

CONTROL_CHANGES_AFTER = Statement(
    """
    SELECT {changes.seq}, {changes.kind}, {changes.staff}, {changes.name}, {changes.text}, {changes.created_at}
    FROM {changes}
    WHERE {changes.conversation} = %s AND {changes.seq} > %s
    ORDER BY {changes.seq}
    """,
    tables={"changes": ControlChange},
    params=("changes.conversation", "changes.seq"),
    returns=("changes.seq", "changes.kind", "changes.staff", "changes.name", "changes.text", "changes.created_at"),
)

LATEST_RUN = Statement(
    """
    SELECT {runs.run_id}, {runs.turn_id}, {runs.status}, {runs.quarantined}, {runs.error}, {runs.progress},
           {runs.updated_at}, {runs.dispatched_seq}
    FROM {runs}
    WHERE {runs.conversation} = %s
    ORDER BY {runs.dispatched_seq} DESC
    LIMIT 1
    """,
    tables={"runs": WorkflowLog},
    params=("runs.conversation",),
    returns=("runs.run_id", "runs.turn_id", "runs.status", "runs.quarantined", "runs.error", "runs.progress",
             "runs.updated_at", "runs.dispatched_seq"),
)

# The latest run is the one dispatched last (LATEST_RUN); its usage and actions are read with it,
# in the same round trip, so they name it by that order too.
LATEST_RUN_USAGE = Statement(
    """
    SELECT {usages.call_id}, {usages.kind}, {usages.tool}, {usages.arguments}, {usages.requested_at}, {usages.reattempt_of},
           {usages.status}, {usages.output}, {usages.answered_by}, {usages.answered_at},
           {usages.approver}, {usages.expires_at}, {usages.editable}
    FROM {usages}
    WHERE {usages.run_id} = (SELECT {runs.run_id} FROM {runs} WHERE {runs.conversation} = %s
                             ORDER BY {runs.dispatched_seq} DESC LIMIT 1)
    ORDER BY {usages.requested_at}, {usages.id}
    """,
    tables={"usages": ToolUsageLog, "runs": WorkflowLog},
    params=("runs.conversation",),
    returns=("usages.call_id", "usages.kind", "usages.tool", "usages.arguments", "usages.requested_at", "usages.reattempt_of",
             "usages.status", "usages.output", "usages.answered_by", "usages.answered_at",
             "usages.approver", "usages.expires_at", "usages.editable"),
)

LATEST_RUN_ACTIONS = Statement(
    """
    SELECT {actions.tool}, {actions.status}
    FROM {actions}
    WHERE {actions.conversation} = %s
      AND {actions.run_id} = (SELECT {runs.run_id} FROM {runs} WHERE {runs.conversation} = %s
                              ORDER BY {runs.dispatched_seq} DESC LIMIT 1)
    ORDER BY {actions.started_at}, {actions.id}
    """,
    tables={"actions": ActionLog, "runs": WorkflowLog},
    params=("actions.conversation", "runs.conversation"),
    returns=("actions.tool", "actions.status"),
)

ANSWERS = Statement(
    """
    SELECT {usages.run_id}, {usages.turn_id}, {usages.call_id}, {usages.kind}, {usages.tool}, {usages.arguments},
           {usages.status}, {usages.output}, {usages.answered_by}, {usages.answered_at}, {usages.accepted_seq},
           {usages.reattempt_of}
    FROM {usages}
    WHERE {usages.conversation} = %s AND {usages.accepted_seq} > %s
    ORDER BY {usages.accepted_seq}
    """,
    tables={"usages": ToolUsageLog},
    params=("usages.conversation", "usages.accepted_seq"),
    returns=("usages.run_id", "usages.turn_id", "usages.call_id", "usages.kind", "usages.tool", "usages.arguments",
             "usages.status", "usages.output", "usages.answered_by", "usages.answered_at", "usages.accepted_seq",
             "usages.reattempt_of"),
)


# Conversations with a run left `running` by a writer that is gone: not moved for a lease period
# (the first parameter), and no live lease (expiring after the second). Every process asks each
# recovery interval, so it is one statement.
ORPHANED = Statement(
    """
    SELECT DISTINCT {runs}.{runs.conversation}
    FROM {runs}
    WHERE {runs}.{runs.status} = 'running' AND {runs}.{runs.updated_at} < %s
      AND NOT EXISTS (
        SELECT 1 FROM {leases}
        WHERE {leases}.{leases.conversation} = {runs}.{runs.conversation}
          AND {leases}.{leases.expires_at} > %s AND {leases}.{leases.holder} <> ''
      )
    ORDER BY {runs}.{runs.conversation}
    LIMIT 200
    """,
    tables={"runs": WorkflowLog, "leases": Lease},
    params=("runs.updated_at", "leases.expires_at"),
    returns=("runs.conversation",),
)

# Whether the clock has work (runner.housekeep): a pending client action past its expiry, a handoff
# request waiting in the queue that can time out (not one with an email address left), a person's
# reply to send by email.
HOUSEKEEPING_DUE = Statement(
    """
    SELECT
      EXISTS (SELECT 1 FROM {usage} WHERE {usage.status} = 'pending' AND {usage.expires_at} <= %s),
      EXISTS (SELECT 1 FROM {conversations} WHERE {conversations.control_mode} = 'queued'
              AND {conversations.control_requested_at} IS NOT NULL AND {conversations.control_email} = ''),
      EXISTS (SELECT 1 FROM {follow_ups} WHERE {follow_ups.status} = 'pending' AND {follow_ups.next_attempt_at} <= %s)
    """,
    tables={"usage": ToolUsageLog, "conversations": Conversation, "follow_ups": EmailFollowUp},
    params=("usage.expires_at", "follow_ups.next_attempt_at"),
    returns=("", "", ""),
)
