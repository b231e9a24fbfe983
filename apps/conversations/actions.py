"""
Writes on a conversation's own row and the checks of what people send (the turn writes that use
them are the agent's: `apps/agent/actions.py`).

`locked` is the one row lock every action that appends takes; `Idempotency` remembers the first
answer to a request that carried an `Idempotency-Key`.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError

from apps.conversations.errors import BadInput, IdempotencyKeyReused, NotFound
from apps.conversations.models import Conversation, IdempotencyRecord
from apps.ledger import sql

MAX_MESSAGE_CHARS = 20_000


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


def is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def locked(conversation_id: str, *, with_assistant: bool = False) -> Conversation:
    """
    Lock a conversation's row for an append (no key update: its log and tokens may still be inserted).

    Must run inside `transaction.atomic()`. `with_assistant`: the assistant comes along (its
    config decides a turn's mode), locked it is not.
    :raises NotFound: no such conversation
    """
    if not is_uuid(conversation_id):
        raise NotFound("no such conversation")
    conversation = sql.instance(Conversation, conversation_id, lock=True, related="assistant" if with_assistant else "")
    if conversation is None:
        raise NotFound("no such conversation")
    return conversation


@dataclass(frozen=True)
class Idempotency:
    scope: str
    key: str
    request: dict[str, Any]

    @property
    def request_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.request, sort_keys=True, default=str).encode()).hexdigest()


def replayed(idempotency: Idempotency | None) -> dict[str, Any] | None:
    """
    The answer given to the first request with this Idempotency-Key, or None.

    :raises IdempotencyKeyReused: the key came with a different request before
    """
    if idempotency is None:
        return None
    record = IdempotencyRecord.objects.filter(scope=idempotency.scope, key=idempotency.key).first()
    if record is None:
        return None
    if record.request_hash != idempotency.request_hash:
        raise IdempotencyKeyReused()
    return record.response


def remember(idempotency: Idempotency | None, conversation_id: str, response: dict[str, Any], status: int) -> None:
    """Keep the answer to a request with an Idempotency-Key, in the write's transaction."""
    if idempotency is not None:
        IdempotencyRecord.objects.create(
            scope=idempotency.scope,
            key=idempotency.key,
            request_hash=idempotency.request_hash,
            conversation_id=conversation_id,
            status_code=status,
            response=response,
        )


def once(idempotency: Idempotency | None, write):
    """Run a turn-creating write once per Idempotency-Key; a concurrent twin gets the first's answer."""
    try:
        return write()
    except IntegrityError:
        replay = replayed(idempotency) if idempotency else None
        if replay is None:
            raise
        return replay


# NUL and the other control characters but tab and line breaks: no person types them, PostgreSQL
# refuses NUL in text and JSON, and a terminal or log that shows them can be fooled by them.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_clean(value: Any, where: str) -> Any:
    """
    Refuse text with control characters anywhere in a value (its strings, keys and nested values).

    :raises BadInput: a string holds NUL or another control character other than tab and line breaks
    """
    if isinstance(value, str):
        if CONTROL_CHARACTERS.search(value):
            raise BadInput(f"{where} must not contain control characters such as NUL")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_clean(key, where)
            check_clean(item, where)
    elif isinstance(value, list):
        for item in value:
            check_clean(item, where)
    return value


def check_message(text: Any) -> str:
    """:raises BadInput: the message is not non-empty text of a sane length, without control characters"""
    if not isinstance(text, str) or not text.strip():
        raise BadInput("message must be non-empty text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise BadInput(f"message is longer than {MAX_MESSAGE_CHARS} characters")
    return check_clean(text, "message")


def check_directive(directive: dict[str, Any] | None) -> dict[str, Any] | None:
    """:raises BadInput: an ingress directive with unknown keys or values"""
    if not directive:
        return None
    if not isinstance(directive, dict) or set(directive) - {"step_budget", "required_approver"}:
        raise BadInput("directive accepts step_budget and required_approver only")
    budget = directive.get("step_budget")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 64):
        raise BadInput("directive.step_budget must be a whole number from 1 to 64")
    if not isinstance(directive.get("required_approver", ""), str):
        raise BadInput('directive.required_approver must be a persona identity, or "staff"')
    return directive


