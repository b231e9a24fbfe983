"""
What one AG-UI request does to the conversation before its stream starts: a new turn for a new
user message, answers for interrupts (`resume`) and frontend tools (`tool` messages), through the
same actions as every other edge (`apps/agent/actions.py`), with edge `ag-ui`.

Every check that can refuse the request runs before anything is written, so a refused request
is an HTTP error and changes nothing; an answer that conflicts with the accepted one is told in
the stream (`RUN_ERROR`), as the protocol has a run for it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ag_ui.core import RunAgentInput, ToolMessage, UserMessage
from django.db import IntegrityError, connection, transaction
from pydantic import ValidationError

from apps.agent import actions
from apps.agent.answers import accept_results
from apps.agent.models import Assistant
from apps.agent.tools import DECLINED
from apps.agui import queries
from apps.agui.events import parse_interrupt_id
from apps.agui.models import Thread
from apps.conversations.actions import CONTROL_CHARACTERS, Idempotency, check_message
from apps.conversations.errors import ActionResultConflict, BadInput, NotFound, RunNotWaiting, TurnConflict
from apps.runs.models import ToolUsageLog, WorkflowLog

EDGE = queries.EDGE
MAX_ID_CHARS = 200  # an idempotency key's length: a message id is one


@dataclass(frozen=True)
class Plan:
    """What the stream follows: the run, from which log position, and an error to end it with instead."""

    conversation_id: str
    run_id: str | None
    after_seq: int | None  # None: from the head the stream starts at (nothing new was written)
    error: dict[str, Any] | None = None  # {"code", "message", "details"} for RUN_ERROR


def check_input(body: dict[str, Any]) -> RunAgentInput:
    """:raises BadInput: not a `RunAgentInput` (names every problem), or ids Waypoint cannot keep"""
    try:
        given = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:20]]
        raise BadInput("not a RunAgentInput: " + "; ".join(problems), problems=problems) from None
    for name, value in (("threadId", given.thread_id), ("runId", given.run_id)):
        if not value.strip() or len(value) > MAX_ID_CHARS or CONTROL_CHARACTERS.search(value):
            raise BadInput(f"{name} must be 1 to {MAX_ID_CHARS} characters without control characters")
    for message in given.messages:
        if not message.id or len(message.id) > MAX_ID_CHARS or CONTROL_CHARACTERS.search(message.id):
            raise BadInput(f"message ids must be 1 to {MAX_ID_CHARS} characters without control characters")
    return given


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content)


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _safe_integer(text: str) -> int:
    value = int(text)
    if abs(value) > 2**53 - 1:  # the log's canonical JSON (RFC 8785) holds no larger integer
        raise ValueError("integer out of range")
    return value


def _new_user_message(given: RunAgentInput, recorded: set[str]) -> UserMessage | None:
    return next((m for m in reversed(given.messages) if isinstance(m, UserMessage) and m.id not in recorded), None)


def take(*, given: RunAgentInput, assistant: Assistant, principal: Any, now: datetime) -> Plan:
    """
    Apply one request's input to its thread and say what its stream follows.

    :raises NotFound: the thread is another conversation's (for a token) or another assistant's,
        or an interrupt id Waypoint never gave out for this thread
    :raises RunNotWaiting: a resume for a request its run no longer waits for
    :raises BadInput: an empty message, a tool message whose content is not JSON text, a resume without payload
    :raises TurnConflict: a new message while the thread's run is still going, or beside answers to it
    """
    conversation = queries.thread_conversation(given.thread_id, assistant)
    if principal.conversation_id is not None and (conversation is None or str(conversation.id) != principal.conversation_id):
        raise NotFound("no such conversation")
    persona = principal.acting_as(_forwarded_persona(given.forwarded_props))
    if conversation is None:
        plan = _first_turn(given=given, assistant=assistant, principal=principal, persona=persona, now=now)
        if plan is not None:
            return plan
        # A twin request started the thread while this one waited: join its conversation under the turn rules.
        conversation = queries.thread_conversation(given.thread_id, assistant)
        if conversation is None:
            raise NotFound("no such conversation")
    cid = str(conversation.id)
    message = _new_user_message(given, queries.recorded_message_ids(cid))
    principal.check_conversation(cid, "write" if message is not None else "view")
    answers = _answers(cid, given)
    if message is not None:
        check_message(_text(message.content))
        if answers and _only_cancellations(given, answers):
            # An AG-UI client must address every open interrupt to send a message: cancelling them
            # beside it is writing instead of answering, and the message declines them (start_turn).
            answers = {}
        elif answers:
            # The answers resume the run, which then holds the conversation: the message would be
            # refused after the answers were written, and the request left half done.
            raise TurnConflict("this request answers the run and sends a new message: send the message once the run has finished")
    plan = Plan(cid, None, None)
    for run_id, results in answers.items():
        try:
            accept_results(conversation_id=cid, run_id=run_id, results=results, persona=persona,
                           permissions=principal.permissions, now=now)
        except ActionResultConflict as exc:
            return Plan(cid, run_id, None, error={"code": exc.code, "message": exc.message, "details": exc.details})
        seqs = ToolUsageLog.objects.filter(run_id=run_id, call_id__in=[r["call_id"] for r in results]).values_list(
            "accepted_seq", flat=True)
        plan = Plan(cid, run_id, min(s for s in seqs if s is not None))
    if message is not None:
        # A chat client cannot answer a 409 (CopilotKit would show it raw with every later message):
        # as on the page, the message declines what the waiting run asks and is the next turn.
        started = actions.start_turn(
            conversation_id=cid, message=_text(message.content), persona=persona, edge=EDGE, now=now,
            idempotency=_idempotency(given.thread_id, message), decline_pending=True,
        )
        return Plan(cid, started["run_id"], started["seq"])
    return plan


def _forwarded_persona(forwarded: Any) -> str | None:
    persona = forwarded.get("persona") if isinstance(forwarded, dict) else None
    return persona if isinstance(persona, str) else None


def _idempotency(thread_id: str, message: UserMessage) -> Idempotency:
    # Per (thread, message id): the record keeps the key on the turn, so a retried request, or a
    # later one that repeats the message, finds it and starts no second turn.
    # The thread's digest, not the thread: a thread id may be as long as a scope may be.
    scope = f"{EDGE}:{hashlib.sha256(thread_id.encode()).hexdigest()}"
    return Idempotency(scope=scope, key=message.id,
                       request={"operation": EDGE, "message": _text(message.content)})


def _first_turn(*, given: RunAgentInput, assistant: Assistant, principal: Any, persona: str, now: datetime) -> Plan | None:
    """
    Start the conversation a new thread names, and keep the thread's id for it, in one transaction.

    A thread is one conversation: requests that start the same thread at once take the thread's
    lock in turn, and the ones after the first find the thread taken and return None, to go on as
    requests on it (their message the next turn, or a turn conflict).
    """
    message = _new_user_message(given, set())
    if message is None:
        raise NotFound("no such thread: a new thread starts with a user message")
    if given.resume:
        raise NotFound("no such interrupt: this thread has none")
    principal.require_api_key()
    text = check_message(_text(message.content))
    try:
        with transaction.atomic():
            _lock_thread(given.thread_id)
            if Thread.objects.filter(thread_id=given.thread_id).exists():
                return None
            started = actions.start_conversation(
                assistant_id=str(assistant.id), message=text, persona=persona, edge=EDGE, now=now,
                idempotency=_idempotency(given.thread_id, message),
            )
            Thread.objects.create(thread_id=given.thread_id, conversation_id=started["conversation_id"], created_at=now)
    except IntegrityError:
        # The primary key holds the rule where no lock was taken: the thread went to another request.
        if not Thread.objects.filter(thread_id=given.thread_id).exists():
            raise
        return None
    return Plan(started["conversation_id"], started["run_id"], started["seq"])


def _lock_thread(thread_id: str) -> None:
    """Hold the thread's id until this transaction ends; SQLite's write lock, taken at BEGIN, already does."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ["agui-thread:" + thread_id])


def _only_cancellations(given: RunAgentInput, answers: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether every result of the input is a cancelled resume entry (no resolved one, no tool message)."""
    resume = given.resume or []
    return all(entry.status == "cancelled" for entry in resume) and sum(map(len, answers.values())) == len(resume)


def _answers(conversation_id: str, given: RunAgentInput) -> dict[str, list[dict[str, Any]]]:
    """
    The results this input gives, by run: its resume entries, and tool messages for pending client tools.

    :raises NotFound: an interrupt id that names no approval or question of this conversation
    :raises RunNotWaiting: the interrupt's run stopped waiting before it was answered
    :raises BadInput: a resolved entry without payload, a tool message whose content is not JSON
    """
    by_run: dict[str, list[dict[str, Any]]] = {}
    for entry in given.resume or []:
        named = parse_interrupt_id(entry.interrupt_id)
        usage = None
        if named is not None:
            usage = ToolUsageLog.objects.filter(conversation_id=conversation_id, run_id=named[0], call_id=named[1],
                                                kind__in=("approval", "question")).first()
        if usage is None:
            raise NotFound(f"no such interrupt: {entry.interrupt_id[:200]}")
        if usage.status == "pending" and not WorkflowLog.objects.filter(run_id=usage.run_id, status="waiting").exists():
            raise RunNotWaiting()
        if entry.status == "cancelled":
            output = ({"decision": "deny", "reviewed": {"tool": usage.tool, "arguments": usage.arguments}}
                      if usage.kind == "approval" else DECLINED)
        elif entry.payload is None:
            raise BadInput(f"resume {entry.interrupt_id[:200]}: a resolved interrupt needs its payload")
        else:
            output = entry.payload
        by_run.setdefault(usage.run_id, []).append({"call_id": usage.call_id, "output": output})
    tool_messages = [m for m in given.messages if isinstance(m, ToolMessage)]
    if tool_messages:
        waiting = WorkflowLog.objects.filter(conversation_id=conversation_id, status="waiting").order_by("-dispatched_seq").first()
        pending = set()
        if waiting is not None:
            pending = set(ToolUsageLog.objects.filter(run_id=waiting.run_id, kind="client_tool", status="pending")
                          .values_list("call_id", flat=True))
        for message in tool_messages:
            if message.tool_call_id not in pending:
                continue  # a result the stream sent, or an answer the record already has
            try:
                output = json.loads(_text(message.content), parse_constant=_not_a_number, parse_int=_safe_integer)
            except ValueError:
                raise BadInput(f"tool message {message.id[:200]}: content must be JSON text") from None
            by_run.setdefault(waiting.run_id, []).append({"call_id": message.tool_call_id, "output": output})
            pending.discard(message.tool_call_id)
    return by_run
