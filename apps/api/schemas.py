"""Request and response bodies of the v1 API; the OpenAPI document is generated from these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import BeforeValidator, ConfigDict, Field

from apps.conversations.actions import MAX_MESSAGE_CHARS
from apps.ledger.identities import PATTERN as PERSONA_PATTERN
from apps.runs import machine

Persona = Annotated[
    str,
    Field(pattern=PERSONA_PATTERN, description="provider:external_id or provider:scope:external_id", examples=["shop:customer-42"]),
]
Message = Annotated[str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=r"\S", description="the user message")]
def _whole_number(value: Any) -> Any:
    """A whole number as JSON Schema counts them (7.0 is the integer 7); never a string or a boolean."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a whole number")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("must be a whole number")
        return int(value)
    return value


Seq = Annotated[int, Field(ge=0, description="a log position (`seq`)"), BeforeValidator(_whole_number)]
Permission = Literal["view", "write", "answer_client_actions", "approve"]
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


# --- assistants ---------------------------------------------------------------------------------
class AssistantConfigIn(Schema):
    """An assistant configuration (PRODUCT.md "Assistant configuration"); validated as a whole."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "name": "Acme support",
                    "allow_conversation_completion": True,
                    "model": {
                        "provider": "scripted",
                        "rules": [{"match": "when", "steps": [{"call": "pick_date", "arguments": {}}, {"say": "Booked for {result}."}]}],
                        "fallback": [{"say": "You said: {message}"}],
                    },
                    "tools": [{"name": "pick_date", "kind": "client"}],
                },
                {
                    "name": "Acme support (OpenAI-compatible model)",
                    "instructions": "You are Acme's support agent. Be brief. Look orders up before answering about them.",
                    "model": {
                        "provider": "openai",
                        "model": "gpt-4o-mini",
                        "stream": True,
                        "temperature": 0.2,
                        "max_output_tokens": 400,
                        "tool_choice": "auto",
                        "timeout_seconds": 60,
                    },
                    "tools": [{"name": "lookup_order", "kind": "server", "action": "echo",
                               "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                              "required": ["order_id"]}}],
                },
            ]
        },
    )

    # Typed for the document only: check_config validates the whole and names every problem.
    name: Any = Field(None, description="display name (required)",
                      json_schema_extra={"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"})
    allow_conversation_completion: Any = Field(None, description="default false", json_schema_extra={"type": "boolean"})
    step_budget: Any = Field(None, description="model/tool round trips per turn, 1–64 (default 8)",
                             json_schema_extra={"type": "integer", "minimum": 1, "maximum": 64})
    idle_timeout_seconds: Any = Field(None, description="0 disables idle close; null: the deployment's",
                                      json_schema_extra={"type": ["integer", "null"], "minimum": 0})
    allowed_origins: Any = Field(None, description="origins allowed to embed the widget: scheme://host[:port]",
                                 json_schema_extra={"type": "array", "items": {
                                     "type": "string", "pattern": r"^https?://[A-Za-z0-9.-]+(:[1-9][0-9]{0,4})?$"}})
    instructions: Any = Field(
        None, description="the model's system message, sent first (remembered facts follow it); at most 20,000 characters",
        json_schema_extra={"type": "string", "maxLength": 20000},
    )
    model: Any = Field(
        None, json_schema_extra={"type": "object", "required": ["provider"],
                                 "properties": {"provider": {"enum": ["scripted", "openai"]}}},
        description='{"provider": "scripted", "rules": […], "fallback": […]} or {"provider": "openai", "model": …}. '
        "Either may set: temperature (0–2), max_output_tokens (≥ 1, sent as max_tokens), tool_choice (auto, none, "
        "required or one of the assistant's tool names; a forced tool is forced until the turn has called a tool), "
        "timeout_seconds (> 0, default 60: how long to wait for the model service, between chunks when streaming); "
        "openai also takes stream (true or false), base_url (one of the deployment's model endpoints) and context_tokens "
        "(≥ 256: the model's context window; the history sent keeps the newest turns that fit, docs/api.md). "
        "The scripted model ignores these settings.",
    )
    tools: Any = Field(
        None, description="server and client tools. display_name and summary are what people see of a call instead of the "
        "tool's name and raw arguments (the exact arguments stay one click away; approval binds to them): summary is a "
        "template naming only the tool's parameters, like \"Refund {amount} for order {order_id}\". A date parameter "
        "(format date) may set minimum and maximum (or min and max) as YYYY-MM-DD or \"today\"; an answer outside them is refused",
        json_schema_extra={"type": "array", "items": {"type": "object", "required": ["name", "kind"], "properties": {
            "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"},
            "kind": {"enum": ["server", "client"]},
            "action": {"type": "string", "description": "server tools: echo, fail, sleep, webhook, …"},
            "url": {"type": "string", "description": "webhook: the http(s) URL it POSTs to"},
            "requires_approval": {"type": "boolean"},
            "answered_by": {"enum": ["person", "application"], "description": "client tools (default person)"},
            "description": {"type": "string"},
            "parameters": {"type": "object", "description": "a JSON schema object"},
            "display_name": {"type": "string", "minLength": 1, "maxLength": 80, "description": "what people call the tool"},
            "summary": {"type": "string", "minLength": 1, "maxLength": 300,
                        "description": "a call in people's words: {name} placeholders of the tool's parameters only"},
        }}},
    )
    mode: Any = Field(None, description="agent (default) or simple", json_schema_extra={"enum": ["agent", "simple"]})
    required_approver: Any = Field(None, description="the persona that must answer approvals", json_schema_extra={"type": "string"})
    handoff: Any = Field(
        None, description="human handoff (docs/handoff.md): enabled (default false) lets the customer, the application or the "
        "model ask for a person; model_tool offers the model handoff_to_human; a request nobody takes within "
        "queue_timeout_seconds returns to the agent (unless the customer left an email address for the reply), and the "
        "customer is shown unavailable_message; hours is the team's weekly schedule in a time zone, with closed dates: "
        "outside it, or with no staff member online, the customer is not promised a person",
        json_schema_extra={"type": "object", "additionalProperties": False, "properties": {
            "enabled": {"type": "boolean"}, "model_tool": {"type": "boolean"},
            "queue_timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 604800},
            "queued_message": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": r"\S"},
            "unavailable_message": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": r"\S"},
            "hours": {"type": ["object", "null"], "additionalProperties": False, "required": ["time_zone", "weekly"], "properties": {
                "time_zone": {"type": "string", "description": "an IANA time zone, such as Europe/London"},
                "weekly": {"type": "object", "additionalProperties": False, "properties": {
                    day: {"type": "array", "items": {"type": "string", "pattern": r"^\d\d:\d\d-\d\d:\d\d$"}}
                    for day in ("mon", "tue", "wed", "thu", "fri", "sat", "sun")}},
                "closed": {"type": "array", "maxItems": 400, "items": {"type": "string", "format": "date"}},
            }},
        }},
    )
    knowledge: Any = Field(
        None, description="answers from the workspace's knowledge sources (docs/knowledge.md): enabled (default false) offers "
        "the model search_knowledge; sources is \"all\" or a list of source ids; max_passages per search; no_answer is "
        "say or offer_handoff (with handoff.enabled, Talk to a person shows with a reply whose searches found nothing)",
        json_schema_extra={"type": "object", "additionalProperties": False, "properties": {
            "enabled": {"type": "boolean"},
            "sources": {"oneOf": [{"const": "all"}, {"type": "array", "items": {"type": "string"}}]},
            "max_passages": {"type": "integer", "minimum": 1, "maximum": 20},
            "no_answer": {"enum": ["say", "offer_handoff"]},
        }},
    )

    def config(self) -> dict[str, Any]:
        """The configuration exactly as sent: the declared keys that were present plus any others."""
        return {**self.model_dump(exclude_unset=True), **(self.model_extra or {})}


class AssistantOut(Schema):
    id: str = Field(description="the assistant id (UUID)")
    name: str


# --- conversations and turns --------------------------------------------------------------------
class Directive(Schema):
    """Edge policy recorded with the turn (`ingress_directive`); API keys only."""

    model_config = ConfigDict(extra="forbid")

    step_budget: Annotated[int, Field(strict=True, ge=1, le=64)] | None = None
    required_approver: Persona | Literal["staff"] | None = Field(
        None, description='the persona that must answer the turn\'s approvals, or "staff": any member of the team (raises every approval to the team)')


class StartIn(Schema):
    assistant: str = Field(description="the assistant id (UUID)")
    message: Message
    metadata: dict[str, Any] | None = Field(None, description="stored with the conversation (≤ 16 kB)")
    persona: Persona | None = Field(None, description="who starts it; defaults to the API key's own identity")
    directive: Directive | None = None


class StartOut(Schema):
    conversation_id: str
    turn_id: str
    run_id: str
    token: str = Field(description="a conversation token for the persona (Bearer or ?token=)")
    seq: int = Field(description="the log head after the first turn's batch one")


class TurnIn(Schema):
    message: Message
    expected_seq: Seq | None = Field(None, description="the head `seq` you saw; a moved head gives 409 turn_conflict")
    directive: Directive | None = None
    persona: Persona | None = Field(None, description="API keys only: who sends it")


class TurnOut(Schema):
    conversation_id: str
    turn_id: str
    run_id: str | None = Field(description="null while a person has the conversation or one was asked for: the message is stored, no run starts")
    seq: int


class ResultIn(Schema):
    call_id: Annotated[str, Field(min_length=1, max_length=100)]
    output: Any = Field(
        description='client tool: any JSON; approval: {"decision": "approve"|"deny", "reviewed": {"tool", "arguments"}, '
                    '"edited_arguments"?: {editable field: value}}; '
        'question: {"answer": str}. A question or client tool may be declined with {"declined": true}: the model '
        "receives that as the call's outcome"
    )


class ResultsIn(Schema):
    results: Annotated[list[ResultIn], Field(min_length=1, max_length=100, description="one result per call_id",
                                             json_schema_extra={"uniqueItems": True})]
    persona: Persona | None = Field(None, description="API keys only: who answers")


class TokenIn(Schema):
    persona: Persona
    permissions: list[Permission] | None = Field(None, description="default: all the persona was admitted with")
    edge: Literal["link", "widget", "api"] = Field("link", description="where the token will be used")


class ParticipantIn(Schema):
    persona: Persona
    permissions: list[Permission] | None = Field(None, description="default: all; must include view",
                                                 json_schema_extra={"contains": {"const": "view"}})


class ParticipantOut(Schema):
    persona: str
    permissions: list[str] | None = Field(None, description="what the participant may do (admission)")
    visibility: str | None = Field(None, description="the conversation's visibility after admission")
    revoked_tokens: int | None = Field(None, description="tokens revoked by the removal")


class MemoryFact(Schema):
    fact_id: str
    text: str
    persona: str = Field(description="who the fact was remembered for")
    turn_id: str
    remembered_at: str | None


class MemoryClearIn(Schema):
    model_config = ConfigDict(extra="forbid")  # a misspelt field must not mean "clear everything"

    fact_ids: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        None, description="the facts to clear; omitted: all of them"
    )


class MemoryClearOut(Schema):
    cleared: Any = Field(description="the cleared facts")


class TokenOut(Schema):
    token: str
    persona: str
    permissions: list[str]


class RevokeIn(Schema):
    token: Annotated[str, Field(min_length=1, max_length=500)]


class RevokeOut(Schema):
    revoked: bool


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


# --- artifacts (docs/people.md) -----------------------------------------------------------------
class ArtifactOut(Schema):
    """An artifact record: what a tool produced, where it came from, and whether it was received."""

    model_config = ConfigDict(extra="allow")

    artifact_id: str
    turn_id: str
    call_id: str
    name: str
    media_type: str
    sha256: str = Field(description="hex SHA-256 of the content")
    size: int
    source: dict[str, str] = Field(description="{identity, revision} of what it was made from")
    status: str = Field(description="created | acknowledged")
    acknowledged_by: str
    acknowledged_at: str | None


# --- outgoing webhooks (docs/webhooks.md) -------------------------------------------------------
class WebhookEndpointIn(Schema):
    url: str = Field(..., max_length=2000, description="https URL that receives the events; no user name or "
                     "password (deliveries are authenticated by their signature)")
    events: list[str] | None = Field(None, max_length=20, description="event types to send; absent or empty: all")
    description: str = Field("", max_length=500)


class WebhookEndpointOut(Schema):
    id: str
    url: str
    events: list[str]
    enabled: bool
    description: str


class WebhookEndpointCreatedOut(WebhookEndpointOut):
    secret: str = Field(..., description="`whsec_<base64>`, the signing secret; shown this once")


class WebhookDeliveryOut(Schema):
    id: str = Field(..., description="the `webhook-id` header of every attempt")
    type: str
    status: str = Field(..., description="pending | delivered | failed")
    attempts: int
    last_status_code: int | None
    next_attempt_at: str | None


class AcceptedOut(Schema):
    accepted: bool = True
    id: str = Field(..., description="the delivery's `webhook-id`")
