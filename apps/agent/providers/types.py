"""What a model round is given and gives back, and the one interface every provider has."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolCall:
    call_id: str  # Waypoint's own: unique in its turn, whatever the vendor sent
    tool: str
    arguments: dict[str, Any]
    vendor_id: str = ""  # the vendor's id for the call, sent back to it in the history; "" when it gave none

    def as_dict(self) -> dict[str, Any]:
        out = {"call_id": self.call_id, "tool": self.tool, "arguments": self.arguments}
        if self.vendor_id:
            out["vendor_id"] = self.vendor_id
        return out


@dataclass(frozen=True)
class ModelRound:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PastRound:
    text: str
    calls: list[ToolCall]
    results: dict[str, Any]  # call_id -> the result the model sees


@dataclass(frozen=True)
class PastTurn:
    """An earlier turn of the conversation as the log recorded it (apps/agent/history.py builds these)."""

    turn_id: str
    message: str  # the user's message; "" for a continuation
    continuation: bool
    rounds: list[PastRound]
    reply: str  # the committed assistant message, "" when the turn ended without one
    status: str  # completed | interrupted | failed | expired | abandoned | handed_off | open | human
    # status "human": not a turn but the part of the conversation a person held (PRODUCT.md "Human
    # handoff"): what the customer wrote, the person's replies and the changes of control, in order.
    human: list[HumanLine] = field(default_factory=list)


@dataclass(frozen=True)
class HumanLine:
    kind: str  # customer | staff | requested | joined | returned | timed_out | cancelled
    text: str
    name: str = ""


@dataclass(frozen=True)
class ModelRequest:
    """Everything a provider may look at: the conversation's earlier turns from the record, and this turn so far."""

    history: list[PastTurn]
    message: str  # this turn's user message; "" for a continuation
    rounds: list[PastRound]
    tools: list[dict[str, Any]]
    closing: bool = False
    memory: list[str] = field(default_factory=list)
    continuation: bool = False  # this turn goes on with an interrupted one (Continue)
    instructions: str = ""  # the assistant's `instructions`: the first system message


class ModelFailed(Exception):
    """The model could not produce a round; the message is safe to show."""


# Called with the text of the current round so far, while a streaming provider produces it.
DraftSink = Callable[[str], None]


def _no_draft(text: str) -> None:
    pass


class Provider(Protocol):
    def complete(self, request: ModelRequest, on_draft: DraftSink = _no_draft) -> ModelRound: ...
