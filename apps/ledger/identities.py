"""
Identities and permissions (PRODUCT.md vocabulary "persona"): the one rule the API, the pages,
people and the command line's `--actor` all check.

Pure: no Django. An identity is `provider:external_id` or `provider:scope:external_id`, for example
`shop:customer-42` or `okta:acme:alice@acme.com`: a provider that begins with a letter, then one or
two segments of letters, digits and `_ . @ + -`. It is at the bottom (beside the log that records
every entry's actor) so that every floor can use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What a persona may do in a conversation, in their canonical order.
PERMISSIONS = ("view", "write", "answer_client_actions", "approve")
EXTERNAL_ID = r"[A-Za-z0-9_.@+\-]{1,100}"  # one segment after the provider
PATTERN = rf"^[A-Za-z][A-Za-z0-9_.\-]{{0,63}}(:{EXTERNAL_ID}){{1,2}}$"
_PERSONA = re.compile(PATTERN)


class InvalidPersona(ValueError):
    """Not `provider:external_id` or `provider:scope:external_id`."""


@dataclass(frozen=True)
class Persona:
    provider: str
    scope: str  # "" for provider:external_id
    external_id: str

    def __str__(self) -> str:
        return ":".join(part for part in (self.provider, self.scope, self.external_id) if part)


def parse_persona(value: object) -> Persona:
    """
    Split a persona identity into provider, scope and external id.

    :raises InvalidPersona: not `provider:external_id` or `provider:scope:external_id`
    """
    if not isinstance(value, str) or not _PERSONA.fullmatch(value):
        raise InvalidPersona(f"{value!r} is not a persona: use provider:external_id or provider:scope:external_id")
    parts = value.split(":")
    if len(parts) == 2:
        return Persona(parts[0], "", parts[1])
    return Persona(parts[0], parts[1], parts[2])


def is_staff(value: str) -> bool:
    """Whether a persona is a member of the team (`staff:<id>`): the approver of a staff approval."""
    try:
        persona = parse_persona(value)
    except InvalidPersona:
        return False
    return persona.provider == "staff" and not persona.scope


def persona_name(value: str) -> str:
    """
    What people call a persona on a page: its external id ("alice@acme.com"), a guest by a short tag.

    Anonymous visitors (`guest:<hex>`) read "Guest 3f2a", staff "<name> (staff)", an API key's own
    identity "The application"; anything that is no persona is shown as it is.
    """
    try:
        persona = parse_persona(value)
    except InvalidPersona:
        return value
    if persona.provider == "guest" and not persona.scope:
        return f"Guest {persona.external_id[:4]}"
    if persona.provider == "staff" and not persona.scope:
        return f"{persona.external_id} (staff)"
    if persona.provider == "api" and not persona.scope:
        return "The application"
    return persona.external_id


def check_permissions(value: object) -> list[str]:
    """
    Return permissions in their canonical order, without repeats.

    :raises ValueError: not a list of known permissions
    """
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValueError("permissions must be a list of names")
    unknown = sorted(set(value) - set(PERMISSIONS))
    if unknown:
        raise ValueError(f"unknown permissions {unknown}; known: {list(PERMISSIONS)}")
    return [p for p in PERMISSIONS if p in value]
