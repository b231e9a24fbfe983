"""
The hot statements on the conversations' tables (`apps/ledger/sql.py: Statement`): every request
and poll of a customer resolves its token, and a lease is taken and given back around every drive.
"""

from __future__ import annotations

from functools import cache

from django.db import connection

from apps.conversations.models import Conversation, ConversationToken, Lease
from apps.ledger.sql import Statement

RESOLVE_TOKEN = Statement(
    """
    SELECT {tokens.id}, {tokens.conversation}, {tokens.persona}, {tokens.edge}, {tokens.permissions}, {tokens.expires_at}
    FROM {tokens}
    WHERE {tokens.id} = %s AND {tokens.revoked_at} IS NULL AND {tokens.expires_at} > %s
    """,
    tables={"tokens": ConversationToken},
    params=("tokens.id", "tokens.expires_at"),
    returns=("tokens.id", "tokens.conversation", "tokens.persona", "tokens.edge", "tokens.permissions", "tokens.expires_at"),
)

RENEW_TOKEN = Statement(
    "UPDATE {tokens} SET {tokens.expires_at} = %s WHERE {tokens.id} = %s",
    tables={"tokens": ConversationToken},
    params=("tokens.expires_at", "tokens.id"),
)

LEASE = Statement(
    "SELECT {leases.holder}, {leases.version}, {leases.expires_at} FROM {leases} WHERE {leases.conversation} = %s",
    tables={"leases": Lease},
    params=("leases.conversation",),
    returns=("leases.holder", "leases.version", "leases.expires_at"),
)

# Version-checked: it takes the lease only if nobody took it since it was read.
TAKE_LEASE = Statement(
    """
    UPDATE {leases} SET {leases.holder} = %s, {leases.version} = %s, {leases.expires_at} = %s
    WHERE {leases.conversation} = %s AND {leases.version} = %s
    """,
    tables={"leases": Lease},
    params=("leases.holder", "leases.version", "leases.expires_at", "leases.conversation", "leases.version"),
)

RENEW_LEASE = Statement(
    """
    UPDATE {leases} SET {leases.expires_at} = %s
    WHERE {leases.conversation} = %s AND {leases.holder} = %s AND {leases.version} = %s
    """,
    tables={"leases": Lease},
    params=("leases.expires_at", "leases.conversation", "leases.holder", "leases.version"),
)

RELEASE_LEASE = Statement(
    """
    UPDATE {leases} SET {leases.holder} = '', {leases.expires_at} = NULL
    WHERE {leases.conversation} = %s AND {leases.holder} = %s AND {leases.version} = %s
    """,
    tables={"leases": Lease},
    params=("leases.conversation", "leases.holder", "leases.version"),
)


# Asked before every model round and tool of a run (PRODUCT.md "Human handoff"): who has control.
@cache
def control_mode(*, locked: bool) -> Statement:
    """`locked`: under the row lock a change of control takes too (FOR NO KEY UPDATE where there is one)."""
    lock = "FOR NO KEY UPDATE" if locked and connection.features.has_select_for_no_key_update else ""
    return Statement(
        f"SELECT {{conversations.control_mode}} FROM {{conversations}} WHERE {{conversations.id}} = %s {lock}",
        tables={"conversations": Conversation},
        params=("conversations.id",),
        returns=("conversations.control_mode",),
    )


# Who has control as a run begins, and the log head that was current then, in one snapshot: a change
# of control is an entry, so while the head stays this one control stays this too.
CONTROL_AND_HEAD = Statement(
    "SELECT {conversations.control_mode}, {conversations.head_seq}, {conversations.head_hash} FROM {conversations} "
    "WHERE {conversations.id} = %s",
    tables={"conversations": Conversation},
    params=("conversations.id",),
    returns=("conversations.control_mode", "conversations.head_seq", "conversations.head_hash"),
)
