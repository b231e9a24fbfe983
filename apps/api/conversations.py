"""
`/v1/agent/conversations/…` and `/v1/runner/conversation/…/messages`: a conversation's start, its turns,
the answers to what a run asks, and the read of its messages and reconnect state.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

import orjson
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.http import parse_etags
from ninja import Header, Path, Query, Router, Schema
from ninja.responses import NinjaJSONEncoder, Status
from pydantic import BeforeValidator, ConfigDict, Field

from apps.agent import actions, answers
from apps.agent.state import conversation_state
from apps.api.auth import Principal
from apps.api.operations import (
    BAD,
    DOCUMENTED_HEADERS,
    ERRORS,
    RETRY_AFTER,
    ConversationId,
    conversation_for,
    conversation_id_for,
    linked,
    principal_of,
)
from apps.api.schemas import ErrorOut, Message, Persona, ResultsOut, StateOut
from apps.conversations import queries
from apps.conversations.errors import BadInput, NotFound

router = Router()

_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_SEQ = 2**31 - 1

IdempotencyKey = Header(
    None, alias="Idempotency-Key", pattern=_IDEMPOTENCY_KEY.pattern,
    description="1–200 visible ASCII characters; a retry with the same key and body returns the first answer, never a second turn",
)

_ETAG = {"ETag": {"description": 'the log head, e.g. `"42"`; send it back as If-None-Match', "required": True, "schema": {"type": "string"}}}


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


_CONVERSATION = {"id": "$response.body#/conversation_id"}
# What a started conversation's answer leads to: its id (and its first run's) in these operations.
STARTED_LINKS = {
    "ReadMessages": {"operationId": "apps_api_views_messages", "parameters": _CONVERSATION},
    "SendTurn": {"operationId": "apps_api_views_turn", "parameters": _CONVERSATION},
    "AnswerResults": {"operationId": "apps_api_views_results",
                      "parameters": {**_CONVERSATION, "run_id": "$response.body#/run_id"}},
    "ContinueConversation": {"operationId": "apps_api_views_continue_", "parameters": _CONVERSATION},
    "IssueToken": {"operationId": "apps_api_views_issue_token", "parameters": _CONVERSATION},
    "AddParticipant": {"operationId": "apps_api_views_add_participant", "parameters": _CONVERSATION},
    "ListMemory": {"operationId": "apps_api_views_list_memory", "parameters": _CONVERSATION},
    "ClearMemory": {"operationId": "apps_api_views_clear_memory", "parameters": _CONVERSATION},
    "RevokeToken": {"operationId": "apps_api_views_revoke_token", "parameters": _CONVERSATION,
                    "requestBody": {"token": "$response.body#/token"}},
}


_ENCODER = NinjaJSONEncoder()


def _json(response: HttpResponse, body: dict[str, Any]) -> HttpResponse:
    """
    Put `body` on the operation's response as JSON, as the declared schema would serialise it.

    For large bodies whose shape the query already guarantees: validating a thousand messages
    through pydantic costs more than reading them. Anything orjson refuses (integers beyond 64
    bits, non-string keys) goes through the renderer's own encoder.
    """
    try:
        response.content = orjson.dumps(body, default=_ENCODER.default, option=orjson.OPT_PASSTHROUGH_DATETIME)
    except orjson.JSONEncodeError:
        response.content = json.dumps(body, cls=NinjaJSONEncoder)
    return response


def _idempotency(principal: Principal, key: str | None, request: dict[str, Any]) -> actions.Idempotency | None:
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.match(key):
        raise BadInput("Idempotency-Key must be 1–200 visible ASCII characters")
    return actions.Idempotency(scope=principal.id, key=key, request=request)


def _check_directive_allowed(principal: Principal, directive: Directive | None) -> dict | None:
    if directive is None:
        return None
    principal.require_api_key()
    return directive.model_dump(exclude_none=True)


@router.post(
    "/agent/conversations", response={201: StartOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Start a conversation", tags=["conversations"], openapi_extra=linked("201", STARTED_LINKS),
)
def start(request: HttpRequest, payload: StartIn, idempotency_key: str | None = IdempotencyKey):
    """
    Start a conversation with its first turn (API key) and return a conversation token for the persona.

    `Idempotency-Key` makes retries safe: the same key and body give the same conversation.
    """
    principal = principal_of(request)
    principal.require_api_key()
    body = payload.model_dump(exclude_none=True)
    started = actions.start_conversation(
        assistant_id=payload.assistant, message=payload.message, persona=principal.acting_as(payload.persona),
        edge="api", now=timezone.now(), metadata=payload.metadata,
        directive=_check_directive_allowed(principal, payload.directive),
        idempotency=_idempotency(principal, idempotency_key, {"operation": "start", **body}),
    )
    return Status(201, started)


@router.post(
    "/agent/conversations/{id}/turns", response={202: TurnOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Send a user message (a new turn)", tags=["conversations"],
    openapi_extra=linked("202", {"AnswerResults": {"operationId": "apps_api_views_results", "parameters": {
        "id": "$request.path.id", "run_id": "$response.body#/run_id"}}}),
)
def turn(request: HttpRequest, payload: TurnIn, id: str = ConversationId, idempotency_key: str | None = IdempotencyKey):
    """
    Commit a new turn's user message; the run continues in the background.

    A message while the run waits for an answer (a client action, an approval, a question) declines
    what it waits for and is the next turn, as writing on the page does; a running turn is
    refused with 409 `turn_conflict`, and so is any turn when `expected_seq` is not the log's head.
    """
    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    body = payload.model_dump(exclude_none=True)
    started = actions.start_turn(
        conversation_id=str(conversation.id), message=payload.message, persona=principal.acting_as(payload.persona), edge=principal.edge,
        now=timezone.now(), expected_seq=payload.expected_seq, decline_pending=True,
        directive=_check_directive_allowed(principal, payload.directive),
        idempotency=_idempotency(principal, idempotency_key, {"operation": "turn", "conversation": str(conversation.id), **body}),
    )
    return Status(202, started)


@router.get(
    "/runner/conversation/{id}/messages",
    response={200: StateOut, 304: None, frozenset({401, 403, 404, 422, 429}): ErrorOut},
    summary="Read messages and reconnect state", tags=["conversations"],
    openapi_extra={"responses": {"200": {"headers": _ETAG}, "304": {"headers": _ETAG}, "429": {"headers": RETRY_AFTER}}},
)
def messages(
    request: HttpRequest, response: HttpResponse, id: str = ConversationId,
    after_seq: int = Query(0, ge=0, le=MAX_SEQ, description="only messages after this `seq`"),
    if_none_match: str | None = Header(None, alias="If-None-Match", description="the ETag of your last read: 304 if unchanged"),
):
    """
    Return the messages of committed turns and the reconnect fields.

    The strong `ETag` names the log head (and `after_seq`); send it back as `If-None-Match` to get
    `304 Not Modified` while nothing changed.
    """
    principal = principal_of(request)
    conversation_id = conversation_id_for(principal, id)

    def tag(seq: int) -> str:
        return f'"{seq}"' if after_seq == 0 else f'"{seq}-{after_seq}"'

    # The state is a projection of the log, so the head names it: an unchanged head is answered
    # from one read of the head, before the conversation is loaded or the state built.
    if if_none_match:
        head = queries.conversation_head(conversation_id)
        if head is None:
            raise NotFound("no such conversation")
        etag = tag(head)
        sent = parse_etags(if_none_match)
        if if_none_match.strip() == "*" or etag in sent or f"W/{etag}" in sent:
            not_modified = HttpResponse(status=304)
            not_modified["ETag"] = etag
            not_modified["Cache-Control"] = "no-cache"
            return not_modified
    conversation = conversation_for(principal, conversation_id, with_assistant=False)
    state = conversation_state(conversation, after_seq=after_seq)
    response["ETag"] = tag(state["seq"])
    response["Cache-Control"] = "no-cache"
    return _json(response, state)


@router.post(
    "/agent/conversations/{id}/runs/{run_id}/results",
    response={200: ResultsOut, frozenset(BAD | ERRORS): ErrorOut},
    summary="Answer pending client actions", tags=["conversations"], openapi_extra=DOCUMENTED_HEADERS,
)
def results(
    request: HttpRequest, response: HttpResponse, payload: ResultsIn, id: str = ConversationId,
    run_id: str = Path(..., description="the run whose calls you answer (`run_id` of the state)"),
):
    """
    Submit results for a run's pending client tools, approvals and questions.

    The first valid answer wins; an identical retry is accepted again (idempotent); a different
    answer for an answered call gets 409 `action_result_conflict` with the accepted answer.
    An approval may carry `edited_arguments` (its `editable` fields only, 422 otherwise); one that
    expired gets 409 `approval_expired`; a staff approval answered by anyone but a `staff:` persona
    (an API key names it in `persona`) gets 403 `approver_required`.
    """
    principal = principal_of(request)
    conversation = conversation_for(principal, id)
    if not _RUN_ID.match(run_id):
        raise NotFound("no such run")
    acceptance = answers.accept_results(
        conversation_id=str(conversation.id), run_id=run_id, results=[item.model_dump() for item in payload.results],
        persona=principal.acting_as(payload.persona), permissions=principal.permissions, now=timezone.now(),
    )
    return _json(response, {**acceptance.as_dict(), "state": conversation_state(conversation)})


@router.post(
    "/agent/conversations/{id}/continue", response={202: TurnOut, frozenset(ERRORS | {413, 422}): ErrorOut},
    summary="Continue after an interrupted run", tags=["conversations"], openapi_extra=DOCUMENTED_HEADERS,
)
def continue_(request: HttpRequest, id: str = ConversationId, idempotency_key: str | None = IdempotencyKey):
    """Start a new turn with the stored history after an interrupted, failed or expired run."""
    principal = principal_of(request)
    conversation = conversation_for(principal, id, "write")
    started = actions.continue_conversation(
        conversation_id=str(conversation.id), persona=principal.persona, edge=principal.edge, now=timezone.now(),
        idempotency=_idempotency(principal, idempotency_key, {"operation": "continue", "conversation": str(conversation.id)}),
    )
    return Status(202, started)
