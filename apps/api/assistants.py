"""`/v1/assistants`: an assistant made from its JSON configuration (PRODUCT.md "Assistant configuration")."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema
from ninja.responses import Status
from pydantic import ConfigDict, Field

from apps.agent.actions import create_assistant
from apps.api.operations import BAD, linked, principal_of
from apps.api.schemas import ErrorOut

router = Router()


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


@router.post(
    "/assistants", response={201: AssistantOut, frozenset(BAD | {401, 403, 429}): ErrorOut},
    summary="Create an assistant", tags=["assistants"],
    openapi_extra=linked("201", {"StartConversation": {
        "operationId": "apps_api_views_start", "requestBody": {"assistant": "$response.body#/id", "message": "hello"}}}),
)
def create(request: HttpRequest, payload: AssistantConfigIn):
    """Create an assistant from its JSON configuration (API key). Invalid → 422 `invalid_assistant_config`."""
    principal_of(request).require_api_key()
    assistant = create_assistant(config=payload.config())
    return Status(201, {"id": str(assistant.id), "name": assistant.name})
