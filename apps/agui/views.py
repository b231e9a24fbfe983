"""
`POST /v1/ag-ui/{assistant_id}`: the AG-UI protocol 1.0 over SSE (PRODUCT.md "AG-UI", docs/ag-ui.md).

A router of the v1 API (mounted in config/urls.py), so it shares the API's credentials (an API key,
or a conversation token for its own conversation's thread), its strict JSON parser and its error
shape: whatever is refused before the stream starts is an HTTP error like any other of the API.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Path, Router, Schema
from pydantic import ConfigDict, Field

from apps.agui import actions, queries
from apps.agui.stream import follow
from apps.ops.credentials import still_valid

router = Router(tags=["ag-ui"])

_ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
_STREAM = {
    "description": "AG-UI events as server-sent events: RUN_STARTED first, exactly one RUN_FINISHED or RUN_ERROR last",
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
}


class RunAgentInputIn(Schema):
    """An AG-UI `RunAgentInput` (docs.ag-ui.com); checked as a whole against the protocol's own types."""

    model_config = ConfigDict(extra="allow")

    threadId: str = Field(..., min_length=1, max_length=200, description="a conversation id, or a new thread's id")
    runId: str = Field(..., min_length=1, max_length=200, description="echoed in RUN_STARTED and RUN_FINISHED")
    messages: list[dict[str, Any]] = Field(..., description="the conversation so far; the newest user message not yet recorded is the turn's")
    tools: list[dict[str, Any]] | None = None
    context: list[dict[str, Any]] | None = None
    state: Any = None
    forwardedProps: Any = Field(None, description='an API key may name the persona it acts for: {"persona": "shop:customer-42"}')
    resume: list[dict[str, Any]] | None = Field(
        None, description='answers to interrupts: [{"interruptId", "status": "resolved", "payload"}]; payload as …/results takes it'
    )


@router.post(
    "/{assistant_id}", response={200: None}, summary="Run the assistant as an AG-UI agent",
    openapi_extra={"responses": {"200": _STREAM, **{str(code): {"description": "refused before the stream started", **_ERROR}
                                                    for code in (400, 401, 403, 404, 409, 413, 422, 429)}}},
)
def run(request: HttpRequest, payload: RunAgentInputIn, assistant_id: str = Path(..., description="the assistant's id")):
    """
    Take a `RunAgentInput` and answer with the AG-UI event stream of the thread's run.

    A new user message is a turn (edge `ag-ui`), once per message id; `resume` and `tool` messages
    answer the run's approvals, questions and frontend tools. A dropped connection does not stop
    the run: the next request on the thread gets `MESSAGES_SNAPSHOT` and the events still to come.
    """
    given = actions.check_input(payload.model_dump(exclude_unset=True))
    plan = actions.take(given=given, assistant=queries.assistant(assistant_id), principal=request.auth,
                        now=timezone.now())
    response = StreamingHttpResponse(
        follow(plan, thread_id=given.thread_id, run_id=given.run_id, allowed=lambda: still_valid(request)),
        content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
