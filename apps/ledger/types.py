"""
The event kinds of a conversation's log.

Pure: no Django. Each kind is a frozen dataclass whose fields are its payload; the log stores
`kind` and `payload` and turns them back into these classes with `decode`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cache, cached_property
from typing import Any, ClassVar


@dataclass(frozen=True)
class EventKind:
    kind: ClassVar[str] = ""
    # Fields added to a kind after entries of it were written: left out of the payload while empty
    # (or False or "" where that is the default), so an entry that does not use them reads (and
    # hashes) as it always did. A field whose default is None keeps a False it was given.
    added: ClassVar[tuple[str, ...]] = ()
    # Payload names that are not Python names (`from`), by the field that holds them (`from_`).
    spelled: ClassVar[dict[str, str]] = {}

    def payload(self) -> dict[str, Any]:
        out = asdict(self)
        for name in self.added:
            default = self.__dataclass_fields__[name].default
            if out[name] in (None, {}, []) or (out[name] is False and default is False) or (out[name] == "" and default == ""):
                del out[name]
        for name, key in self.spelled.items():
            if name in out:
                out[key] = out.pop(name)
        return out


KINDS: dict[str, type[EventKind]] = {}


def _kind(name: str):
    def register(cls: type[EventKind]) -> type[EventKind]:
        cls.kind = name
        KINDS[name] = cls
        return cls

    return register


@_kind("conversation_started")
@dataclass(frozen=True)
class ConversationStarted(EventKind):
    assistant_id: str
    metadata: dict = field(default_factory=dict)
    visibility: str = "private"
    owner: str = ""
    participants: list = field(default_factory=list)


@_kind("turn_dispatched")
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


@_kind("ingress_directive")
@dataclass(frozen=True)
class IngressDirective(EventKind):
    run_id: str
    edge: str
    step_budget: int | None = None
    required_approver: str = ""


@_kind("model_round")
@dataclass(frozen=True)
class ModelRound(EventKind):
    run_id: str
    round: int
    text: str = ""
    calls: list = field(default_factory=list)  # [{"call_id", "tool", "arguments"}]
    usage: dict = field(default_factory=dict)
    closing: bool = False


@_kind("action_started")
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


@_kind("action_finished")
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


@_kind("client_action_requested")
@dataclass(frozen=True)
class ClientActionRequested(EventKind):
    run_id: str
    call_id: str
    tool: str
    arguments: dict
    expires_at: str = ""


@_kind("client_result_accepted")
@dataclass(frozen=True)
class ClientResultAccepted(EventKind):
    run_id: str
    call_id: str
    tool: str
    output: Any
    answered_by: str = ""
    run_resumes: bool = False


@_kind("approval_request")
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


@_kind("approval_response")
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


@_kind("question_request")
@dataclass(frozen=True)
class QuestionRequest(EventKind):
    run_id: str
    call_id: str
    question: str
    arguments: dict = field(default_factory=dict)


@_kind("question_response")
@dataclass(frozen=True)
class QuestionResponse(EventKind):
    added = ("declined",)
    run_id: str
    call_id: str
    answer: str
    answered_by: str = ""
    run_resumes: bool = False
    declined: bool = False  # the person skipped the question (`output: {"declined": true}`); `answer` is ""


@_kind("completion_requested")
@dataclass(frozen=True)
class CompletionRequested(EventKind):
    run_id: str
    call_id: str
    outcome: str  # completed | not_completed
    reason: str = ""


@_kind("turn_complete")
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


@_kind("turn_failed")
@dataclass(frozen=True)
class TurnFailed(EventKind):
    run_id: str
    error: str


@_kind("turn_expired")
@dataclass(frozen=True)
class TurnExpired(EventKind):
    run_id: str
    call_ids: list = field(default_factory=list)


@_kind("turn_ambiguous")
@dataclass(frozen=True)
class TurnAmbiguous(EventKind):
    run_id: str
    call_id: str
    tool: str
    idempotency_key: str


@_kind("turn_superseded")
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


@_kind("turn_retried")
@dataclass(frozen=True)
class TurnRetried(EventKind):
    added = ("reason",)
    run_id: str
    attempt: int
    after_seq: int
    # Why, when it was not a writer that died: a safe summary of the unexpected error (no details).
    reason: str = ""


@_kind("quarantine_resolved")
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


@_kind("quarantine_settled")
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


# --- human handoff (PRODUCT.md "Human handoff") -------------------------------------------------


@_kind("handoff_requested")
@dataclass(frozen=True)
class HandoffRequested(EventKind):
    """
    Someone asked for a person: control goes from the agent to the queue.

    `source` is who asked: `customer` (Talk to a person), `application` (the API) or `model`
    (`handoff_to_human`, in the turn of `run_id`). `requested_by` is the persona, or `agent`.
    `staff_online` and `within_hours` say what the customer could be promised when they asked:
    whether a member of the team was online, and whether it was within the assistant's office hours.
    """

    source: str
    requested_by: str
    reason: str = ""
    run_id: str = ""
    staff_online: bool | None = None
    within_hours: bool | None = None

    added: ClassVar[tuple[str, ...]] = ("staff_online", "within_hours")


@_kind("handoff_details")
@dataclass(frozen=True)
class HandoffDetails(EventKind):
    """
    While waiting for a person, the customer says why, or leaves an email address for the reply.

    A reply a person writes while the address stands is also sent to it; a request with an address
    stays in the queue past `handoff.queue_timeout_seconds`, since its answer no longer needs the
    customer at the page.
    """

    persona: str
    reason: str = ""
    email: str = ""


@_kind("handoff_cancelled")
@dataclass(frozen=True)
class HandoffCancelled(EventKind):
    """The customer stopped waiting for a person and went back to the assistant: queued → agent."""

    persona: str


@_kind("control_taken")
@dataclass(frozen=True)
class ControlTaken(EventKind):
    """
    A person takes the conversation over, from the queue, straight from the agent or from a colleague.

    `from_` (`from` in the payload) is the colleague who held it until then; `by` is who made the
    change when it is not the new holder: a conversation handed to a named colleague.
    """

    staff: str  # staff:<id>
    name: str = ""
    reason: str = ""
    from_: str | None = None
    by: str | None = None

    added: ClassVar[tuple[str, ...]] = ("from_", "by")
    spelled: ClassVar[dict[str, str]] = {"from_": "from"}


@_kind("control_returned")
@dataclass(frozen=True)
class ControlReturned(EventKind):
    """
    Control goes back to the agent; `note` is for the model, which reads it with the human part of the history.

    `from_` (`from` in the payload): the colleague who held it, when someone else (an admin) handed it back.
    """

    staff: str
    name: str = ""
    note: str = ""
    from_: str | None = None

    added: ClassVar[tuple[str, ...]] = ("from_",)
    spelled: ClassVar[dict[str, str]] = {"from_": "from"}


@_kind("staff_note")
@dataclass(frozen=True)
class StaffNote(EventKind):
    """An internal note by a staff member: in the log and the staff panel, never shown to the customer nor read by the model."""

    note_id: str
    text: str
    staff: str  # staff:<id>
    name: str = ""


@_kind("handoff_timed_out")
@dataclass(frozen=True)
class HandoffTimedOut(EventKind):
    """Nobody took the conversation within `handoff.queue_timeout_seconds`: the agent answers again."""

    requested_at: str
    timeout_seconds: int
    message: str = ""  # the assistant's `handoff.unavailable_message`, as the customer was shown it


@_kind("turn_handed_off")
@dataclass(frozen=True)
class TurnHandedOff(EventKind):
    """
    Control left the agent while a run was open: the run stops and its pending requests are withdrawn.

    `call_ids` are the requests that waited for an answer (none for a run stopped between steps);
    an answer to one of them later gets 409. `interrupted` are the calls whose action started and
    never finished because its writer died: actions that change nothing outside (a side effect
    would make the turn ambiguous instead), closed here since the stopped run will not run them again.
    `reply` (with its `message_id`) is what the model said in the round that asked for a person
    ("Of course, I'm asking a person to join."): the turn's reply, a message of the transcript.
    """

    added: ClassVar[tuple[str, ...]] = ("interrupted", "reply", "message_id")

    run_id: str
    call_ids: list = field(default_factory=list)
    reason: str = ""
    interrupted: list = field(default_factory=list)
    reply: str = ""
    message_id: str = ""


@_kind("customer_message")
@dataclass(frozen=True)
class CustomerMessage(EventKind):
    """A customer's message while a person, or nobody yet, has control: stored and shown, no run."""

    message_id: str
    text: str
    edge: str
    caller: str = ""
    idempotency_key: str = ""


@_kind("staff_message")
@dataclass(frozen=True)
class StaffMessage(EventKind):
    """A reply written by the person who holds control."""

    message_id: str
    text: str
    staff: str
    name: str = ""


@_kind("conversation_completed")
@dataclass(frozen=True)
class ConversationCompleted(EventKind):
    run_id: str


@_kind("repair")
@dataclass(frozen=True)
class Repair(EventKind):
    removed: list  # [{"seq", "reason"}]
    reason: str = ""


# --- people, memory, workspace artifacts, idle close (docs/people.md) ----------------------------


@_kind("participant_added")
@dataclass(frozen=True)
class ParticipantAdded(EventKind):
    persona: str
    permissions: list
    added_by: str
    again: bool = False  # the persona was a participant before and was removed


@_kind("participant_removed")
@dataclass(frozen=True)
class ParticipantRemoved(EventKind):
    persona: str
    removed_by: str


@_kind("participant_token_issued")
@dataclass(frozen=True)
class ParticipantTokenIssued(EventKind):
    persona: str
    token_id: str
    edge: str
    permissions: list
    issued_by: str


@_kind("memory_remembered")
@dataclass(frozen=True)
class MemoryRemembered(EventKind):
    run_id: str
    call_id: str
    fact_id: str
    text: str
    persona: str = ""  # the caller of the turn whose agent remembered it


@_kind("memory_cleared")
@dataclass(frozen=True)
class MemoryCleared(EventKind):
    fact_ids: list
    cleared_by: str


@_kind("artifact_created")
@dataclass(frozen=True)
class ArtifactCreated(EventKind):
    run_id: str
    call_id: str
    artifact_id: str
    name: str
    media_type: str
    sha256: str
    size: int
    path: str  # relative to the conversation's workspace
    source_identity: str
    source_revision: str = ""


@_kind("artifact_acknowledged")
@dataclass(frozen=True)
class ArtifactAcknowledged(EventKind):
    artifact_id: str
    acknowledged_by: str


@_kind("conversation_closed")
@dataclass(frozen=True)
class ConversationClosed(EventKind):
    reason: str  # idle
    last_turn_at: str
    idle_timeout_seconds: int


@_kind("conversation_reopened")
@dataclass(frozen=True)
class ConversationReopened(EventKind):
    closed_seq: int  # the conversation_closed entry this reopens


def decode(kind: str, payload: dict[str, Any]) -> EventKind:
    """
    Turn a stored kind and payload back into its dataclass.

    Unknown payload keys are ignored so that older code can read newer logs.
    :raises KeyError: the kind is unknown
    """
    cls = KINDS[kind]
    names = _field_names(cls)
    by_key = {key: name for name, key in cls.spelled.items()}
    return cls(**{by_key.get(k, k): v for k, v in payload.items() if by_key.get(k, k) in names})


@cache
def _field_names(cls: type[EventKind]) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


@dataclass(frozen=True)
class Recorded:
    """One stored event: its position in the log, its attribution and its decoded body."""

    seq: int
    kind: str
    turn_id: str
    actor: str
    created_at: str
    payload: dict[str, Any]

    @cached_property
    def body(self) -> EventKind:
        """The entry as its dataclass, decoded once; readers match on it and read its fields."""
        return decode(self.kind, self.payload)
