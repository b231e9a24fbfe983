"""
Staff writes: quarantine resolutions, assistants and API keys, each recorded with the staff identity.

A change to a conversation is a signed event in its own log, appended like every other write (one
transaction, the conversation row locked, `store.append`); workspace changes (assistants, API
keys) get a `StaffAuditLog` row in the same transaction as the change.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import partial
from typing import Any

import rfc8785
from django.db import transaction
from django.utils import timezone

from apps.actions.models import ActionLog
from apps.agent import actions as agent_actions
from apps.agent import runner
from apps.agent.config import ConfigError
from apps.agent.models import Assistant
from apps.conversations import broadcast
from apps.conversations.actions import check_clean, locked
from apps.conversations.errors import BadInput, ConversationIsCompleted, NotFound, WaypointError
from apps.ledger import store
from apps.ledger.types import QuarantineResolved, Recorded
from apps.people import presence
from apps.runs.models import WorkflowLog
from apps.staff.models import SavedReply, StaffAuditLog
from apps.workspaces import keys
from apps.workspaces.models import ApiKey

RESOLUTIONS = {
    "done": "Mark as done",
    "not_done_retry": "Mark as not done and retry",
    "abandon": "Abandon",
}
MAX_NOTE_CHARS = 2000


class NotQuarantined(WaypointError):
    """This run is not quarantined (any more): someone resolved it already."""

    code = "not_quarantined"
    status = 409


class TurnMovedOn(WaypointError):
    """A later turn started after this one, so it cannot run again; mark it done or abandon it and note what you confirmed."""

    code = "turn_moved_on"
    status = 409


def staff_identity(user: Any) -> str:
    """The persona identity (`provider:external_id`) that staff changes are recorded under."""
    return f"staff:{user.get_username()}"


DEFAULT_NAME = "Support"


def staff_name(user: Any) -> str:
    """
    The name a customer sees for a staff member: the display name they set (the panel's profile,
    `make superuser`), else their full name, else the team's word for them: never their login name.
    """
    return _shown_name(user, presence.display_names([staff_identity(user)]))


SHORTCUT = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def save_reply(*, shortcut: str, text: str, staff: str, now: datetime) -> SavedReply:
    """
    Add a saved reply, or change the text of the one with this shortcut.

    :raises BadInput: a shortcut that is not one word of letters, digits and dashes, or no text
    """
    if not SHORTCUT.match(shortcut):
        raise BadInput("a shortcut is one word of lowercase letters, digits and dashes (at most 40), such as refund-policy")
    if not text or len(text) > 20_000:
        raise BadInput("write the reply's text (at most 20,000 characters)")
    check_clean(text, "text")
    reply, _ = SavedReply.objects.update_or_create(shortcut=shortcut, defaults={"text": text, "created_by": staff, "created_at": now})
    return reply


def check_display_name(name: str) -> None:
    """:raises BadInput: longer than a name, or not printable text"""
    if len(name) > 200:
        raise BadInput("a display name is at most 200 characters")
    check_clean(name, "display name")


def _shown_name(user: Any, named: dict[str, str]) -> str:
    return (named.get(staff_identity(user)) or user.get_full_name() or DEFAULT_NAME)[:200]


def may_return_any(user: Any) -> bool:
    """Whether a staff member may hand a colleague's conversation back to the assistant: the admins (superusers)."""
    return bool(user.is_active and user.is_superuser)


def colleagues() -> list[dict[str, str]]:
    """
    The active staff members a conversation can be handed to, as `{id, name, label, status}` by
    name: `name` as customers see it, `label` as colleagues know them (with the login where the
    name alone would not tell them apart), `status` their presence (online, away or offline).
    """
    from django.contrib.auth import get_user_model

    people = list(get_user_model().objects.filter(is_active=True, is_staff=True))
    named = presence.display_names([staff_identity(user) for user in people])
    statuses = presence.statuses(timezone.now())
    found = []
    for user in people:
        me, name = staff_identity(user), _shown_name(user, named)
        label = name if name != DEFAULT_NAME else f"{name} ({user.get_username()})"
        found.append({"id": me, "name": name, "label": label, "status": statuses.get(me, "offline")})
    return sorted(found, key=lambda person: (person["name"].casefold(), person["id"]))


def panel_context(user: Any) -> dict[str, Any]:
    """What the conversation page's controls need to know of the staff member looking: who they are and may do."""
    return {"me": staff_identity(user), "staff_admin": may_return_any(user), "colleagues": colleagues}


def check_resolution(*, resolution: Any, note: Any, result: Any = "") -> tuple[str, str, Any]:
    """
    Check a quarantine resolution form and return (resolution, note, result).

    `result` is what the downstream system reports for a "done" action (say its refund record):
    JSON, or plain text kept as text; empty for none.
    :raises BadInput: an unknown resolution, an over-long note or result, or "done" without the outcome
    """
    if resolution not in RESOLUTIONS:
        raise BadInput(f"resolution must be one of {', '.join(RESOLUTIONS)}")
    note = note.strip() if isinstance(note, str) else ""
    if len(note) > MAX_NOTE_CHARS:
        raise BadInput(f"the note is longer than {MAX_NOTE_CHARS} characters")
    if resolution == "done" and not note:
        raise BadInput("say what outcome you confirmed (for example the refund id) to mark the action as done")
    text = result.strip() if isinstance(result, str) else ""
    if len(text) > MAX_NOTE_CHARS:
        raise BadInput(f"the result is longer than {MAX_NOTE_CHARS} characters")
    if resolution != "done" or not text:
        return resolution, note, None
    try:
        parsed = json.loads(text)
        rfc8785.dumps(parsed)  # what the log can sign: NaN or a 20-digit number stays text
    except ValueError:
        return resolution, note, text
    return resolution, note, parsed


def resolve_quarantine(*, run_id: str, resolution: str, note: str, actor: str, now: datetime, result: Any = "",
                       customer_visible: bool = False) -> Recorded:
    """
    Record a person's resolution of a quarantined (ambiguous) turn as a signed event.

    Each becomes the outcome the model sees in the conversation's history. "done" records the
    outcome the person confirmed (and the result the downstream system reports, if given): the
    turn stays interrupted and the customer's Continue goes on from it without running the action
    again. "abandon" records that nobody will find out: a later identical call is a new action.
    "not_done_retry" runs the action again in the same turn under the same idempotency key; the
    runner is kicked once it has committed. Done and abandon may be recorded after the customer
    continued (the record then says what the re-attempt repeated); a retry may not.
    `customer_visible`: the note may reach the customer (the model is told it); otherwise the model
    hears only that staff confirmed or abandoned the action, and the note stays in the log for staff.
    :raises BadInput: see `check_resolution`
    :raises NotFound: no such run
    :raises NotQuarantined: the run is not quarantined (resolved already)
    :raises TurnMovedOn: a retry asked for a turn that a later turn followed
    :raises ConversationIsCompleted: a retry on a completed conversation
    """
    resolution, note, result = check_resolution(resolution=resolution, note=note, result=result)
    conversation_id = WorkflowLog.objects.filter(run_id=run_id).values_list("conversation_id", flat=True).first()
    if conversation_id is None:
        raise NotFound("no such run")
    with transaction.atomic():
        conversation = locked(conversation_id)
        run = WorkflowLog.objects.get(run_id=run_id)
        ambiguous = ActionLog.objects.filter(turn_id=run.turn_id, status="ambiguous").order_by("started_at", "id").first()
        if not run.quarantined or ambiguous is None:
            raise NotQuarantined()
        if resolution == "not_done_retry":
            if conversation.status == "completed":
                raise ConversationIsCompleted()
            if WorkflowLog.objects.filter(conversation_id=conversation.id, dispatched_seq__gt=run.dispatched_seq).exists():
                raise TurnMovedOn()
        recorded = store.append(
            conversation,
            [QuarantineResolved(run_id=run.run_id, call_id=ambiguous.call_id, resolution=resolution, note=note, result=result,
                                customer_visible=bool(customer_visible and note))],
            turn_id=run.turn_id,
            actor=actor,
            now=now,
        )
        broadcast.on_commit(conversation.id, recorded[-1].seq)
        if resolution == "not_done_retry":
            transaction.on_commit(partial(runner.kick, str(conversation.id)))
    return recorded[0]


def _audit(*, actor: str, action: str, target: str, now: datetime, **details: Any) -> None:
    StaffAuditLog.objects.create(actor=actor, action=action, target=target, details=details, created_at=now)


def check_config_text(*, text: Any, allowed_origins: Any = None) -> dict[str, Any]:
    """
    Parse the assistant form: the configuration's JSON text and the embed origins, one per line.

    The origins field, when given, replaces the configuration's `allowed_origins`.
    :raises BadInput: the text is not JSON; `details["problems"]` says where
    """
    try:
        config = json.loads(text if isinstance(text, str) else "")
    except ValueError as exc:
        problem = f"line {exc.lineno}, column {exc.colno}: {exc.msg}" if hasattr(exc, "lineno") else str(exc)
        raise BadInput("the configuration is not valid JSON", problems=[problem]) from exc
    check_clean(config, "the configuration")
    if isinstance(config, dict) and allowed_origins is not None:
        lines = allowed_origins.splitlines() if isinstance(allowed_origins, str) else []
        config["allowed_origins"] = [line.strip().rstrip("/") for line in lines if line.strip()]
    return config


def create_assistant(*, config: Any, actor: str, now: datetime) -> Assistant:
    """
    Validate a configuration, store it as a new assistant and record who did.

    :raises BadInput: the configuration is invalid; `details["problems"]` lists why
    """
    with transaction.atomic():
        assistant = agent_actions.create_assistant(config=config)
        _audit(actor=actor, action="assistant_created", target=f"assistant:{assistant.id}", now=now, name=assistant.name)
    return assistant


def update_assistant(*, assistant_id: str, config: Any, actor: str, now: datetime) -> Assistant:
    """
    Replace an assistant's configuration with a validated one and record who changed what.

    Runs already under way read the configuration when their next step starts.
    :raises NotFound: no such assistant
    :raises BadInput: the configuration is invalid; `details["problems"]` lists why
    """
    try:
        clean = agent_actions.check_assistant_config(config)
    except ConfigError as exc:
        raise BadInput("invalid assistant configuration: " + "; ".join(exc.problems), problems=exc.problems) from exc
    with transaction.atomic():
        assistant = Assistant.objects.select_for_update().filter(id=assistant_id).first()
        if assistant is None:
            raise NotFound("no such assistant")
        changed = sorted(k for k in set(clean) | set(assistant.config) if clean.get(k) != assistant.config.get(k))
        assistant.name, assistant.config = clean["name"], clean
        assistant.save(update_fields=["name", "config", "updated_at"])
        _audit(actor=actor, action="assistant_updated", target=f"assistant:{assistant.id}", now=now, changed=changed)
    return assistant


def create_api_key(*, name: Any, actor: str, now: datetime) -> tuple[ApiKey, str]:
    """
    Create a workspace API key and return it with its secret, which is shown this once only.

    :raises BadInput: the name is empty or too long
    """
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > 200:
        raise BadInput("give the key a name of at most 200 characters")
    with transaction.atomic():
        key, raw = keys.create_api_key(name=name.strip())
        _audit(actor=actor, action="api_key_created", target=f"api_key:{key.id}", now=now, name=key.name, prefix=key.prefix)
    return key, raw


def revoke_api_key(*, key_id: int, actor: str, now: datetime) -> ApiKey:
    """
    Revoke a workspace API key; revoking a revoked key changes nothing.

    :raises NotFound: no such key
    """
    with transaction.atomic():
        key = ApiKey.objects.select_for_update().filter(id=key_id).first()
        if key is None:
            raise NotFound("no such API key")
        if key.revoked_at is None:
            keys.revoke_api_key(key=key)
            _audit(actor=actor, action="api_key_revoked", target=f"api_key:{key.id}", now=now, name=key.name, prefix=key.prefix)
    return key
