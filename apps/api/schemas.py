"""
The bodies more than one resource of the v1 API answers with: the error, the conversation state (a
read of messages, the answer to results) and what it is made of, and the persona and message fields.

Each resource's own bodies are in its module (apps/api/conversations.py, handoff.py, …); the OpenAPI
document is generated from them all.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import ConfigDict, Field

from apps.conversations.actions import MAX_MESSAGE_CHARS
from apps.ledger.identities import PATTERN as PERSONA_PATTERN
from apps.runs import machine

Persona = Annotated[
    str,
    Field(pattern=PERSONA_PATTERN, description="provider:external_id or provider:scope:external_id", examples=["shop:customer-42"]),
]
Message = Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=r"\S", description="the user message")]
RunStatus = Literal[tuple(s.value for s in machine.RunStatus)]
ClientActionKind = Literal["client_tool", "approval", "question"]


# --- errors -------------------------------------------------------------------------------------
class AcceptedAnswer(Schema):
    call_id: str
    output: Any = Field(description="the accepted output")
    answered_by: str = Field(description="the persona whose answer was accepted")
    seq: int | None = Field(description="the log position of the accepted answer")
    answered_at: str | None


class ErrorDetail(Schema):
    model_config = ConfigDict(extra="allow")

    code: str = Field(description="stable snake_case error code", examples=["not_found"])
    message: str = Field(description="a human-readable explanation")
    problems: list[str] | None = Field(None, description="invalid_request, invalid_assistant_config: what is wrong, where")
    accepted: AcceptedAnswer | None = Field(None, description="action_result_conflict: the answer that was accepted first")
    holder: dict[str, str] | None = Field(None, description="control_conflict: the person who holds the conversation ({id, name}), if anyone")


class ErrorOut(Schema):
    error: ErrorDetail


# --- state --------------------------------------------------------------------------------------
class Author(Schema):
    kind: Literal["customer", "assistant", "staff"]
    id: str = Field(description="the customer's persona, `assistant:<id>`, or the staff persona (`staff:<id>`)")
    name: str = Field(description="the name people see")


class Citation(Schema):
    n: int = Field(description="the marker [n] in the reply's text")
    passage_id: str
    source_id: str
    title: str
    version: int
    url: str | None = None


class MessageOut(Schema):
    model_config = ConfigDict(extra="allow")

    id: str
    role: Literal["user", "assistant", "staff"] = Field(description="staff: a reply by the person who held control")
    text: str
    turn_id: str
    author: Author
    seq: int
    created_at: str | None
    citations: list[Citation] = Field(
        default_factory=list, description="an assistant reply's sources: the knowledge passages its [n] markers name")
    offer_handoff: bool = Field(False, description="the reply's knowledge searches found nothing and the assistant offers a person "
                                                   "with it (`knowledge.no_answer: offer_handoff`): show Talk to a person")


class StaffRef(Schema):
    id: str = Field(description="staff:<id>", examples=["staff:dana"])
    name: str


class Control(Schema):
    """Who answers the customer (PRODUCT.md "Human handoff")."""

    mode: Literal["agent", "queued", "human"]
    staff: StaffRef | None = Field(description="the person who holds it (human)")
    requested_at: str | None = Field(description="when a person was asked for (queued, and human after a request)")
    since: str = Field(description="when this control began")
    reason: str | None


class ControlChangeOut(Schema):
    seq: int
    kind: Literal["handoff_requested", "control_taken", "control_returned", "handoff_timed_out", "handoff_cancelled"]
    staff: StaffRef | None
    text: str = Field(description="the request's reason, the hand-back note, or the message the customer was shown")
    created_at: str | None


class ReattemptOf(Schema):
    """The earlier attempt at the same action whose outcome is unknown (PRODUCT.md rule 8)."""

    turn_id: str
    call_id: str
    attempted_at: str = Field(description="when the earlier attempt started (ISO 8601)")


class PendingClientAction(Schema):
    model_config = ConfigDict(extra="allow")

    call_id: str
    kind: ClientActionKind
    tool: str
    arguments: dict[str, Any]
    requested_at: str | None
    reattempt_of: ReattemptOf | None = Field(
        None,
        description="present when this approval is for a re-attempt of an action whose earlier attempt's outcome is unknown: "
        "it is sent with that attempt's Idempotency-Key, and may already have gone through",
    )
    approver: Literal["customer", "staff", "any"] | None = Field(
        None, description="approvals: who may answer it; `staff` takes a staff persona (`staff:<id>`), a customer's answer is 403 approver_required")
    expires_at: str | None = Field(None, description="when it expires unless answered (an approval with `expires_in_seconds`, "
                                                     "a simple run's request); null: never")
    editable: list[str] | None = Field(None, description="approvals: the arguments the approver may change with `edited_arguments`")
    title: str = Field("", description="the request in people's words, as the page shows it: while it waits, as its answerer is asked it "
                                       "(\"Shall I refund $20 for order A-1?\"; a staff approval as the team's card says it); once "
                                       "answered, what was asked (\"Refund $20 for order A-1\")")


class AnsweredClientAction(PendingClientAction):
    status: str
    output: Any
    answered_by: str
    answered_at: str | None


class ToolSummaryItem(Schema):
    model_config = ConfigDict(extra="allow")

    tool: str
    kind: str
    state: str


class ProgressItem(Schema):
    model_config = ConfigDict(extra="allow")

    text: str
    at: str | None
    seq: int | None


class Condition(Schema):
    type: Literal["Ready", "Progressing", "Degraded"]
    status: Literal["True", "False"]
    reason: str
    message: str
    last_transition_time: str | None


class StateOut(Schema):
    """A conversation's messages (committed turns only) and its reconnect fields."""

    model_config = ConfigDict(extra="allow")

    conversation_id: str
    conversation_status: Literal["active", "completed"]
    completed_at: str | None
    message_count: int
    seq: int = Field(description="the log head; also the ETag")
    messages: list[MessageOut]
    run_id: str | None
    run_status: RunStatus | None
    turn_id: str | None
    quarantined: bool
    error: str
    pending_client_actions: list[PendingClientAction]
    answered_client_actions: list[AnsweredClientAction]
    tool_summary: list[ToolSummaryItem]
    progress: list[ProgressItem]
    control: Control
    control_changes: list[ControlChangeOut] = Field(description="the changes of control after `after_seq`, for the transcript's lines")
    # People, workspaces and lifecycle (docs/people.md)
    phase: Literal["open", "closed", "completed"] | None = Field(None, description="closed: idle; the next turn reopens it")
    display_phase: str | None = Field(None, description="Active, Waiting, Interrupted, Closed or Completed")
    conditions: list[Condition] = Field(default_factory=list, description="Ready, Progressing, Degraded")
    last_turn_at: str | None = None
    visibility: Literal["private", "shared"] | None = None
    participants: list[dict[str, Any]] = Field(default_factory=list, description="the owner, then active participants")
    memory: list[dict[str, Any]] = Field(default_factory=list, description="facts the agent remembers (active only)")
    artifacts: list[dict[str, Any]] = Field(default_factory=list)
    artifact_recovery: list[dict[str, Any]] = Field(
        default_factory=list,
        description="per artifact tool call: pending, unacknowledged, acknowledged, missing, duplicate, failed or unrecorded",
    )


class ResultsOut(Schema):
    run_id: str
    accepted: list[str] = Field(description="call ids accepted by this request")
    already: list[str] = Field(description="call ids whose identical answer had been accepted before")
    run_resumes: bool = Field(description="every pending call of the run is answered; the run goes on")
    state: StateOut
