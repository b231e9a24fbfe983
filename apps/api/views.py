"""
The public JSON API v1 (PRODUCT.md "Public HTTP contract"): one domain call per operation.

Mounted at /v1/; the OpenAPI document is /v1/openapi.json and the browsable docs /v1/docs.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.http import parse_etags
from ninja import Header, NinjaAPI, Path, Query
from ninja.responses import NinjaJSONEncoder, Status

from apps.agent import actions, handoff
from apps.agent.actions import create_assistant
from apps.agent.state import conversation_state
from apps.api import errors, schemas
from apps.api.auth import AUTH, Principal
from apps.conversations import queries, tokens
from apps.conversations.errors import BadInput, Forbidden, NotFound
from apps.webhooks import endpoints

api = NinjaAPI(
    title="Waypoint API",
    version="1",
    description=(
        "Durable agent conversations. Authenticate with a workspace API key or a conversation token "
        "(`Authorization: Bearer …`; a token may also be sent as `?token=`). Every error is "
        '`{"error": {"code": "<snake_case>", "message": "…"}}`.'
    ),
    urls_namespace="v1",
    auth=AUTH,
    parser=errors.StrictJsonParser(),
    openapi_url="/openapi.json",
    docs_url="/docs",
)
errors.install(api)
api.add_decorator(errors.guard, mode="view")

BAD = {400, 413, 422}
ERRORS = {401, 403, 404, 409, 429}
_IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_SEQ = 2**31 - 1

IdempotencyKey = Header(
    None, alias="Idempotency-Key", pattern=_IDEMPOTENCY_KEY.pattern,
    description="1–200 visible ASCII characters; a retry with the same key and body returns the first answer, never a second turn",
)


ConversationId = Path(..., description="the conversation id (UUID); unknown or malformed ids are 404")
_RETRY_AFTER = {"Retry-After": {"description": "seconds until the window resets", "required": True, "schema": {"type": "integer"}}}
_ETAG = {"ETag": {"description": 'the log head, e.g. `"42"`; send it back as If-None-Match', "required": True, "schema": {"type": "string"}}}
DOCUMENTED_HEADERS = {"responses": {"429": {"headers": _RETRY_AFTER}}}


def _linked(status: str, links: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """DOCUMENTED_HEADERS plus OpenAPI links from one response: where its ids lead (clients, schemathesis' stateful phase)."""
    return {"responses": {**DOCUMENTED_HEADERS["responses"], status: {"links": links}}}


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


def _principal(request: HttpRequest) -> Principal:
    return request.auth  # type: ignore[attr-defined]


def _idempotency(principal: Principal, key: str | None, request: dict[str, Any]) -> actions.Idempotency | None:
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.match(key):
        raise BadInput("Idempotency-Key must be 1–200 visible ASCII characters")
    return actions.Idempotency(scope=principal.id, key=key, request=request)


def _conversation_id(principal: Principal, conversation_id: str, permission: str = "view") -> str:
    """:raises NotFound: a malformed id, or a token for another conversation"""
    try:
        conversation_id = str(uuid.UUID(conversation_id))
    except ValueError:
        raise NotFound("no such conversation") from None
    principal.check_conversation(conversation_id, permission)
    return conversation_id


def _conversation(principal: Principal, conversation_id: str, permission: str = "view", *, with_assistant: bool = True):
    conversation = queries.conversation_for(_conversation_id(principal, conversation_id, permission), with_assistant=with_assistant)
    if conversation is None:
        raise NotFound("no such conversation")
    return conversation


def _check_directive_allowed(principal: Principal, directive: schemas.Directive | None) -> dict | None:
    if directive is None:
        return None
    principal.require_api_key()
    return directive.model_dump(exclude_none=True)


@api.post(
    "/assistants", response={201: schemas.AssistantOut, frozenset(BAD | {401, 403, 429}): schemas.ErrorOut},
    summary="Create an assistant", tags=["assistants"],
    openapi_extra=_linked("201", {"StartConversation": {
        "operationId": "apps_api_views_start", "requestBody": {"assistant": "$response.body#/id", "message": "hello"}}}),
)
def create(request: HttpRequest, payload: schemas.AssistantConfigIn):
    """Create an assistant from its JSON configuration (API key). Invalid → 422 `invalid_assistant_config`."""
    _principal(request).require_api_key()
    assistant = create_assistant(config=payload.config())
    return Status(201, {"id": str(assistant.id), "name": assistant.name})


@api.post(
    "/agent/conversations", response={201: schemas.StartOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Start a conversation", tags=["conversations"], openapi_extra=_linked("201", STARTED_LINKS),
)
def start(request: HttpRequest, payload: schemas.StartIn, idempotency_key: str | None = IdempotencyKey):
    """
    Start a conversation with its first turn (API key) and return a conversation token for the persona.

    `Idempotency-Key` makes retries safe: the same key and body give the same conversation.
    """
    principal = _principal(request)
    principal.require_api_key()
    body = payload.model_dump(exclude_none=True)
    started = actions.start_conversation(
        assistant_id=payload.assistant, message=payload.message, persona=principal.acting_as(payload.persona),
        edge="api", now=timezone.now(), metadata=payload.metadata,
        directive=_check_directive_allowed(principal, payload.directive),
        idempotency=_idempotency(principal, idempotency_key, {"operation": "start", **body}),
    )
    return Status(201, started)


@api.post(
    "/agent/conversations/{id}/turns", response={202: schemas.TurnOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Send a user message (a new turn)", tags=["conversations"],
    openapi_extra=_linked("202", {"AnswerResults": {"operationId": "apps_api_views_results", "parameters": {
        "id": "$request.path.id", "run_id": "$response.body#/run_id"}}}),
)
def turn(request: HttpRequest, payload: schemas.TurnIn, id: str = ConversationId, idempotency_key: str | None = IdempotencyKey):
    """
    Commit a new turn's user message; the run continues in the background.

    A message while the run waits for an answer (a client action, an approval, a question) declines
    what it waits for and is the next turn, as writing on the page does; a running turn is
    refused with 409 `turn_conflict`, and so is any turn when `expected_seq` is not the log's head.
    """
    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    body = payload.model_dump(exclude_none=True)
    started = actions.start_turn(
        conversation_id=str(conversation.id), message=payload.message, persona=principal.acting_as(payload.persona), edge=principal.edge,
        now=timezone.now(), expected_seq=payload.expected_seq, decline_pending=True,
        directive=_check_directive_allowed(principal, payload.directive),
        idempotency=_idempotency(principal, idempotency_key, {"operation": "turn", "conversation": str(conversation.id), **body}),
    )
    return Status(202, started)


@api.get(
    "/runner/conversation/{id}/messages",
    response={200: schemas.StateOut, 304: None, frozenset({401, 403, 404, 422, 429}): schemas.ErrorOut},
    summary="Read messages and reconnect state", tags=["conversations"],
    openapi_extra={"responses": {"200": {"headers": _ETAG}, "304": {"headers": _ETAG}, "429": {"headers": _RETRY_AFTER}}},
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
    principal = _principal(request)
    conversation_id = _conversation_id(principal, id)

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
    conversation = _conversation(principal, conversation_id, with_assistant=False)
    state = conversation_state(conversation, after_seq=after_seq)
    response["ETag"] = tag(state["seq"])
    response["Cache-Control"] = "no-cache"
    return _json(response, state)


@api.post(
    "/agent/conversations/{id}/runs/{run_id}/results",
    response={200: schemas.ResultsOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Answer pending client actions", tags=["conversations"], openapi_extra=DOCUMENTED_HEADERS,
)
def results(
    request: HttpRequest, response: HttpResponse, payload: schemas.ResultsIn, id: str = ConversationId,
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
    principal = _principal(request)
    conversation = _conversation(principal, id)
    if not _RUN_ID.match(run_id):
        raise NotFound("no such run")
    acceptance = actions.accept_results(
        conversation_id=str(conversation.id), run_id=run_id, results=[item.model_dump() for item in payload.results],
        persona=principal.acting_as(payload.persona), permissions=principal.permissions, now=timezone.now(),
    )
    return _json(response, {**acceptance.as_dict(), "state": conversation_state(conversation)})


@api.post(
    "/agent/conversations/{id}/continue", response={202: schemas.TurnOut, frozenset(ERRORS | {413, 422}): schemas.ErrorOut},
    summary="Continue after an interrupted run", tags=["conversations"], openapi_extra=DOCUMENTED_HEADERS,
)
def continue_(request: HttpRequest, id: str = ConversationId, idempotency_key: str | None = IdempotencyKey):
    """Start a new turn with the stored history after an interrupted, failed or expired run."""
    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    started = actions.continue_conversation(
        conversation_id=str(conversation.id), persona=principal.persona, edge=principal.edge, now=timezone.now(),
        idempotency=_idempotency(principal, idempotency_key, {"operation": "continue", "conversation": str(conversation.id)}),
    )
    return Status(202, started)


@api.post(
    "/agent/conversations/{id}/handoff", response={200: schemas.ControlOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Ask for a person", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def request_handoff(request: HttpRequest, payload: schemas.HandoffIn, id: str = ConversationId):
    """
    Hand the conversation from the agent to the queue of people (conversation token or API key).

    A waiting run's pending requests are withdrawn; a running one stops at its next step. Asking
    again while queued or human changes nothing and answers with the current control. An assistant
    without `handoff.enabled` → 409 `handoff_unavailable`.
    """
    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    control = handoff.request_handoff(
        conversation_id=str(conversation.id), source="application" if principal.is_api_key else "customer",
        requested_by=principal.persona, reason=payload.reason, now=timezone.now(),
    )
    return {"control": control}


@api.post(
    "/agent/conversations/{id}/handoff/details", response={200: schemas.ControlOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="While waiting for a person: why, or an email address for the reply", tags=["handoff"],
    openapi_extra=DOCUMENTED_HEADERS,
)
def handoff_details(request: HttpRequest, payload: schemas.HandoffDetailsIn, id: str = ConversationId):
    """
    The waiting customer says why they want a person (the request's `reason`), or leaves an email
    address: each reply a person writes while it stands is also sent to it, and the request no
    longer times out (docs/handoff.md "Email follow-up"). 409 `control_conflict` when nobody is waited for.
    """
    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    control = handoff.leave_details(conversation_id=str(conversation.id), persona=principal.persona, reason=payload.reason,
                                    email=payload.email, now=timezone.now())
    return {"control": control}


@api.delete(
    "/agent/conversations/{id}/handoff", response={200: schemas.ControlOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Stop waiting for a person: back to the assistant", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def cancel_handoff(request: HttpRequest, id: str = ConversationId):
    """
    The customer goes back to the assistant while waiting (`handoff_cancelled`): queued → agent.
    409 `control_conflict` when a person took the conversation meanwhile (with `holder`) or the agent has it.
    """
    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    return {"control": handoff.cancel_handoff(conversation_id=str(conversation.id), persona=principal.persona,
                                              now=timezone.now())}


@api.post(
    "/agent/conversations/{id}/control", response={200: schemas.ControlOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Take over, or hand back to the assistant", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def control(request: HttpRequest, payload: schemas.ControlIn, id: str = ConversationId):
    """
    `take`: a person takes the conversation (API key). Exactly one taker wins; another gets 409
    `control_conflict` with `holder`. `return`: the holder hands it back to the assistant, with an
    optional `note` the model reads; anyone else gets 409 `control_conflict`. `assign`: `staff`
    hands it to a named colleague, `to`, who then holds it.

    A conversation a colleague holds is taken, handed back or handed on by someone else by naming
    that colleague in `from`: the change is made only while they still hold it, else 409
    `control_conflict` names who does.
    """
    principal = _principal(request)
    principal.require_api_key()
    conversation = _conversation(principal, id)
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


@api.post(
    "/agent/conversations/{id}/staff-messages", response={201: schemas.StaffMessageOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Reply as the person who holds the conversation", tags=["handoff"], openapi_extra=DOCUMENTED_HEADERS,
)
def staff_message(request: HttpRequest, payload: schemas.StaffMessageIn, id: str = ConversationId):
    """A reply by the holder (API key); 409 `control_conflict` unless that persona holds control."""
    principal = _principal(request)
    principal.require_api_key()
    conversation = _conversation(principal, id)
    message = handoff.staff_message(conversation_id=str(conversation.id), staff=payload.staff, text=payload.text,
                                    now=timezone.now(), origin=f"{request.scheme}://{request.get_host()}")
    return Status(201, {"message": message})


@api.post(
    "/agent/conversations/{id}/tokens", response={201: schemas.TokenOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Issue a conversation token for a persona", tags=["tokens"], openapi_extra=DOCUMENTED_HEADERS,
)
def issue_token(request: HttpRequest, payload: schemas.TokenIn, id: str = ConversationId):
    """
    Issue a token that lets one persona view and act on this conversation (API key).

    Only the owner of a private conversation, or a participant of a shared one (see
    `…/participants`), can get a token, with at most the permissions it was admitted with.
    """
    from apps.people.actions import issue_participant_token

    principal = _principal(request)
    principal.require_api_key()
    conversation = _conversation(principal, id)
    issued = issue_participant_token(
        conversation_id=str(conversation.id), persona=payload.persona, by=principal.persona, now=timezone.now(),
        edge=payload.edge, permissions=payload.permissions,
    )
    return Status(201, {"token": issued["token"], "persona": issued["persona"], "permissions": issued["permissions"]})


@api.post(
    "/agent/conversations/{id}/participants",
    response={201: schemas.ParticipantOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Admit a participant (makes the conversation shared)", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def add_participant(request: HttpRequest, payload: schemas.ParticipantIn, id: str = ConversationId):
    """Admit a persona to the conversation with the given permissions (API key); logged as `participant_added`."""
    from apps.people.actions import add_participant as admit

    principal = _principal(request)
    principal.require_api_key()
    conversation = _conversation(principal, id)
    admitted = admit(conversation_id=str(conversation.id), persona=payload.persona, by=principal.persona,
                     now=timezone.now(), permissions=payload.permissions)
    return Status(201, admitted)


@api.post(
    "/agent/conversations/{id}/participants/remove",
    response={200: schemas.ParticipantOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Remove a participant and revoke its tokens", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def remove_participant(request: HttpRequest, payload: schemas.ParticipantIn, id: str = ConversationId):
    """Remove a participant (API key); every token it holds for this conversation is revoked."""
    from apps.people.actions import remove_participant as remove

    principal = _principal(request)
    principal.require_api_key()
    conversation = _conversation(principal, id)
    return remove(conversation_id=str(conversation.id), persona=payload.persona, by=principal.persona, now=timezone.now())


@api.get(
    "/agent/conversations/{id}/memory",
    response={200: list[schemas.MemoryFact], frozenset(ERRORS): schemas.ErrorOut},
    summary="List what the agent remembers", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def list_memory(request: HttpRequest, id: str = ConversationId):
    """The facts the agent of this conversation remembers (the built-in `remember` tool), oldest first."""
    from apps.workspaces.queries import list_memory as remembered

    principal = _principal(request)
    return remembered(_conversation(principal, id))


@api.post(
    "/agent/conversations/{id}/memory/clear",
    response={200: schemas.MemoryClearOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Clear remembered facts", tags=["people"], openapi_extra=DOCUMENTED_HEADERS,
)
def clear_memory(request: HttpRequest, payload: schemas.MemoryClearIn, id: str = ConversationId):
    """Clear all remembered facts, or the named ones; logged as `memory_cleared`; they never reach the model again."""
    from apps.workspaces.actions import clear_memory as forget

    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    return forget(conversation_id=str(conversation.id), persona=principal.persona, now=timezone.now(), fact_ids=payload.fact_ids)


@api.post(
    "/agent/conversations/{id}/tokens/revoke",
    response={200: schemas.RevokeOut, frozenset(BAD | ERRORS): schemas.ErrorOut},
    summary="Revoke a conversation token", tags=["tokens"], openapi_extra=DOCUMENTED_HEADERS,
)
def revoke_token(request: HttpRequest, payload: schemas.RevokeIn, id: str = ConversationId):
    """Revoke a token of this conversation (API key, or the token itself, to sign out)."""
    principal = _principal(request)
    conversation = _conversation(principal, id)
    grant = tokens.resolve(payload.token)
    if grant is None or grant.conversation_id != str(conversation.id):
        raise NotFound("no such token for this conversation")
    if not principal.is_api_key and principal.id != f"token:{grant.token_id}":
        raise Forbidden("a conversation token can revoke only itself")
    return {"revoked": tokens.revoke(token_id=grant.token_id, now=timezone.now())}


# --- artifacts (docs/people.md) -----------------------------------------------------------------
_ARTIFACT_ID = re.compile(r"^art_[0-9a-f]{1,40}$")


@api.post(
    "/agent/conversations/{id}/artifacts/{artifact_id}/ack",
    response={200: schemas.ArtifactOut, frozenset(ERRORS | {413, 422}): schemas.ErrorOut},
    summary="Acknowledge receipt of an artifact", tags=["artifacts"], openapi_extra=DOCUMENTED_HEADERS,
)
def acknowledge_artifact(
    request: HttpRequest, id: str = ConversationId, artifact_id: str = Path(..., description="`art_…` from the state's artifacts"),
):
    """
    Record that the application received an artifact (`artifact_acknowledged`).

    Acknowledging again returns the artifact unchanged. After a crash, `artifact_recovery` in the
    conversation state tells a missing, a duplicate and an unacknowledged artifact apart.
    """
    from apps.workspaces.actions import acknowledge_artifact as acknowledge

    principal = _principal(request)
    conversation = _conversation(principal, id, "write")
    if not _ARTIFACT_ID.match(artifact_id):
        raise NotFound("no such artifact in this conversation")
    return acknowledge(conversation_id=str(conversation.id), artifact_id=artifact_id, persona=principal.persona, now=timezone.now())


# --- outgoing webhooks (docs/webhooks.md) -------------------------------------------------------
EndpointId = Path(..., description="the endpoint id (UUID); unknown or deleted ids are 404")


def _endpoint(request: HttpRequest, endpoint_id: str):
    _principal(request).require_api_key()
    found = endpoints.find(endpoint_id)
    if found is None:
        raise NotFound("no such webhook endpoint")
    return found


def _endpoint_out(endpoint) -> dict[str, Any]:
    return {"id": str(endpoint.id), "url": endpoint.url, "events": endpoint.event_types, "enabled": endpoint.enabled,
            "description": endpoint.description}


@api.post(
    "/webhook-endpoints", response={201: schemas.WebhookEndpointCreatedOut, frozenset(BAD | {401, 403, 429}): schemas.ErrorOut},
    summary="Register a webhook endpoint", tags=["webhooks"],
)
def create_webhook_endpoint(request: HttpRequest, payload: schemas.WebhookEndpointIn):
    """
    Register an endpoint for signed event deliveries (API key); the answer's `secret` is shown this once.

    A URL that is malformed, not https, carries a user name or password (the signature authenticates
    deliveries), or resolves to an address that is not global unicast, or an unknown event type → 422.
    """
    _principal(request).require_api_key()
    endpoint = endpoints.create(url=payload.url, events=payload.events, description=payload.description)
    return Status(201, {**_endpoint_out(endpoint), "secret": endpoint.secret})


@api.get(
    "/webhook-endpoints", response={200: list[schemas.WebhookEndpointOut], frozenset({401, 403, 429}): schemas.ErrorOut},
    summary="List the webhook endpoints", tags=["webhooks"],
)
def list_webhook_endpoints(request: HttpRequest):
    """The registered endpoints, oldest first, without their secrets (API key)."""
    _principal(request).require_api_key()
    return [_endpoint_out(e) for e in endpoints.live()]


@api.delete(
    "/webhook-endpoints/{endpoint_id}", response={204: None, frozenset(ERRORS): schemas.ErrorOut},
    summary="Delete a webhook endpoint", tags=["webhooks"],
)
def delete_webhook_endpoint(request: HttpRequest, endpoint_id: str = EndpointId):
    """Nothing more is sent to it; its pending deliveries end as failed."""
    endpoints.delete(_endpoint(request, endpoint_id))
    return Status(204, None)


@api.post(
    "/webhook-endpoints/{endpoint_id}/test", response={202: schemas.AcceptedOut, frozenset(ERRORS): schemas.ErrorOut},
    summary="Send a webhook.test event", tags=["webhooks"],
)
def test_webhook_endpoint(request: HttpRequest, endpoint_id: str = EndpointId):
    """Queue a `webhook.test` delivery to the endpoint; it is sent like any other, with retries."""
    made = endpoints.send_test(_endpoint(request, endpoint_id))
    return Status(202, {"accepted": True, "id": made.webhook_id})


def _delivery_out(d) -> dict[str, Any]:
    return {"id": d.webhook_id, "type": d.type, "status": d.status, "attempts": d.attempts,
            "last_status_code": d.last_status_code,
            "next_attempt_at": d.next_attempt_at.isoformat() if d.next_attempt_at and d.status == "pending" else None}


@api.get(
    "/webhook-endpoints/{endpoint_id}/deliveries",
    response={200: list[schemas.WebhookDeliveryOut], frozenset(ERRORS): schemas.ErrorOut},
    summary="List an endpoint's deliveries", tags=["webhooks"],
)
def list_webhook_deliveries(request: HttpRequest, endpoint_id: str = EndpointId):
    """The endpoint's latest deliveries, newest first; `id` is the `webhook-id` of every attempt."""
    return [_delivery_out(d) for d in endpoints.recent(_endpoint(request, endpoint_id))]


@api.post(
    "/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/retry",
    response={202: schemas.AcceptedOut, frozenset(ERRORS): schemas.ErrorOut},
    summary="Send a delivery again", tags=["webhooks"],
)
def retry_webhook_delivery(
    request: HttpRequest, endpoint_id: str = EndpointId, delivery_id: str = Path(..., description="the delivery's `webhook-id`"),
):
    """Send the delivery again now, with the same `webhook-id`."""
    endpoint = _endpoint(request, endpoint_id)
    delivery = endpoint.deliveries.filter(webhook_id=delivery_id).first()
    if delivery is None:
        raise NotFound("no such delivery for this endpoint")
    endpoints.retry(delivery)
    return Status(202, {"accepted": True, "id": delivery.webhook_id})
