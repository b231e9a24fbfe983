"""
Writes of assistants, and the writes that start a turn: a conversation with its first turn, a new
turn (batch one), a turn continuing after an interruption. Accepting the answers a waiting run
asked for: `answers`.

Each turn write runs in one transaction with the conversation row locked, appends to the log
through `store.append` (which writes the stores in the same transaction), schedules the broadcast
of the new head and hands the run to the runner once the transaction has committed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.agent import runner
from apps.agent.config import ConfigError, check_config
from apps.agent.models import Assistant
from apps.agent.providers import model_endpoints
from apps.conversations import actions as conversation_actions
from apps.conversations import broadcast, faults, tokens
from apps.conversations.actions import Idempotency
from apps.conversations.errors import (
    BadInput,
    ControlConflict,
    ConversationIsCompleted,
    InvalidAssistantConfig,
    NotFound,
    NothingToContinue,
    TurnConflict,
)
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.types import (
    ConversationStarted,
    CustomerMessage,
    IngressDirective,
    TurnDispatched,
    TurnSuperseded,
)
from apps.people.queries import participants
from apps.runs.machine import CONTINUABLE
from apps.runs.models import WorkflowLog
from apps.runs.statements import has_open_run
from apps.toolsources.resolve import tool_names
from apps.workspaces.actions import open_runtime, reopen_events


def check_assistant_config(config: Any) -> dict[str, Any]:
    """`check_config` with this deployment's model endpoints and tool sources. :raises ConfigError: see `check_config`"""
    return check_config(config, model_endpoints=model_endpoints(), tool_sources=tool_names())


def create_assistant(*, config: Any, is_demo: bool = False) -> Assistant:
    """
    Validate a configuration and store it as a new assistant.

    :raises InvalidAssistantConfig: the configuration is invalid; `details["problems"]` lists why
    """
    try:
        clean = check_assistant_config(config)
    except ConfigError as exc:
        raise InvalidAssistantConfig("invalid assistant configuration: " + "; ".join(exc.problems), problems=exc.problems) from exc
    return Assistant.objects.create(name=clean["name"], config=clean, is_demo=is_demo)


def load_demo(*, base_url: str, allowed_origins: list[str] | None = None, model: str = "", mcp_url: str = "") -> Assistant:
    """
    Create or refresh the demo assistant, whose refund webhook points at this server's demo shop,
    and the demo shop's help centre it answers from.

    `allowed_origins` are the sites that may embed its widget (the demo shop of `make run`).
    `model`: a model name on the deployment's OpenAI-compatible endpoint instead of the scripted model.
    `mcp_url`: the demo shop's MCP server; it becomes (or refreshes) the tool source the demo's MCP tools name.
    :raises ConfigError: an allowed origin is not like https://shop.example
    :raises SourceRefused: the MCP server could not be listed
    """
    from apps.agent.demo import DEMO_NAME, demo_config, with_mcp_tools
    from apps.knowledge.demo import load_help_centre

    help_centre = load_help_centre(timezone.now())
    config = demo_config(f"{base_url.rstrip('/')}/demo/hooks/refund", model=model)
    config["knowledge"]["sources"] = [str(source.id) for source in help_centre]  # the demo's own, not the team's
    if mcp_url:
        config = with_mcp_tools(config, demo_source(mcp_url))
    if allowed_origins:
        config["allowed_origins"] = list(allowed_origins)
    clean = check_assistant_config(config)
    assistant = Assistant.objects.filter(is_demo=True, name=DEMO_NAME).first()
    if assistant is None:
        return Assistant.objects.create(name=clean["name"], config=clean, is_demo=True)
    assistant.config = clean
    assistant.save(update_fields=["config", "updated_at"])
    return assistant


def demo_source(url: str) -> str:
    """The demo shop's tool source at `url`, added or listed again; its id."""
    from apps.toolsources import actions as sources
    from apps.toolsources.demo import SOURCE_NAME

    found = next((s for s in sources.live_sources() if s.name == SOURCE_NAME and s.url == url), None)
    return str((sources.refresh_source(str(found.id)) if found else sources.create_source(name=SOURCE_NAME, url=url)).id)


# --- turns -------------------------------------------------------------------------------------


def kick_after_commit(conversation_id: str, fault: str = "after_batch_one") -> None:
    """Hand the conversation to the runner once this transaction commits, with the lease taken in it."""
    held = runner.claim(conversation_id)
    transaction.on_commit(partial(faults.reach, fault))
    transaction.on_commit(partial(runner.kick, conversation_id, held))


def _batch_one(
    *, conversation_id: str, text: str, persona: str, edge: str, mode: str, directive: dict | None,
    continuation: bool, idempotency: Idempotency | None, now: datetime, conversation: Conversation,
    prefix: list | None = None,
) -> dict[str, Any]:
    turn_id, run_id = conversation_actions.new_id("turn"), conversation_actions.new_id("run")
    # Attribution: everyone admitted to the conversation when the turn came (owner first) and the caller.
    admitted = [p["persona"] for p in participants(conversation)]
    participants_now = list(dict.fromkeys([*admitted, *([persona] if persona else [])]))
    events = [
        *(prefix or []),
        # A conversation closed for being idle reopens with its next turn (docs/people.md).
        *reopen_events(conversation_id=conversation_id),
        TurnDispatched(
            run_id=run_id,
            message_id="" if continuation else conversation_actions.new_id("msg"),
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
    recorded = store.append(conversation, events, turn_id=turn_id, actor=persona, now=now)
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
    conversation_actions.check_message(message)
    directive = conversation_actions.check_directive(directive)
    if metadata is not None and not isinstance(metadata, dict):
        raise BadInput("metadata must be an object")
    conversation_actions.check_clean(metadata, "metadata")
    if len(json.dumps(metadata or {})) > 16_000:
        raise BadInput("metadata is larger than 16 kB")
    assistant = Assistant.objects.filter(id=assistant_id).first() if conversation_actions.is_uuid(assistant_id) else None
    if assistant is None:
        raise NotFound("no such assistant")
    faults.reach("before_batch_one")

    def write():
        with transaction.atomic():
            replay = conversation_actions.replayed(idempotency)
            if replay is not None:
                return replay
            conversation_id = str(uuid.uuid4())
            started = ConversationStarted(
                assistant_id=str(assistant.id), metadata=metadata or {}, visibility="private", owner=persona, participants=[persona]
            )
            out = _batch_one(
                conversation_id=conversation_id, text=message, persona=persona, edge=edge,
                mode=assistant.config.get("mode", "agent"), directive=directive, continuation=False,
                # The row is the projection of `started`: the append chains on the new row's head (0, GENESIS).
                idempotency=idempotency, now=now, conversation=Conversation(id=conversation_id), prefix=[started],
            )
            out["token"] = tokens.issue(conversation_id=conversation_id, persona=persona, edge=edge)
            conversation_actions.remember(idempotency, conversation_id, out, 201)
            kick_after_commit(conversation_id)
            return out

    return conversation_actions.once(idempotency, write)


def start_turn(
    *, conversation_id: str, message: str, persona: str, edge: str, now: datetime,
    expected_seq: int | None = None, directive: dict | None = None, idempotency: Idempotency | None = None,
    decline_pending: bool = False,
) -> dict[str, Any]:
    """
    Commit batch one of a new turn against the log head the caller observed.

    An exact retry with the same Idempotency-Key returns the first answer. `decline_pending`: the
    person wrote while requests wait for them (every edge: the page, the widget, the API, AG-UI);
    a waiting run's pending requests are declined with the message as the reason and its turn
    ends (`turn_superseded`), in the same commit as the new turn. Without it a waiting run is a
    turn still open.
    :raises TurnConflict: the head moved since `expected_seq`, or a turn is still open (running)
    :raises ConversationIsCompleted: the conversation is read-only
    :raises IdempotencyKeyReused: the key came with a different request before
    """
    conversation_actions.check_message(message)
    directive = conversation_actions.check_directive(directive)
    faults.reach("before_batch_one")

    def check(conversation: Conversation) -> None:
        if conversation.control_mode != "agent":
            # A person has the conversation, or one was asked for: the message is stored, no run starts.
            _check_can_start(conversation, expected_seq, open_ok=True)
            return
        if decline_pending:
            _check_can_start(conversation, expected_seq, open_ok=True)
            _supersede_waiting_run(conversation, reason=message, persona=persona, now=now)
        _check_can_start(conversation, None if decline_pending else expected_seq)

    return _new_turn(conversation_id, check, text=message, persona=persona, edge=edge, directive=directive,
                     continuation=False, idempotency=idempotency, now=now)


def _supersede_waiting_run(conversation: Conversation, *, reason: str, persona: str, now: datetime) -> None:
    """Decline the pending requests of the conversation's waiting run, with `reason`, and end its turn; in the caller's transaction."""
    run = WorkflowLog.objects.filter(conversation_id=conversation.id, status="waiting").order_by("-dispatched_seq").first()
    if run is None or not run.pending:
        return
    recorded = store.append(conversation, [TurnSuperseded(run_id=run.run_id, call_ids=list(run.pending), reason=reason,
                                                          declined_by=persona)],
                            turn_id=run.turn_id, actor=persona, now=now)
    broadcast.on_commit(conversation.id, recorded[-1].seq)


def _new_turn(
    conversation_id: str, check: Callable[[Conversation], None], *, text: str, persona: str, edge: str, directive: dict | None, continuation: bool,
    idempotency: Idempotency | None, now: datetime,
) -> dict[str, Any]:
    """
    Batch one of a turn on an existing conversation, under its row lock, once `check` let it start.

    An exact retry with the same Idempotency-Key returns the first answer before anything is checked.
    """

    def write():
        with transaction.atomic():
            conversation = conversation_actions.locked(conversation_id, with_assistant=True)
            replay = conversation_actions.replayed(idempotency)
            if replay is not None:
                return replay
            check(conversation)
            if conversation.control_mode != "agent":
                out = _customer_message(conversation, text=text, persona=persona, edge=edge, idempotency=idempotency, now=now)
                conversation_actions.remember(idempotency, str(conversation.id), out, 202)
                return out
            out = _batch_one(
                conversation_id=str(conversation.id), text=text, persona=persona, edge=edge,
                mode=conversation.assistant.config.get("mode", "agent"), directive=directive, continuation=continuation,
                idempotency=idempotency, now=now, conversation=conversation,
            )
            conversation_actions.remember(idempotency, str(conversation.id), out, 202)
            kick_after_commit(str(conversation.id))
            return out

    return conversation_actions.once(idempotency, write)


def _customer_message(
    conversation: Conversation, *, text: str, persona: str, edge: str, idempotency: Idempotency | None, now: datetime,
) -> dict[str, Any]:
    """A message while the agent does not have control: a turn without a run (`run_id` null), shown at once."""
    turn_id = conversation_actions.new_id("turn")
    event = CustomerMessage(message_id=conversation_actions.new_id("msg"), text=text, edge=edge, caller=persona,
                            idempotency_key=idempotency.key if idempotency else "")
    # A conversation closed for being idle reopens with the message, as with a turn's batch one.
    events = [*reopen_events(conversation_id=str(conversation.id)), event]
    recorded = store.append(conversation, events, turn_id=turn_id, actor=persona, now=now)
    broadcast.on_commit(str(conversation.id), recorded[-1].seq)
    return {"conversation_id": str(conversation.id), "turn_id": turn_id, "run_id": None, "seq": recorded[-1].seq}


def _check_can_start(conversation: Conversation, expected_seq: int | None, *, open_ok: bool = False) -> None:
    if conversation.status == "completed":
        raise ConversationIsCompleted()
    if expected_seq is not None and expected_seq != conversation.head_seq:
        raise TurnConflict(f"the conversation moved on (head is {conversation.head_seq}, you saw {expected_seq})")
    if not open_ok and has_open_run(str(conversation.id)):
        raise TurnConflict("a turn is still open on this conversation")


def continue_conversation(
    *, conversation_id: str, persona: str, edge: str, now: datetime, idempotency: Idempotency | None = None
) -> dict[str, Any]:
    """
    Start a new turn with the stored history after an interrupted or failed run.

    :raises NothingToContinue: the latest run is not interrupted or failed
    """

    def check(conversation: Conversation) -> None:
        _check_can_start(conversation, None)
        if conversation.control_mode != "agent":
            raise ControlConflict("A person has this conversation: there is nothing for the assistant to continue.",
                                  holder=None)
        latest = WorkflowLog.objects.filter(conversation_id=conversation.id).order_by("-dispatched_seq").first()
        if latest is None or latest.status not in CONTINUABLE:
            raise NothingToContinue()

    return _new_turn(conversation_id, check, text="", persona=persona, edge=edge, directive=None, continuation=True,
                     idempotency=idempotency, now=now)
