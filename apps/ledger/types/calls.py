"""
A turn's calls: actions run and their outcomes, the client actions, approvals and questions a person
answers, the model's completion request, and the quarantine of an action whose outcome is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.ledger.types.base import EventKind, register


@register("action_started")
@dataclass(frozen=True)
class ActionStarted(EventKind):
    added = ("reattempt_of",)
    run_id: str
    call_id: str
    tool: str
    action: str
    arguments: dict
    side_effecting: bool
    idempotency_key: str
    attempt: int = 1
    # A re-attempt of an action whose outcome was unknown: {"turn_id", "call_id", "attempted_at"} of
    # its first attempt, whose idempotency key it is sent with (PRODUCT.md rule 8).
    reattempt_of: dict = field(default_factory=dict)


@register("action_finished")
@dataclass(frozen=True)
class ActionFinished(EventKind):
    """
    An action's outcome. `model_output`: what the model is told instead of a long `output` (its
    first `max_result_chars`, with a note that it was cut); the log keeps `output` itself.
    """

    added = ("model_output",)
    run_id: str
    call_id: str
    tool: str
    ok: bool
    output: Any = None
    error: str = ""
    model_output: Any = None


@register("client_action_requested")
@dataclass(frozen=True)
class ClientActionRequested(EventKind):
    run_id: str
    call_id: str
    tool: str
    arguments: dict
    expires_at: str = ""


@register("client_result_accepted")
@dataclass(frozen=True)
class ClientResultAccepted(EventKind):
    run_id: str
    call_id: str
    tool: str
    output: Any
    answered_by: str = ""
    run_resumes: bool = False


@register("approval_request")
@dataclass(frozen=True)
class ApprovalRequest(EventKind):
    """
    A person is asked to approve a call with its exact arguments (PRODUCT.md rule 7).

    From the tool's `approval` block: `approver` (`staff` or `any`; empty for the customer, the
    default), `expires_at` (when it is resolved as expired unless answered; empty for never) and
    `editable` (the arguments the approver may change). `required_approver` is a persona an ingress
    directive or the assistant named.
    """

    added = ("reattempt_of", "approver", "expires_at", "editable")
    run_id: str
    call_id: str
    tool: str
    arguments: dict
    required_approver: str = ""
    reattempt_of: dict = field(default_factory=dict)  # as on ActionStarted
    approver: str = ""
    expires_at: str = ""
    editable: list = field(default_factory=list)


@register("approval_response")
@dataclass(frozen=True)
class ApprovalResponse(EventKind):
    """
    An approval's outcome: `approve` or `deny` by `answered_by`, or `expired` by the server's clock.

    `edited_arguments`: the fields the approver changed before approving; the call runs with its
    `reviewed` arguments updated by them. An expiry has no `reviewed` arguments and nobody answered it.
    """

    added = ("edited_arguments",)
    run_id: str
    call_id: str
    decision: str  # approve | deny | expired
    reviewed: dict
    answered_by: str = ""
    run_resumes: bool = False
    edited_arguments: dict = field(default_factory=dict)


@register("question_request")
@dataclass(frozen=True)
class QuestionRequest(EventKind):
    run_id: str
    call_id: str
    question: str
    arguments: dict = field(default_factory=dict)


@register("question_response")
@dataclass(frozen=True)
class QuestionResponse(EventKind):
    added = ("declined",)
    run_id: str
    call_id: str
    answer: str
    answered_by: str = ""
    run_resumes: bool = False
    declined: bool = False  # the person skipped the question (`output: {"declined": true}`); `answer` is ""


@register("completion_requested")
@dataclass(frozen=True)
class CompletionRequested(EventKind):
    run_id: str
    call_id: str
    outcome: str  # completed | not_completed
    reason: str = ""


@register("quarantine_resolved")
@dataclass(frozen=True)
class QuarantineResolved(EventKind):
    added = ("result", "customer_visible")
    run_id: str
    call_id: str
    resolution: str  # done | not_done_retry | abandon
    note: str = ""
    result: Any = None  # with done: the result the downstream system reports, if staff recorded one
    # The note may reach the customer (through the model, which is told it); unmarked, it stays with staff.
    customer_visible: bool = False


@register("quarantine_settled")
@dataclass(frozen=True)
class QuarantineSettled(EventKind):
    """
    A re-attempt succeeded under the key of a quarantined attempt, so its outcome is known: the quarantine ends.

    Appended with the re-attempt's `action_finished`, in the re-attempt's turn; the fields name the
    quarantined attempt (`run_id`, `turn_id`, `call_id`) and the call that settled it (`by_call_id`).
    """

    run_id: str
    turn_id: str
    call_id: str
    by_call_id: str
