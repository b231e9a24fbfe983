"""
`/v1/agent/conversations/{id}/handoff`, `…/control`, `…/staff-messages`: asking for a person, who answers
the customer, and the replies of the person who does (PRODUCT.md "Human handoff", docs/handoff.md).
"""

from __future__ import annotations

from typing import Annotated, Literal

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict, Field

from apps.agent import handoff
from apps.api.operations import (
    BAD,
    DOCUMENTED_HEADERS,
    ERRORS,
    ConversationId,
    conversation_for,
    principal_of,
)
from apps.api.schemas import Control, ErrorOut, Message, MessageOut
from apps.conversations.errors import BadInput

router = Router()


class HandoffIn(Schema):
    model_config = ConfigDict(extra="forbid")

    reason: Annotated[str, Field(max_length=500)] | None = Field(None, description="why a person is wanted")


class HandoffDetailsIn(Schema):
    model_config = ConfigDict(extra="forbid")

    reason: Annotated[str, Field(max_length=500)] | None = Field(None, description="why a person is wanted")
    email: Annotated[str, Field(max_length=254)] | None = Field(None, description="an address for the reply, by email")


StaffPersona = Annotated[str, Field(pattern=r"^staff:[A-Za-z0-9_.@+\-]{1,100}$", description="staff:<id>", examples=["staff:dana"])]


class ControlIn(Schema):
    model_config = ConfigDict(extra="forbid")

    action: Literal["take", "return", "assign"]
    staff: StaffPersona = Field(description="who makes the change (take: the new holder)")
    name: Annotated[str, Field(max_length=200)] | None = Field(None, description="the name the customer sees (take)")
    note: Annotated[str, Field(max_length=500)] | None = Field(None, description="return: a note the model reads with the history")
    reason: Annotated[str, Field(max_length=500)] | None = Field(None, description="take: why")
    from_: StaffPersona | None = Field(
        None, alias="from",
        description="take, return, assign: the colleague who holds it now; the change is made only while they still do "
                    "(without it, only its holder may change a conversation a person holds)")
    to: StaffPersona | None = Field(None, description="assign: the colleague who gets it (required)")
    to_name: Annotated[str, Field(max_length=200)] | None = Field(None, description="assign: the name the customer sees for `to`")


class ControlOut(Schema):
    control: Control


class StaffMessageIn(Schema):
    model_config = ConfigDict(extra="forbid")

    staff: StaffPersona
    text: Message


class StaffMessageOut(Schema):
    message: MessageOut


@router.post(
    "/agent/conversations/{id}/handoff", response={200: ControlOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Ask for a person", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def request_handoff(request: HttpRequest, payload: HandoffIn, id: str = ConversationId):
    """
    Hand the conversation from the agent to the queue of people (conversation token or API key).

    A waiting run's pending requests are withdrawn; a running one stops at its next step. Asking
    again while queued or human changes nothing and answers with the current control. An assistant
    without `handoff.enabled` → 409 `handoff_unavailable`.
    """
    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    control = handoff.request_handoff(
        conversation_id=str(conversation.id), source="application" if principal.is_api_key else "customer",
        requested_by=principal.persona, reason=payload.reason, now=timezone.now(),
    )
    return {"control": control}


@router.post(
    "/agent/conversations/{id}/handoff/details", response={200: ControlOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="While waiting for a person: why, or an email address for the reply", tags=["handoff"],
    openapi_extra=DOCUMENTED_HEADERS,
)
def handoff_details(request: HttpRequest, payload: HandoffDetailsIn, id: str = ConversationId):
    """
    The waiting customer says why they want a person (the request's `reason`), or leaves an email
    address: each reply a person writes while it stands is also sent to it, and the request no
    longer times out (docs/handoff.md "Email follow-up"). 409 `control_conflict` when nobody is waited for.
    """
    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    control = handoff.leave_details(conversation_id=str(conversation.id), persona=principal.persona, reason=payload.reason,
                                    email=payload.email, now=timezone.now())
    return {"control": control}


@router.delete(
    "/agent/conversations/{id}/handoff", response={200: ControlOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Stop waiting for a person: back to the assistant", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def cancel_handoff(request: HttpRequest, id: str = ConversationId):
    """
    The customer goes back to the assistant while waiting (`handoff_cancelled`): queued → agent.
    409 `control_conflict` when a person took the conversation meanwhile (with `holder`) or the agent has it.
    """
    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    return {"control": handoff.cancel_handoff(conversation_id=str(conversation.id), persona=principal.persona,
                                              now=timezone.now())}


@router.post(
    "/agent/conversations/{id}/control", response={200: ControlOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Take over, or hand back to the assistant", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def control(request: HttpRequest, payload: ControlIn, id: str = ConversationId):
    """
    `take`: a person takes the conversation (API key). Exactly one taker wins; another gets 409
    `control_conflict` with `holder`. `return`: the holder hands it back to the assistant, with an
    optional `note` the model reads; anyone else gets 409 `control_conflict`. `assign`: `staff`
    hands it to a named colleague, `to`, who then holds it.

    A conversation a colleague holds is taken, handed back or handed on by someone else by naming
    that colleague in `from`: the change is made only while they still hold it, else 409
    `control_conflict` names who does.
    """
    principal = principal_of(request)
    principal.require_api_key()
    conversation = conversation_for(principal, id)
    cid, now = str(conversation.id), timezone.now()
    if payload.action == "take":
        out = handoff.take_control(conversation_id=cid, staff=payload.staff, name=payload.name, reason=payload.reason,
                                   from_=payload.from_, now=now)
    elif payload.action == "assign":
        if payload.to is None:
            raise BadInput("assign needs `to`: the staff persona who gets the conversation")
        out = handoff.assign_control(conversation_id=cid, staff=payload.staff, to=payload.to, to_name=payload.to_name,
                                     from_=payload.from_, now=now)
    else:
        out = handoff.return_control(conversation_id=cid, staff=payload.staff, name=payload.name, note=payload.note,
                                     from_=payload.from_, now=now)
    return {"control": out}


@router.post(
    "/agent/conversations/{id}/staff-messages", response={201: StaffMessageOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Reply as the person who holds the conversation", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def staff_message(request: HttpRequest, payload: StaffMessageIn, id: str = ConversationId):
    """A reply by the holder (API key); 409 `control_conflict` unless that persona holds control."""
    principal = principal_of(request)
    principal.require_api_key()
    conversation = conversation_for(principal, id)
    message = handoff.staff_message(conversation_id=str(conversation.id), staff=payload.staff, text=payload.text,
                                    now=timezone.now(), origin=f"{request.scheme}://{request.get_host()}")
    return Status(201, {"message": message})
