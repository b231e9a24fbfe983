"""
A turn and its model: the message that starts it, the model's rounds, and how the turn ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from apps.ledger.types.base import EventKind, register


@register("turn_dispatched")
@dataclass(frozen=True)
class TurnDispatched(EventKind):
    run_id: str
    message_id: str = ""
    text: str = ""
    edge: str = ""  # link | widget | api | staff | ag-ui; every writer names it
    caller: str = ""
    participants: list = field(default_factory=list)
    continuation: bool = False
    mode: str = "agent"
    idempotency_key: str = ""


@register("ingress_directive")
@dataclass(frozen=True)
class IngressDirective(EventKind):
    run_id: str
    edge: str
    step_budget: int | None = None
    required_approver: str = ""


@register("model_round")
@dataclass(frozen=True)
class ModelRound(EventKind):
    run_id: str
    round: int
    text: str = ""
    calls: list = field(default_factory=list)  # [{"call_id", "tool", "arguments"}]
    usage: dict = field(default_factory=dict)
    closing: bool = False


@register("turn_complete")
@dataclass(frozen=True)
class TurnComplete(EventKind):
    run_id: str
    message_id: str
    text: str
    fallback: bool = False
    # With knowledge: the passages the reply's [n] markers name, and the numbers of markers that
    # named nothing the turn's searches returned (taken out of the text).
    citations: list = field(default_factory=list)
    dropped_citations: list = field(default_factory=list)
    # The turn's searches found nothing, and the assistant offers a person then (`no_answer: offer_handoff`).
    offer_handoff: bool = False
    added: ClassVar[tuple[str, ...]] = ("citations", "dropped_citations", "offer_handoff")


@register("turn_failed")
@dataclass(frozen=True)
class TurnFailed(EventKind):
    run_id: str
    error: str


@register("turn_expired")
@dataclass(frozen=True)
class TurnExpired(EventKind):
    run_id: str
    call_ids: list = field(default_factory=list)


@register("turn_ambiguous")
@dataclass(frozen=True)
class TurnAmbiguous(EventKind):
    run_id: str
    call_id: str
    tool: str
    idempotency_key: str


@register("turn_superseded")
@dataclass(frozen=True)
class TurnSuperseded(EventKind):
    """
    The customer wrote instead of answering: the run's pending requests are declined and its turn ends.

    `reason` is the message that takes their place (the next turn's, appended in the same commit);
    the model of a later turn reads each call's outcome as `{"declined": true, "reason": …}`.
    """

    run_id: str
    call_ids: list
    reason: str
    declined_by: str = ""


@register("turn_retried")
@dataclass(frozen=True)
class TurnRetried(EventKind):
    added = ("reason",)
    run_id: str
    attempt: int
    after_seq: int
    # Why, when it was not a writer that died: a safe summary of the unexpected error (no details).
    reason: str = ""
