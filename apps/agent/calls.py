"""
The tools an assistant's model may call, in one place: the built-in ones, and the class of each.

A built-in tool is one entry of `BUILTINS`: its name and JSON schema, when the model is offered
it, whether it only writes the log (so its step may commit with the model round that asked for
it), and what running it records. Adding one is adding an entry; the configuration check, the
model request and the runner read this table.

Two built-ins are not run but answered: `ask_question` becomes a question to the customer and
`complete_conversation` the end of the conversation, both decided by the planner
(`apps/agent/turns.py`); their entries have no `run`.

Every other tool is the assistant's own (`tools` of its configuration): a server tool runs a
linked action, a client tool is answered by the application. A server tool's **class** (`read`,
`idempotent`, `write`, `destructive`) says what calling it twice may do; it defaults to its
action's, and decides whether its start is committed before it runs and whether an unknown
outcome makes the turn ambiguous.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from apps.actions.registry import ACTIONS
from apps.agent import handoff, knowledge
from apps.ledger.types import ActionFinished, ActionStarted, TurnHandedOff
from apps.workspaces import actions as workspace_actions

# What calling a tool twice may do, mildest first (PRODUCT.md "Tool sources: MCP").
CLASSES = ("read", "idempotent", "write", "destructive")


@dataclass(frozen=True)
class Ran:
    """What a built-in tool's call recorded, and whether that ended the run (its commit gives the lease up)."""

    events: list
    ends_run: bool = False


@dataclass(frozen=True)
class Call:
    """One call of a built-in tool as the runner hands it over."""

    conversation_id: str
    run: Any  # the run's WorkflowLog row
    call: Any  # turns.CallState
    attempt: int
    said: str  # the text of the model round that made the call
    config: dict[str, Any] = field(default_factory=dict)  # the assistant's configuration
    state: Any = None  # turns.TurnState: the turn so far

    def started(self) -> ActionStarted:
        """The call's start, as every built-in that records its outcome as an action begins it."""
        return ActionStarted(run_id=self.run.run_id, call_id=self.call.call_id, tool=self.call.tool, action="",
                             arguments=self.call.arguments, side_effecting=False,
                             idempotency_key=f"{self.run.turn_id}:{self.call.call_id}", attempt=self.attempt)

    def finished(self, *, output: Any = None, error: str = "") -> ActionFinished:
        return ActionFinished(run_id=self.run.run_id, call_id=self.call.call_id, tool=self.call.tool, ok=not error,
                              output=output, error=error)


@dataclass(frozen=True)
class Builtin:
    name: str
    parameters: dict[str, Any]
    description: str = ""
    # Whether the model is offered it, from the assistant's configuration (an offer the model
    # ignores is still answered: `run` decides what an unoffered call records).
    offered: Callable[[dict[str, Any]], bool] = field(default=lambda config: True)
    # Only log entries: the call's step may commit together with the model round before it.
    read_only: bool = True
    run: Callable[[Call], Ran] | None = None

    def spec(self) -> dict[str, Any]:
        """The tool as the model is told of it."""
        spec = {"name": self.name, "kind": "builtin"}
        if self.description:
            spec["description"] = self.description
        return {**spec, "parameters": self.parameters}


def _remember(call: Call) -> Ran:
    return Ran(workspace_actions.remember_call(
        conversation_id=call.conversation_id, run_id=call.run.run_id, turn_id=call.run.turn_id,
        call_id=call.call.call_id, arguments=call.call.arguments, persona=call.run.caller,
    ))


def _search_knowledge(call: Call) -> Ran:
    """The passages the team's help content has for the query, numbered on through the turn."""
    from apps.knowledge.queries import search

    settings = knowledge.knowledge_settings(call.config)
    query = call.call.arguments.get("query")
    if not settings["enabled"]:
        return Ran([call.started(), call.finished(error="this assistant has no help content to search")])
    if not isinstance(query, str) or not query.strip():
        return Ran([call.started(), call.finished(error="query must be the question to search for")])
    earlier = [c.finished.output for c in (call.state.calls.values() if call.state else [])
               if c.tool == knowledge.TOOL and c.finished is not None and c.finished.ok]
    passages = search(query.strip()[:1000], sources=None if settings["sources"] == "all" else list(settings["sources"]),
                      limit=settings["max_passages"])
    output = knowledge.numbered(passages, after=max(knowledge.returned(earlier), default=0))
    return Ran([call.started(), call.finished(output=output)])


def _handoff_to_human(call: Call) -> Ran:
    events = handoff.by_model(call.conversation_id, call.run, call.call, call.attempt, call.said)
    return Ran(events, ends_run=any(isinstance(e, TurnHandedOff) for e in events))


# In the order the model is told of them (recorded requests depend on it).
BUILTINS: dict[str, Builtin] = {b.name: b for b in (
    Builtin("ask_question", {"type": "object", "properties": {"question": {"type": "string"}}}),
    Builtin("complete_conversation", {"type": "object", "properties": {}}),
    Builtin("remember", {"type": "object", "properties": {"fact": {"type": "string"}}, "required": ["fact"]},
            description="Remember a fact for the later turns of this conversation", run=_remember),
    Builtin("handoff_to_human",
            {"type": "object", "properties": {"reason": {"type": "string", "description": "Why a person is needed"}}},
            description="Hand the conversation to a person on the support team, when the customer asks for one or you cannot help",
            offered=handoff.offers_handoff_tool, run=_handoff_to_human),
    Builtin(knowledge.TOOL,
            {"type": "object", "properties": {"query": {"type": "string", "description": "The customer's question, in their words"}},
             "required": ["query"]},
            description="Search the team's help content. Answer from the passages it returns and cite each one you use "
                        "as [n]; if it finds nothing, say you do not know rather than guess",
            offered=knowledge.offered, run=_search_knowledge),
)}


def offered_builtins(config: dict[str, Any]) -> list[dict[str, Any]]:
    """The built-in tools the model is told of for this configuration."""
    return [b.spec() for b in BUILTINS.values() if b.offered(config)]


def tool_class(tool: dict[str, Any] | None) -> str:
    """
    A server tool's class: its own `class` when set, else its linked action's.

    An action that only reads is `read`; one the receiving system sees (a webhook) is `write`;
    the rest change only the conversation's own workspace under the call's key: `idempotent`.
    """
    if not tool:
        return "read"
    if tool.get("class") in CLASSES:
        return tool["class"]
    action = ACTIONS.get(tool.get("action", ""))
    if action is None:
        return "read"
    if action.read_only:
        return "read"
    return "write" if action.side_effecting else "idempotent"


def side_effecting(tool: dict[str, Any] | None) -> bool:
    """Whether a call's outcome, once started and unrecorded, is in doubt: the receiving system may have acted."""
    return tool_class(tool) in ("write", "destructive")
