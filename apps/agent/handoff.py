"""
Who answers the customer: the agent, nobody yet, or one person (PRODUCT.md "Human handoff").

Every change of control is an entry of the log, appended under the conversation's row lock, so
exactly one taker wins and replay shows who held the conversation when. A change that takes control
from the agent withdraws what a waiting run asked for in the same commit; a running run finds out
at its next step boundary (`apps/agent/runner/control.py`) and stops there.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from apps.agent import followups
from apps.agent import hours as office_hours
from apps.agent.statements import assistant_config
from apps.conversations import actions as conversation_actions
from apps.conversations import broadcast
from apps.conversations.errors import (
    BadInput,
    ControlConflict,
    ConversationIsCompleted,
    HandoffUnavailable,
)
from apps.conversations.models import ControlChange, Conversation, EmailFollowUp
from apps.conversations.queries import CONTROL_FIELDS, control
from apps.ledger import store
from apps.ledger.identities import InvalidPersona, parse_persona
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ControlReturned,
    ControlTaken,
    HandoffCancelled,
    HandoffDetails,
    HandoffRequested,
    HandoffTimedOut,
    StaffMessage,
    StaffNote,
    TurnHandedOff,
)
from apps.people import presence
from apps.runs.models import WorkflowLog

HANDOFF_DEFAULTS = {
    "enabled": False,
    "model_tool": False,
    "queue_timeout_seconds": 600,
    "queued_message": "A person will be with you shortly.",
    "unavailable_message": "No one is free right now; I'll keep helping.",
    "hours": None,  # always within hours (apps/agent/hours.py)
}


def handoff_settings(config: dict[str, Any]) -> dict[str, Any]:
    """An assistant's handoff settings; an assistant stored before they existed has the defaults."""
    return {**HANDOFF_DEFAULTS, **(config.get("handoff") or {})}


def offers_handoff_tool(config: dict[str, Any]) -> bool:
    """Whether the model is offered `handoff_to_human` (both `handoff.enabled` and `handoff.model_tool`)."""
    settings = handoff_settings(config)
    return bool(settings["enabled"] and settings["model_tool"])


WITHDRAWN = "handed to a person"
MAX_REASON = 500
MAX_NAME = 200


def control_of(conversation: Conversation) -> dict[str, Any]:
    """The conversation's `control`, as every state shows it."""
    return control({name: getattr(conversation, name) for name in CONTROL_FIELDS})


def control_words(kind: str, *, name: str, text: str, unavailable_message: str) -> str:
    """
    A change of control in the customer's words ("Dana joined"): the transcript's line on the
    customer's page, and the same line in the staff panel's transcript.

    A fact of the past, true whatever came after (a time-out, a take-over); the waiting words
    (`queued_message`) are shown under the composer only while the request waits.
    """
    name = name or "A person"
    return {
        "handoff_requested": "A person was asked to join",
        "control_taken": f"{name} joined",
        "control_returned": f"{name} handed you back to the assistant",
        "handoff_timed_out": text or unavailable_message,
        "handoff_cancelled": "Went back to the assistant",
    }[kind]


def available(config: dict[str, Any]) -> bool:
    """Whether the assistant lets a conversation be handed to a person (`handoff.enabled`)."""
    return bool(handoff_settings(config)["enabled"])


def _email(value: Any) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str) or len(value) > 254:
        raise BadInput("email must be an address of at most 254 characters")
    try:
        validate_email(value.strip())
    except ValidationError:
        raise BadInput(f"{value.strip()[:80]} is not an email address") from None
    return value.strip()


def _reason(value: Any, what: str = "reason") -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_REASON:
        raise BadInput(f"{what} must be text of at most {MAX_REASON} characters")
    conversation_actions.check_clean(value, what)
    return value.strip()


def check_staff(staff: Any, name: Any = None, *, what: str = "staff") -> tuple[str, str]:
    """A staff persona (`staff:<id>`) and the name people see. :raises BadInput: either is malformed"""
    try:
        persona = parse_persona(staff)
    except InvalidPersona:
        persona = None
    if persona is None or persona.provider != "staff":
        raise BadInput(f"{what} must be a staff persona like staff:dana")
    if name is not None and (not isinstance(name, str) or len(name) > MAX_NAME):
        raise BadInput(f"name must be text of at most {MAX_NAME} characters")
    name = (name or "").strip()
    conversation_actions.check_clean(name, "name")
    return staff, name


def _append(conversation: Conversation, events: list, *, actor: str, now: datetime, turn_id: str = "") -> None:
    recorded = store.append(conversation, events, turn_id=turn_id, actor=actor, now=now)
    broadcast.on_commit(str(conversation.id), recorded[-1].seq)


def _withdraw(conversation: Conversation, *, actor: str, now: datetime) -> None:
    """
    End the waiting run's turn, withdrawing each request it waits for (`turn_handed_off`), in the caller's transaction.

    A running run is not touched here: its writer stops at its next step boundary.
    """
    run = (WorkflowLog.objects.filter(conversation_id=conversation.id, status="waiting")
           .order_by("-dispatched_seq").first())
    if run is None:
        return
    _append(conversation, [TurnHandedOff(run_id=run.run_id, call_ids=list(run.pending), reason=WITHDRAWN)],
            actor=actor, now=now, turn_id=run.turn_id)


def _locked(conversation_id: str) -> Conversation:
    conversation = conversation_actions.locked(conversation_id, with_assistant=True)
    if conversation.status == "completed":
        raise ConversationIsCompleted()
    return conversation


def team(config: dict[str, Any], now: datetime) -> dict[str, Any]:
    """
    Whether the customer may be promised a person now: `staff_online` (a member of the team is at
    the panel, not away), `within_hours` (the assistant's `handoff.hours`), `promised` (both), and
    when it is not, `back` (when the hours open next, in the customer's words; "" while within them).
    """
    hours = handoff_settings(config)["hours"]
    inside = office_hours.within(hours, now)
    online = presence.anyone_online(now)
    back = ""
    if not inside:
        opens = office_hours.next_opening(hours, now)
        back = office_hours.describe(opens, hours, now) if opens else ""
    return {"staff_online": online, "within_hours": inside, "promised": online and inside, "back": back}


def request_handoff(*, conversation_id: str, source: str, requested_by: str, reason: Any = None, now: datetime) -> dict[str, Any]:
    """
    Ask for a person: agent → queued. Asking again while queued or human changes nothing.

    The entry records whether anyone could be promised (`team`): the customer is told, and the
    `handoff.requested` webhook carries it. Returns the control after it.
    :raises HandoffUnavailable: the assistant has no `handoff.enabled`
    :raises ConversationIsCompleted: the conversation is read-only
    """
    reason = _reason(reason)
    with transaction.atomic():
        conversation = _locked(conversation_id)
        if not available(conversation.assistant.config):
            raise HandoffUnavailable()
        if conversation.control_mode != "agent":
            return control_of(conversation)
        _withdraw(conversation, actor=requested_by, now=now)
        told = team(conversation.assistant.config, now)
        _append(conversation, [HandoffRequested(source=source, requested_by=requested_by, reason=reason,
                                                staff_online=told["staff_online"], within_hours=told["within_hours"])],
                actor=requested_by, now=now)
        return control_of(_fresh(conversation))


def leave_details(*, conversation_id: str, persona: str, reason: Any = None, email: Any = None, now: datetime) -> dict[str, Any]:
    """
    The waiting customer says why they want a person, or leaves an email address for the reply. Returns the control after it.

    :raises BadInput: an over-long reason, an address that is not one, or neither given
    :raises ControlConflict: nobody is being waited for (the request was taken, timed out or withdrawn)
    """
    reason = _reason(reason)
    email = _email(email)
    if not reason and not email:
        raise BadInput("say why you want a person, or leave an email address for the reply")
    with transaction.atomic():
        conversation = _locked(conversation_id)
        if conversation.control_mode != "queued":
            raise ControlConflict("Nobody is being waited for in this conversation any more.", holder=control_of(conversation)["staff"])
        _append(conversation, [HandoffDetails(persona=persona, reason=reason, email=email)], actor=persona, now=now)
        return control_of(_fresh(conversation))


def cancel_handoff(*, conversation_id: str, persona: str, now: datetime) -> dict[str, Any]:
    """
    The customer stops waiting and goes back to the assistant: queued → agent. Returns the control after it.

    :raises ControlConflict: a person took the conversation meanwhile (they answer now), or nobody was waited for
    """
    with transaction.atomic():
        conversation = _locked(conversation_id)
        if conversation.control_mode != "queued":
            raise _conflict(conversation) if conversation.control_mode == "human" else \
                ControlConflict("The assistant has this conversation already.", holder=None)
        _append(conversation, [HandoffCancelled(persona=persona)], actor=persona, now=now)
        return control_of(_fresh(conversation))


def queue_place(requested_at: datetime, now: datetime) -> dict[str, Any]:
    """
    A waiting request's place in the queue (1: next) and the expected wait in seconds, from recent
    waits (`expected_wait`; None before there are any).
    """
    ahead = Conversation.objects.filter(control_mode="queued", control_requested_at__lt=requested_at).count()
    return {"position": ahead + 1, "expected_seconds": expected_wait(now)}


WAIT_SAMPLE = 20


def expected_wait(now: datetime) -> int | None:
    """The median wait of the last WAIT_SAMPLE requests a person took within the past week, in seconds, or None."""
    changes = (ControlChange.objects.filter(created_at__gte=now - timedelta(days=7),
                                            kind__in=("handoff_requested", "control_taken"))
               .order_by("-created_at").values_list("conversation_id", "kind", "created_at")[:20 * WAIT_SAMPLE])
    waits, taken = [], {}
    for cid, kind, at in changes:  # newest first: a take, then the request it answered
        if kind == "control_taken":
            taken[cid] = at
        elif cid in taken:
            waits.append((taken.pop(cid) - at).total_seconds())
            if len(waits) == WAIT_SAMPLE:
                break
    return int(statistics.median(waits)) if waits else None


def take_control(*, conversation_id: str, staff: str, name: Any = None, reason: Any = None, from_: Any = None,
                 now: datetime) -> dict[str, Any]:
    """
    A person takes the conversation: agent | queued → human. Exactly one taker wins, under the row lock.

    Taking it from a colleague who holds it needs `from_`, that colleague: the change happens only
    while they still hold it, so two people rescuing one conversation at once do not take it from
    each other. Taking it again by its holder changes nothing.
    :raises ControlConflict: another person holds it (`holder` names them), or `from_` no longer does
    :raises ConversationIsCompleted: the conversation is read-only
    """
    staff, name = check_staff(staff, name)
    from_ = _colleague(from_)
    reason = _reason(reason)
    with transaction.atomic():
        conversation = _locked(conversation_id)
        held_by = _held_by(conversation)
        if held_by == staff:
            return control_of(conversation)
        if held_by and held_by != from_:
            raise _conflict(conversation)
        _withdraw(conversation, actor=staff, now=now)
        _append(conversation, [ControlTaken(staff=staff, name=name or staff.removeprefix("staff:"), reason=reason,
                                            from_=held_by or None)], actor=staff, now=now)
        return control_of(_fresh(conversation))


def assign_control(*, conversation_id: str, staff: str, to: Any, to_name: Any = None, from_: Any = None,
                   now: datetime) -> dict[str, Any]:
    """
    `staff` hands the conversation to a named colleague, `to`, who then holds it: agent | queued | human → human.

    Its holder may hand it on; anyone else names the holder in `from_`, as a take-over does.
    Handing it to whoever holds it changes nothing.
    :raises ControlConflict: another person holds it (`holder` names them), or `from_` no longer does
    :raises ConversationIsCompleted: the conversation is read-only
    """
    staff, _ = check_staff(staff)
    to, to_name = check_staff(to, to_name, what="to")
    from_ = _colleague(from_)
    with transaction.atomic():
        conversation = _locked(conversation_id)
        held_by = _held_by(conversation)
        if held_by == to:
            return control_of(conversation)
        if held_by and held_by not in (staff, from_):
            raise _conflict(conversation)
        _withdraw(conversation, actor=staff, now=now)
        _append(conversation, [ControlTaken(staff=to, name=to_name or to.removeprefix("staff:"), from_=held_by or None,
                                            by=None if staff == to else staff)], actor=staff, now=now)
        return control_of(_fresh(conversation))


def return_control(*, conversation_id: str, staff: str, name: Any = None, note: Any = None, from_: Any = None,
                   now: datetime) -> dict[str, Any]:
    """
    Hand the conversation back to the assistant: human → agent, by its holder (a queued one by any staff).

    Someone else may hand back a colleague's conversation by naming them in `from_` (the panel
    offers it to admins): only while that colleague still holds it.
    :raises ControlConflict: another person holds it, or the agent has it already
    :raises ConversationIsCompleted: the conversation is read-only
    """
    staff, name = check_staff(staff, name)
    from_ = _colleague(from_)
    note = _reason(note, "note")
    with transaction.atomic():
        conversation = _locked(conversation_id)
        if conversation.control_mode == "agent":
            raise ControlConflict("The assistant has this conversation already.", holder=None)
        held_by = _held_by(conversation)
        if held_by and held_by not in (staff, from_):
            raise _conflict(conversation)
        # The holder is named as the customer knew them, unless they give another name now.
        name = name or (conversation.control_name if held_by == staff else "") or staff.removeprefix("staff:")
        _append(conversation, [ControlReturned(staff=staff, name=name, note=note, from_=None if held_by in ("", staff) else held_by)],
                actor=staff, now=now)
        return control_of(_fresh(conversation))


def _held_by(conversation: Conversation) -> str:
    """The staff persona who holds the conversation, or "" while the agent has it or it waits for a person."""
    return conversation.control_staff if conversation.control_mode == "human" else ""


def _colleague(from_: Any) -> str:
    """The `from_` of a change: the staff persona the caller believes holds the conversation, or ""."""
    return "" if from_ in (None, "") else check_staff(from_, what="from")[0]


def staff_message(*, conversation_id: str, staff: str, text: Any, now: datetime, origin: str = "") -> dict[str, Any]:
    """
    A reply by the person who holds control. Returns the message as the state shows it.

    While the customer's address stands (they left one waiting), the reply also goes to it by
    email, from an outbox row of this transaction; `origin` (scheme://host) starts the link in it.

    :raises ControlConflict: this persona does not hold the conversation
    :raises BadInput: no text, or too long
    """
    staff, _ = check_staff(staff)
    conversation_actions.check_message(text)
    with transaction.atomic():
        conversation = _locked(conversation_id)
        if _held_by(conversation) != staff:
            raise _conflict(conversation)
        message_id = conversation_actions.new_id("msg")
        event = StaffMessage(message_id=message_id, text=text, staff=staff, name=conversation.control_name)
        recorded = store.append(conversation, [event], turn_id="", actor=staff, now=now)
        broadcast.on_commit(str(conversation.id), recorded[-1].seq)
        if conversation.control_email:
            _follow_up(conversation, event, origin=origin, now=now)
        return {"id": message_id, "role": "staff", "text": text, "turn_id": "", "seq": recorded[-1].seq,
                "created_at": recorded[-1].created_at,
                "author": {"kind": "staff", "id": staff, "name": conversation.control_name or staff}}


def staff_note(*, conversation_id: str, staff: str, name: Any = None, text: Any, now: datetime) -> dict[str, Any]:
    """
    An internal note by any staff member, whoever holds the conversation: for the staff only.

    It is an entry of the log like every other (signed, replayed), in a store of its own that no
    customer's state and no model request reads. Returns the note as the panel shows it.
    :raises BadInput: no text, or too long
    :raises ConversationIsCompleted: the conversation is read-only
    """
    staff, name = check_staff(staff, name)
    conversation_actions.check_message(text)
    with transaction.atomic():
        conversation = _locked(conversation_id)
        note_id = conversation_actions.new_id("note")
        _append(conversation, [StaffNote(note_id=note_id, text=text, staff=staff, name=name or staff.removeprefix("staff:"))],
                actor=staff, now=now)
        return {"id": note_id, "text": text, "staff": staff, "name": name}


def _follow_up(conversation: Conversation, event: StaffMessage, *, origin: str, now: datetime) -> None:
    EmailFollowUp.objects.create(conversation=conversation, message_id=event.message_id, to=conversation.control_email,
                                 persona=conversation.control_email_persona, name=event.name, text=event.text, origin=origin[:300],
                                 next_attempt_at=now, created_at=now)
    transaction.on_commit(followups.wake)


def _conflict(conversation: Conversation) -> ControlConflict:
    holder = control_of(conversation)["staff"]
    if holder is None:
        return ControlConflict("Take the conversation over first: nobody holds it.", holder=None)
    return ControlConflict(f"{holder['name']} already has this conversation.", holder=holder)


def _fresh(conversation: Conversation) -> Conversation:
    """The row after this transaction's appends (their projection updated it, not the instance)."""
    return Conversation.objects.get(id=conversation.id)


def time_out_handoffs(*, now: datetime) -> int:
    """
    Return to the agent every queued conversation that nobody took within its `handoff.queue_timeout_seconds`.

    Run by each process's recovery loop: the queue's clock is the request's time in the record, so
    a restart loses no timeout. Returns how many timed out.
    """
    # A customer who left an address waits for the reply there: their request stays in the queue.
    queued = (Conversation.objects.filter(control_mode="queued", control_requested_at__isnull=False, control_email="")
              .select_related("assistant").order_by("control_requested_at")[:200])
    timed_out = 0
    for conversation in queued:
        settings = handoff_settings(conversation.assistant.config)
        if conversation.control_requested_at + timedelta(seconds=settings["queue_timeout_seconds"]) > now:
            continue
        with transaction.atomic():
            locked = conversation_actions.locked(str(conversation.id), with_assistant=True)
            if locked.control_mode != "queued" or locked.control_requested_at != conversation.control_requested_at \
                    or locked.control_email:
                continue  # taken, asked again or given an address meanwhile
            _append(locked, [HandoffTimedOut(requested_at=store.iso(locked.control_requested_at),
                                             timeout_seconds=settings["queue_timeout_seconds"],
                                             message=settings["unavailable_message"])],
                    actor="system", now=now)
            timed_out += 1
    return timed_out


def by_model(cid: str, run: WorkflowLog, call: Any, attempt: int, said: str) -> list:
    """
    The model asked for a person: the call's outcome, the run handed off and the request for a person, in one commit.

    `said` is the text of the round that made the call: the turn's reply, recorded on the run's end
    before the request so the transcript shows it above the waiting line. Offered only when the
    assistant's `handoff.enabled` and `model_tool` are set; a model that calls it anyway is told it
    failed, and goes on.
    """
    key = f"{run.turn_id}:{call.call_id}"
    started = ActionStarted(run_id=run.run_id, call_id=call.call_id, tool=call.tool, action="", arguments=call.arguments,
                            side_effecting=False, idempotency_key=key, attempt=attempt)
    if not handoff_settings(assistant_config(cid))["enabled"]:
        return [started, ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False,
                                        error="no person can be asked for in this conversation")]
    reason = str(call.arguments.get("reason") or "")[:500]
    return [
        started,
        ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=True, output={"handed_to": "a person"}),
        TurnHandedOff(run_id=run.run_id, reason=WITHDRAWN, reply=said, message_id=conversation_actions.new_id("msg") if said else ""),
        HandoffRequested(source="model", requested_by="agent", reason=reason, run_id=run.run_id),
    ]
