"""
Writes that start conversations and turns and accept results (batch one and client answers).

Each runs in one transaction with the conversation row locked, appends to the log through
`store.append` (which writes the four stores in the same transaction) and hands the run to the
runner once the transaction has committed.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.db import IntegrityError, transaction

from apps.agent.config import tool_by_name
from apps.agent.models import Assistant
from apps.agent.tools import DECLINED, answer_problem
from apps.conversations import broadcast, faults, tokens
from apps.conversations.errors import (
    ActionResultConflict,
    ApprovalMismatch,
    BadInput,
    ConversationIsCompleted,
    Forbidden,
    IdempotencyKeyReused,
    NotFound,
    NothingToContinue,
    RunExpired,
    TurnConflict,
)
from apps.conversations.models import Conversation, IdempotencyRecord
from apps.ledger import chain, store
from apps.ledger.types import (
    ApprovalResponse,
    ClientResultAccepted,
    ConversationStarted,
    IngressDirective,
    QuestionResponse,
    TurnDispatched,
)
from apps.people.queries import participant_personas, participants
from apps.runs.models import ToolUsageLog, WorkflowLog
from apps.workspaces.actions import open_runtime, reopen_events

MAX_MESSAGE_CHARS = 20_000
EDGES = ("link", "widget", "api", "staff")
OPEN_RUN_STATUSES = ("running", "waiting")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


@dataclass(frozen=True)
class Idempotency:
    scope: str
    key: str
    request: dict[str, Any]

    @property
    def request_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.request, sort_keys=True, default=str).encode()).hexdigest()


def _replayed(idempotency: Idempotency | None) -> dict[str, Any] | None:
    if idempotency is None:
        return None
    record = IdempotencyRecord.objects.filter(scope=idempotency.scope, key=idempotency.key).first()
    if record is None:
        return None
    if record.request_hash != idempotency.request_hash:
        raise IdempotencyKeyReused()
    return record.response


def _remember(idempotency: Idempotency | None, conversation_id: str, response: dict[str, Any], status: int) -> None:
    if idempotency is not None:
        IdempotencyRecord.objects.create(
            scope=idempotency.scope,
            key=idempotency.key,
            request_hash=idempotency.request_hash,
            conversation_id=conversation_id,
            status_code=status,
            response=response,
        )


def _once(idempotency: Idempotency | None, write):
    """Run a turn-creating write once per Idempotency-Key; a concurrent twin gets the first's answer."""
    try:
        return write()
    except IntegrityError:
        replay = _replayed(idempotency) if idempotency else None
        if replay is None:
            raise
        return replay


def _kick_after_commit(conversation_id: str) -> None:
    from apps.agent import runner

    transaction.on_commit(partial(faults.reach, "after_batch_one"))
    transaction.on_commit(partial(runner.kick, conversation_id))


# NUL and the other control characters but tab and line breaks: no person types them, PostgreSQL
# refuses NUL in text and JSON, and a terminal or log that shows them can be fooled by them.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_clean(value: Any, where: str) -> Any:
    """
    Refuse text with control characters anywhere in a value (its strings, keys and nested values).

    :raises BadInput: a string holds NUL or another control character other than tab and line breaks
    """
    if isinstance(value, str):
        if CONTROL_CHARACTERS.search(value):
            raise BadInput(f"{where} must not contain control characters such as NUL")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_clean(key, where)
            check_clean(item, where)
    elif isinstance(value, list):
        for item in value:
            check_clean(item, where)
    return value


def check_message(text: Any) -> str:
    """:raises BadInput: the message is not non-empty text of a sane length, without control characters"""
    if not isinstance(text, str) or not text.strip():
        raise BadInput("message must be non-empty text")
    if len(text) > MAX_MESSAGE_CHARS:
        raise BadInput(f"message is longer than {MAX_MESSAGE_CHARS} characters")
    return check_clean(text, "message")


def check_directive(directive: dict[str, Any] | None) -> dict[str, Any] | None:
    """:raises BadInput: an ingress directive with unknown keys or values"""
    if not directive:
        return None
    if not isinstance(directive, dict) or set(directive) - {"step_budget", "required_approver"}:
        raise BadInput("directive accepts step_budget and required_approver only")
    budget = directive.get("step_budget")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= 64):
        raise BadInput("directive.step_budget must be a whole number from 1 to 64")
    if not isinstance(directive.get("required_approver", ""), str):
        raise BadInput("directive.required_approver must be a persona identity")
    return directive


def _batch_one(
    *, conversation_id: str, text: str, persona: str, edge: str, mode: str, directive: dict | None,
    continuation: bool, idempotency: Idempotency | None, now: datetime, head: tuple[int, str] | None = None,
    prefix: list | None = None, conversation: Conversation | None = None,
) -> dict[str, Any]:
    turn_id, run_id = new_id("turn"), new_id("run")
    # Attribution: everyone admitted to the conversation when the turn came (owner first) and the caller.
    admitted = [p["persona"] for p in participants(conversation)] if conversation else participant_personas(conversation_id)
    participants_now = list(dict.fromkeys([*admitted, *([persona] if persona else [])]))
    events = [
        *(prefix or []),
        # A conversation closed for being idle reopens with its next turn (docs/people.md).
        *reopen_events(conversation_id=conversation_id),
        TurnDispatched(
            run_id=run_id,
            message_id="" if continuation else new_id("msg"),
            text=text,
            edge=edge,
            caller=persona,
            participants=participants_now,
            continuation=continuation,
            mode=mode,
            idempotency_key=idempotency.key if idempotency else "",
        ),
    ]
    if directive:
        events.append(
            IngressDirective(
                run_id=run_id,
                edge=edge,
                step_budget=directive.get("step_budget"),
                required_approver=directive.get("required_approver", ""),
            )
        )
    recorded = store.append(conversation_id=conversation_id, events=events, turn_id=turn_id, actor=persona, now=now, head=head)
    broadcast.on_commit(conversation_id, recorded[-1].seq)
    open_runtime(conversation_id=conversation_id, now=now)
    return {"conversation_id": conversation_id, "turn_id": turn_id, "run_id": run_id, "seq": recorded[-1].seq}


def start_conversation(
    *, assistant_id: str, message: str, persona: str, edge: str, now: datetime,
    metadata: dict | None = None, directive: dict | None = None, idempotency: Idempotency | None = None,
) -> dict[str, Any]:
    """
    Create a conversation with its first turn (batch one) and a token for the persona.

    :raises NotFound: no such assistant
    :raises BadInput: bad message, metadata or directive
    """
    check_message(message)
    directive = check_directive(directive)
    if metadata is not None and not isinstance(metadata, dict):
        raise BadInput("metadata must be an object")
    check_clean(metadata, "metadata")
    if len(json.dumps(metadata or {})) > 16_000:
        raise BadInput("metadata is larger than 16 kB")
    assistant = Assistant.objects.filter(id=assistant_id).first() if _is_uuid(assistant_id) else None
    if assistant is None:
        raise NotFound("no such assistant")
    faults.reach("before_batch_one")

    def write():
        with transaction.atomic():
            replay = _replayed(idempotency)
            if replay is not None:
                return replay
            conversation_id = str(uuid.uuid4())
            started = ConversationStarted(
                assistant_id=str(assistant.id), metadata=metadata or {}, visibility="private", owner=persona, participants=[persona]
            )
            out = _batch_one(
                conversation_id=conversation_id, text=message, persona=persona, edge=edge,
                mode=assistant.config.get("mode", "agent"), directive=directive, continuation=False,
                idempotency=idempotency, now=now, head=(0, chain.GENESIS), prefix=[started],
            )
            out["token"] = tokens.issue(conversation_id=conversation_id, persona=persona, edge=edge)
            _remember(idempotency, conversation_id, out, 201)
            _kick_after_commit(conversation_id)
            return out

    return _once(idempotency, write)


def _is_uuid(value: Any) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def _locked(conversation_id: str) -> Conversation:
    if not _is_uuid(conversation_id):
        raise NotFound("no such conversation")
    # The assistant comes along (its config decides the turn's mode), locked it is not.
    conversation = (
        Conversation.objects.select_related("assistant").select_for_update(no_key=True, of=("self",))
        .filter(id=conversation_id).first()
    )
    if conversation is None:
        raise NotFound("no such conversation")
    return conversation


def start_turn(
    *, conversation_id: str, message: str, persona: str, edge: str, now: datetime,
    expected_seq: int | None = None, directive: dict | None = None, idempotency: Idempotency | None = None,
) -> dict[str, Any]:
    """
    Commit batch one of a new turn against the log head the caller observed.

    An exact retry with the same Idempotency-Key returns the first answer.
    :raises TurnConflict: the head moved since `expected_seq`, or a turn is still open
    :raises ConversationIsCompleted: the conversation is read-only
    :raises IdempotencyKeyReused: the key came with a different request before
    """
    check_message(message)
    directive = check_directive(directive)
    faults.reach("before_batch_one")

    def write():
        with transaction.atomic():
            conversation = _locked(conversation_id)
            replay = _replayed(idempotency)
            if replay is not None:
                return replay
            _check_can_start(conversation, expected_seq)
            mode = conversation.assistant.config.get("mode", "agent")
            out = _batch_one(
                conversation_id=str(conversation.id), text=message, persona=persona, edge=edge, mode=mode,
                directive=directive, continuation=False, idempotency=idempotency, now=now,
                head=(conversation.head_seq, conversation.head_hash), conversation=conversation,
            )
            _remember(idempotency, str(conversation.id), out, 202)
            _kick_after_commit(str(conversation.id))
            return out

    return _once(idempotency, write)


def _check_can_start(conversation: Conversation, expected_seq: int | None) -> None:
    if conversation.status == "completed":
        raise ConversationIsCompleted()
    if expected_seq is not None and expected_seq != conversation.head_seq:
        raise TurnConflict(f"the conversation moved on (head is {conversation.head_seq}, you saw {expected_seq})")
    if WorkflowLog.objects.filter(conversation_id=conversation.id, status__in=OPEN_RUN_STATUSES, quarantined=False).exists():
        raise TurnConflict("a turn is still open on this conversation")


def continue_conversation(
    *, conversation_id: str, persona: str, edge: str, now: datetime, idempotency: Idempotency | None = None
) -> dict[str, Any]:
    """
    Start a new turn with the stored history after an interrupted or failed run.

    :raises NothingToContinue: the latest run is not interrupted or failed
    """

    def write():
        with transaction.atomic():
            conversation = _locked(conversation_id)
            replay = _replayed(idempotency)
            if replay is not None:
                return replay
            _check_can_start(conversation, None)
            latest = WorkflowLog.objects.filter(conversation_id=conversation.id).order_by("-dispatched_seq").first()
            if latest is None or latest.status not in ("interrupted", "failed", "expired"):
                raise NothingToContinue()
            out = _batch_one(
                conversation_id=str(conversation.id), text="", persona=persona, edge=edge,
                mode=conversation.assistant.config.get("mode", "agent"), directive=None, continuation=True,
                idempotency=idempotency, now=now, head=(conversation.head_seq, conversation.head_hash), conversation=conversation,
            )
            _remember(idempotency, str(conversation.id), out, 202)
            _kick_after_commit(str(conversation.id))
            return out

    return _once(idempotency, write)


@dataclass(frozen=True)
class Acceptance:
    run_id: str
    accepted: list[str]  # call ids newly accepted by this request
    already: list[str]  # call ids whose identical answer was accepted before
    run_resumes: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _same_answer(usage: ToolUsageLog, output: Any) -> bool:
    if usage.kind == "approval":
        return usage.output == {"decision": output.get("decision"), "reviewed": output.get("reviewed")}
    if usage.kind == "question" and output != DECLINED:
        return usage.output == {"answer": output.get("answer")}
    return usage.output == output


def _check_output(usage: ToolUsageLog, output: Any, required_approver: str, persona: str, permissions: frozenset[str],
                  tool: dict[str, Any]) -> None:
    if usage.kind == "approval":
        if "approve" not in permissions:
            raise Forbidden("this persona may not approve")
        if not isinstance(output, dict) or output.get("decision") not in ("approve", "deny"):
            raise BadInput("an approval needs output.decision approve or deny")
        reviewed = output.get("reviewed")
        if not isinstance(reviewed, dict) or not isinstance(reviewed.get("arguments"), dict):
            raise BadInput("an approval needs output.reviewed with the tool and arguments you reviewed")
        if reviewed.get("tool") != usage.tool or reviewed.get("arguments") != usage.arguments:
            raise ApprovalMismatch()
        if required_approver and persona != required_approver:
            raise Forbidden(f"only {required_approver} may answer this approval")
    elif usage.kind == "question":
        if "answer_client_actions" not in permissions:
            raise Forbidden("this persona may not answer questions")
        if output == DECLINED:
            return
        if isinstance(output, dict) and "declined" in output:
            raise BadInput('a declined question is exactly output {"declined": true}')
        if not isinstance(output, dict) or not isinstance(output.get("answer"), str) or not output["answer"].strip():
            raise BadInput('a question needs output.answer as non-empty text, or output {"declined": true} to skip it')
    elif "answer_client_actions" not in permissions:
        raise Forbidden("this persona may not answer client actions")
    elif problem := answer_problem(tool, output):
        raise BadInput(problem)


def accept_results(
    *, conversation_id: str, run_id: str, results: Any, persona: str, now: datetime,
    permissions: frozenset[str] = frozenset(tokens.ALL_PERMISSIONS),
) -> Acceptance:
    """
    Accept the first valid result set for a run's pending calls.

    Idempotent for identical outputs. The check and the write happen under the conversation's row
    lock, so two browsers answering at once are serialised and the second sees the first's answer.
    :raises ActionResultConflict: a different output was accepted for one of the calls
    :raises ApprovalMismatch: the reviewed tool or arguments differ from the pending call
    :raises RunExpired: the run's pending request expired (simple runs only)
    :raises BadInput: an output a call cannot take (a date outside its parameter's bounds, say);
        `{"declined": true}` declines a question or client action
    """
    if not isinstance(results, list) or not results:
        raise BadInput("results must be a non-empty list of {call_id, output}")
    seen = set()
    for item in results:
        if not isinstance(item, dict) or not isinstance(item.get("call_id"), str) or "output" not in item:
            raise BadInput("each result needs call_id and output")
        if item["call_id"] in seen:
            raise BadInput(f"call {item['call_id']} appears twice")
        seen.add(item["call_id"])
        check_clean(item, "a result")
    with transaction.atomic():
        conversation = _locked(conversation_id)
        if conversation.status == "completed":
            raise ConversationIsCompleted()
        run = WorkflowLog.objects.filter(conversation_id=conversation.id, run_id=run_id).first()
        if run is None:
            raise NotFound("no such run")
        usages = {
            u.call_id: u
            for u in ToolUsageLog.objects.filter(run_id=run_id, call_id__in=[r["call_id"] for r in results])
        }
        required = (run.directives or {}).get("required_approver") or conversation.assistant.config.get("required_approver", "")
        fresh, already = [], []
        for item in results:
            usage = usages.get(item["call_id"])
            if usage is None:
                raise NotFound(f"call {item['call_id']} is not a client action of this run")
            if usage.status == "pending":
                if run.status == "expired" or (usage.expires_at and usage.expires_at <= now):
                    raise RunExpired()
                tool = tool_by_name(conversation.assistant.config, usage.tool) or {}
                _check_output(usage, item["output"], required, persona, permissions, tool)
                fresh.append((usage, item["output"]))
            elif usage.status == "expired":
                raise RunExpired()
            elif _same_answer(usage, item["output"]):
                already.append(usage.call_id)
            else:
                raise ActionResultConflict(
                    "Someone else already answered",
                    accepted={"call_id": usage.call_id, "output": usage.output, "answered_by": usage.answered_by,
                              "seq": usage.accepted_seq, "answered_at": usage.answered_at.isoformat() if usage.answered_at else None},
                )
        if not fresh:
            return Acceptance(run_id, [], already, False)
        remaining = set(run.pending) - {u.call_id for u, _ in fresh}
        events = []
        for i, (usage, output) in enumerate(fresh):
            resumes = not remaining and i == len(fresh) - 1
            if usage.kind == "approval":
                events.append(ApprovalResponse(run_id=run_id, call_id=usage.call_id, decision=output["decision"],
                                               reviewed={"tool": output["reviewed"]["tool"], "arguments": output["reviewed"]["arguments"]},
                                               answered_by=persona, run_resumes=resumes))
            elif usage.kind == "question":
                declined = output == DECLINED
                events.append(QuestionResponse(run_id=run_id, call_id=usage.call_id, answer="" if declined else output["answer"],
                                               answered_by=persona, run_resumes=resumes, declined=declined))
            else:
                events.append(ClientResultAccepted(run_id=run_id, call_id=usage.call_id, tool=usage.tool, output=output,
                                                   answered_by=persona, run_resumes=resumes))
        recorded = store.append(conversation_id=str(conversation.id), events=events, turn_id=run.turn_id, actor=persona, now=now,
                                head=(conversation.head_seq, conversation.head_hash))
        broadcast.on_commit(conversation.id, recorded[-1].seq)
        if not remaining:
            from apps.agent import runner

            transaction.on_commit(partial(faults.reach, "after_result_accepted"))
            transaction.on_commit(partial(runner.kick, str(conversation.id)))
        return Acceptance(run_id, [u.call_id for u, _ in fresh], already, not remaining)
