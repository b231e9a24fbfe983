"""
Human handoff (PRODUCT.md "Human handoff"): a person asked for, control taken and returned, and what
the customer and the staff write while a person, or nobody yet, has control.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from apps.ledger.types.base import EventKind, register


@register("handoff_requested")
@dataclass(frozen=True)
class HandoffRequested(EventKind):
    """
    Someone asked for a person: control goes from the agent to the queue.

    `source` is who asked: `customer` (Talk to a person), `application` (the API) or `model`
    (`handoff_to_human`, in the turn of `run_id`). `requested_by` is the persona, or `agent`.
    `staff_online` and `within_hours` say what the customer could be promised when they asked:
    whether a member of the team was online, and whether it was within the assistant's office hours.
    """

    source: str
    requested_by: str
    reason: str = ""
    run_id: str = ""
    staff_online: bool | None = None
    within_hours: bool | None = None

    added: ClassVar[tuple[str, ...]] = ("staff_online", "within_hours")


@register("handoff_details")
@dataclass(frozen=True)
class HandoffDetails(EventKind):
    """
    While waiting for a person, the customer says why, or leaves an email address for the reply.

    A reply a person writes while the address stands is also sent to it; a request with an address
    stays in the queue past `handoff.queue_timeout_seconds`, since its answer no longer needs the
    customer at the page.
    """

    persona: str
    reason: str = ""
    email: str = ""


@register("handoff_cancelled")
@dataclass(frozen=True)
class HandoffCancelled(EventKind):
    """The customer stopped waiting for a person and went back to the assistant: queued → agent."""

    persona: str


@register("control_taken")
@dataclass(frozen=True)
class ControlTaken(EventKind):
    """
    A person takes the conversation over, from the queue, straight from the agent or from a colleague.

    `from_` (`from` in the payload) is the colleague who held it until then; `by` is who made the
    change when it is not the new holder: a conversation handed to a named colleague.
    """

    staff: str  # staff:<id>
    name: str = ""
    reason: str = ""
    from_: str | None = None
    by: str | None = None

    added: ClassVar[tuple[str, ...]] = ("from_", "by")
    spelled: ClassVar[dict[str, str]] = {"from_": "from"}


@register("control_returned")
@dataclass(frozen=True)
class ControlReturned(EventKind):
    """
    Control goes back to the agent; `note` is for the model, which reads it with the human part of the history.

    `from_` (`from` in the payload): the colleague who held it, when someone else (an admin) handed it back.
    """

    staff: str
    name: str = ""
    note: str = ""
    from_: str | None = None

    added: ClassVar[tuple[str, ...]] = ("from_",)
    spelled: ClassVar[dict[str, str]] = {"from_": "from"}


@register("staff_note")
@dataclass(frozen=True)
class StaffNote(EventKind):
    """An internal note by a staff member: in the log and the staff panel, never shown to the customer nor read by the model."""

    note_id: str
    text: str
    staff: str  # staff:<id>
    name: str = ""


@register("handoff_timed_out")
@dataclass(frozen=True)
class HandoffTimedOut(EventKind):
    """Nobody took the conversation within `handoff.queue_timeout_seconds`: the agent answers again."""

    requested_at: str
    timeout_seconds: int
    message: str = ""  # the assistant's `handoff.unavailable_message`, as the customer was shown it


@register("turn_handed_off")
@dataclass(frozen=True)
class TurnHandedOff(EventKind):
    """
    Control left the agent while a run was open: the run stops and its pending requests are withdrawn.

    `call_ids` are the requests that waited for an answer (none for a run stopped between steps);
    an answer to one of them later gets 409. `interrupted` are the calls whose action started and
    never finished because its writer died: actions that change nothing outside (a side effect
    would make the turn ambiguous instead), closed here since the stopped run will not run them again.
    `reply` (with its `message_id`) is what the model said in the round that asked for a person
    ("Of course, I'm asking a person to join."): the turn's reply, a message of the transcript.
    """

    added: ClassVar[tuple[str, ...]] = ("interrupted", "reply", "message_id")

    run_id: str
    call_ids: list = field(default_factory=list)
    reason: str = ""
    interrupted: list = field(default_factory=list)
    reply: str = ""
    message_id: str = ""


@register("customer_message")
@dataclass(frozen=True)
class CustomerMessage(EventKind):
    """A customer's message while a person, or nobody yet, has control: stored and shown, no run."""

    message_id: str
    text: str
    edge: str
    caller: str = ""
    idempotency_key: str = ""


@register("staff_message")
@dataclass(frozen=True)
class StaffMessage(EventKind):
    """A reply written by the person who holds control."""

    message_id: str
    text: str
    staff: str
    name: str = ""
