"""
What a turn has done so far, and what it does next.

Pure: no Django. `turn_state(events)` reads one turn's log entries; `next_step(state, config)`
decides the next step from them alone. Because every step is committed before the next is
decided, running the same decision after a crash resumes the turn from its last committed step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.actions.registry import ACTIONS
from apps.agent import calls
from apps.agent.config import tool_by_name
from apps.agent.providers import PastRound, ToolCall
from apps.agent.tools import edited_text
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ApprovalRequest,
    ApprovalResponse,
    ClientActionRequested,
    ClientResultAccepted,
    CompletionRequested,
    IngressDirective,
    ModelRound,
    QuarantineResolved,
    QuestionRequest,
    QuestionResponse,
    Recorded,
    TurnAmbiguous,
    TurnComplete,
    TurnDispatched,
    TurnExpired,
    TurnFailed,
    TurnHandedOff,
    TurnRetried,
    TurnSuperseded,
)

FALLBACK_REPLY = "Sorry, I could not finish that. Please try again or rephrase your request."


@dataclass
class CallState:
    call_id: str
    tool: str
    arguments: dict[str, Any]
    round: int
    requested: str = ""  # client_action_requested | approval_request | question_request
    answer: dict[str, Any] | None = None
    answered_by: str = ""
    started: int = 0
    finished: ActionFinished | None = None
    completion: CompletionRequested | None = None
    resolution: str = ""
    resolution_note: str = ""  # what the person who resolved a quarantine confirmed
    resolution_visible: bool = False  # staff marked the note customer-visible: the model may be told it
    resolution_result: Any = None  # the result staff recorded with "done", as the downstream system reports it
    attempted_at: str = ""  # when its action first started
    idempotency_key: str = ""  # the key its action was sent with (a re-attempt's is its first attempt's)
    reattempt_of: dict[str, Any] | None = None  # the earlier attempt an approval request repeats
    expired: bool = False
    vendor_id: str = ""  # the model vendor's id for the call, for the wire only

    @property
    def edits(self) -> dict[str, Any]:
        """The arguments its approver changed before approving ({} for none)."""
        return (self.answer or {}).get("edited_arguments") or {}

    @property
    def run_arguments(self) -> dict[str, Any]:
        """The arguments its action runs with: the model's, as its approver changed them."""
        return {**self.arguments, **self.edits} if self.edits else self.arguments


@dataclass
class RoundState:
    number: int
    text: str
    call_ids: list[str]
    closing: bool


@dataclass
class TurnState:
    run_id: str = ""
    turn_id: str = ""
    message: str = ""
    continuation: bool = False
    mode: str = "agent"
    step_budget: int | None = None
    required_approver: str = ""
    rounds: list[RoundState] = field(default_factory=list)
    calls: dict[str, CallState] = field(default_factory=dict)
    ended: str = ""
    ambiguous_call: str = ""
    retries: int = 0
    reply: str = ""


def turn_state(events: list[Recorded]) -> TurnState:
    """
    Read one turn's entries (in `seq` order) into its state.

    Each entry is decoded once into its dataclass (`Recorded.body`) and read by its fields.
    :raises TypeError: an entry's payload does not fit its kind
    """
    s = TurnState()
    for rec in events:
        match rec.body:
            case TurnDispatched() as e:
                s.run_id, s.turn_id = e.run_id, rec.turn_id
                s.message, s.continuation, s.mode = e.text, e.continuation, e.mode
            case IngressDirective() as e:
                s.step_budget = e.step_budget
                s.required_approver = e.required_approver or s.required_approver
            case ModelRound() as e:
                ids = []
                for c in e.calls:
                    s.calls[c["call_id"]] = CallState(c["call_id"], c["tool"], c.get("arguments", {}), e.round,
                                                      vendor_id=c.get("vendor_id", ""))
                    ids.append(c["call_id"])
                s.rounds.append(RoundState(e.round, e.text, ids, e.closing))
            case ClientActionRequested() | QuestionRequest() as e:
                s.calls[e.call_id].requested = rec.kind
            case ApprovalRequest() as e:
                s.calls[e.call_id].requested = rec.kind
                s.calls[e.call_id].reattempt_of = e.reattempt_of or None
            case ClientResultAccepted() as e:
                s.calls[e.call_id].answer = {"output": e.output}
                s.calls[e.call_id].answered_by = e.answered_by
            case ApprovalResponse() as e:
                s.calls[e.call_id].answer = {"decision": e.decision, "reviewed": e.reviewed}
                if e.edited_arguments:
                    s.calls[e.call_id].answer["edited_arguments"] = e.edited_arguments
                s.calls[e.call_id].answered_by = e.answered_by
            case QuestionResponse() as e:
                s.calls[e.call_id].answer = {"declined": True} if e.declined else {"answer": e.answer}
                s.calls[e.call_id].answered_by = e.answered_by
            case ActionStarted() as e:
                call = s.calls[e.call_id]
                call.started, call.finished = e.attempt, None
                if not call.attempted_at:
                    call.attempted_at, call.idempotency_key = rec.created_at, e.idempotency_key
            case ActionFinished() as e:
                s.calls[e.call_id].finished = e
            case CompletionRequested() as e:
                s.calls[e.call_id].completion = e
            case TurnAmbiguous() as e:
                s.ambiguous_call = e.call_id
            case QuarantineResolved() as e:
                call = s.calls[e.call_id]
                call.resolution, call.resolution_note, call.resolution_result = e.resolution, e.note, e.result
                call.resolution_visible = bool(e.customer_visible)
                s.ambiguous_call = ""
                # Done and abandon settle the outcome and end the turn: Continue goes on from the record.
                # Not done and retry runs the action again in this turn, under its first key.
                if e.resolution == "abandon":
                    s.ended = "turn_abandoned"
                elif e.resolution == "done":
                    s.ended = "turn_resolved"
            case TurnRetried():
                s.retries += 1
            case TurnSuperseded() as e:
                s.ended = rec.kind
                for call_id in e.call_ids:
                    s.calls[call_id].answer = {"declined": True, "reason": e.reason}
                    s.calls[call_id].answered_by = e.declined_by
            case TurnHandedOff() as e:
                s.ended = rec.kind
                for call_id in e.call_ids:
                    s.calls[call_id].answer = {"withdrawn": True, "reason": e.reason}
            case TurnComplete() as e:
                s.ended, s.reply = rec.kind, e.text
            case TurnFailed():
                s.ended = rec.kind
            case TurnExpired() as e:
                s.ended = rec.kind
                for call_id in e.call_ids:
                    if call_id in s.calls:
                        s.calls[call_id].expired = True
    return s


MAX_RETRIES = 3  # PRODUCT.md rule 8, "Bounded failure"


def stalled_retries(events: list[Recorded]) -> int:
    """How many times in a row a turn was retried (`turn_retried`) without a step committed since."""
    count = 0
    for rec in reversed(events):
        if rec.kind != "turn_retried":
            break
        count += 1
    return count


UNKNOWN_NOTE = "The server stopped while this action was under way: it may or may not have taken effect."


def call_result(call: CallState, *, settled: bool = False) -> Any:
    """
    The result the model sees for a call: None while it has none yet.

    `settled`: the call's turn is over (an earlier turn in the history), so a call without a
    result is said to have an unknown outcome (its action started), to have expired, or not to
    have run at all.
    """
    if call.completion is not None:
        return {"completed": call.completion.outcome == "completed", "reason": call.completion.reason}
    # A staff note reaches the model, and so the customer, only when staff marked it customer-visible.
    note = call.resolution_note if call.resolution_visible else ""
    if call.resolution == "done" and call.finished is None:
        done = {"status": "done", "note": note or "confirmed by staff after an interruption"}
        return done if call.resolution_result is None else {**done, "result": call.resolution_result}
    if call.resolution == "abandon" and call.finished is None:
        return {"status": "abandoned", "note": note}
    if call.answer is not None and "decision" in call.answer and call.answer["decision"] == "deny":
        return {"denied": True, "answered_by": call.answered_by}
    if call.answer is not None and call.answer.get("decision") == "expired":
        return {"expired": True}
    if call.finished is not None and call.edits:
        # The model asked for other arguments than ran: it is told, in words, what the approver changed.
        outcome = {"result": _seen(call.finished)} if call.finished.ok else {"error": call.finished.error}
        return {"note": f"approved with changes: {edited_text(call.edits)}", **outcome}
    if call.finished is not None:
        return _seen(call.finished) if call.finished.ok else {"error": call.finished.error}
    if call.answer is not None and "decision" not in call.answer:
        return call.answer.get("output", call.answer)
    if not settled:
        return None
    if call.started:
        return {"outcome": "unknown", "attempted_at": call.attempted_at, "note": UNKNOWN_NOTE}
    if call.expired:
        return {"expired": True}
    return {"outcome": "not_run"}


def _seen(finished: ActionFinished) -> Any:
    """An action's output as the model sees it: cut to the tool's `max_result_chars` when it was longer."""
    return finished.output if finished.model_output is None else finished.model_output


def past_rounds(state: TurnState, *, settled: bool = False) -> list[PastRound]:
    return [
        PastRound(
            text=r.text,
            calls=[ToolCall(c, state.calls[c].tool, state.calls[c].arguments, state.calls[c].vendor_id) for c in r.call_ids],
            results={c: call_result(state.calls[c], settled=settled) for c in r.call_ids},
        )
        for r in state.rounds
        if not r.closing
    ]


# --- steps -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallModel:
    closing: bool = False


@dataclass(frozen=True)
class RequestClient:
    calls: list[CallState]


@dataclass(frozen=True)
class RunAction:
    call: CallState
    tool: dict[str, Any] | None
    attempt: int
    problem: str = ""  # why the call cannot run (see `call_problem`): it fails with this, nothing runs


@dataclass(frozen=True)
class Ambiguous:
    call: CallState


@dataclass(frozen=True)
class EvaluateCompletion:
    call: CallState
    outcome: str
    reason: str


@dataclass(frozen=True)
class Finish:
    text: str
    fallback: bool = False
    complete_conversation: bool = False


@dataclass(frozen=True)
class Wait:
    pass


@dataclass(frozen=True)
class Done:
    pass


Step = CallModel | RequestClient | RunAction | Ambiguous | EvaluateCompletion | Finish | Wait | Done


def effective_budget(deployment: int, config: dict[str, Any], state: TurnState) -> int:
    """The lowest of the deployment, assistant and ingress-directive step budgets."""
    budgets = [deployment, config.get("step_budget", deployment)]
    if state.step_budget:
        budgets.append(state.step_budget)
    return max(1, min(budgets))


MAX_ARGUMENT_CHARS = 100_000  # as apps/agent/providers/wire.py reads them


def call_problem(config: dict[str, Any], call: CallState) -> str:
    """
    Why a call the model made cannot be made at all, or "": the model is told, and may call again.

    An unknown tool (a name longer than any tool's is one), arguments that were not a JSON
    object, or arguments too long to keep.
    """
    if tool_by_name(config, call.tool) is None:
        return f"unknown tool {call.tool!r}"
    if "_oversized_arguments" in call.arguments:
        return f"the tool call's arguments were longer than {MAX_ARGUMENT_CHARS} characters; call it again with shorter ones"
    if "_malformed_arguments" in call.arguments:
        return "the tool call's arguments were not valid JSON; call it again with a JSON object"
    return ""


def _client_kind(config: dict[str, Any], call: CallState) -> bool:
    if call.tool == "ask_question":
        return True
    tool = tool_by_name(config, call.tool)
    return tool is not None and tool["kind"] == "client"


def next_step(state: TurnState, config: dict[str, Any], budget: int) -> Step:
    """Decide a turn's next step from what its log says so far."""
    if state.ended or state.ambiguous_call:
        return Done()
    last_text = next((r.text for r in reversed(state.rounds) if r.text), "")
    if any(r.closing for r in state.rounds):
        return Finish(last_text or FALLBACK_REPLY, fallback=not last_text)
    if not state.rounds:
        return CallModel()
    last = state.rounds[-1]
    requests: list[CallState] = []
    runnable: RunAction | None = None
    pending = False
    completion: CallState | None = None
    for call_id in last.call_ids:
        call = state.calls[call_id]
        tool = tool_by_name(config, call.tool)
        if call.tool == "complete_conversation":
            completion = completion or call
            continue
        problem = call_problem(config, call)
        # A call of a known tool already put to a person (by an older version) is left to its answer.
        if problem and not (call.requested and tool is not None):
            if call.finished is None and runnable is None:
                runnable = RunAction(call, None, call.started + 1, problem)
            continue
        if _client_kind(config, call):
            if not call.requested:
                requests.append(call)
            elif call.answer is None:
                pending = True
            continue
        if tool.get("requires_approval"):
            if not call.requested:
                requests.append(call)
                continue
            if call.answer is None:
                pending = True
                continue
            if call.answer["decision"] in ("deny", "expired"):
                continue
        if call.finished is not None or call.resolution == "done":
            continue
        side_effecting = calls.side_effecting(tool) if tool.get("action") in ACTIONS else False
        if call.started and side_effecting and call.resolution != "not_done_retry":
            return Ambiguous(call)
        if runnable is None:
            runnable = RunAction(call, tool, call.started + 1)
    if requests:
        return RequestClient(requests)
    if runnable is not None:
        return runnable
    if pending:
        return Wait()
    if completion is not None:
        if completion.completion is None:
            outcome, reason = completion_outcome(config, state, last, completion)
            return EvaluateCompletion(completion, outcome, reason)
        if completion.completion.outcome == "completed":
            return Finish(last.text or last_text, complete_conversation=True)
    if not last.call_ids or len(state.rounds) >= budget:
        if last_text:
            return Finish(last_text)
        return CallModel(closing=True)
    return CallModel()


def completion_outcome(config: dict[str, Any], state: TurnState, last: RoundState, call: CallState) -> tuple[str, str]:
    """
    Apply the completion rule at the end of the model round that asked for it.

    Completed only when the assistant allows it, no client action is pending, and
    `complete_conversation` is the final executed server tool of the run.
    """
    if not config.get("allow_conversation_completion"):
        return "not_completed", "completion is not enabled for this assistant"
    if state.mode != "agent":
        return "not_completed", "only agent conversations can be completed"
    others = [state.calls[c] for c in last.call_ids if c != call.call_id]
    if any(_client_kind(config, c) or (tool_by_name(config, c.tool) or {}).get("requires_approval") for c in others):
        return "not_completed", "a client action is pending"
    position = last.call_ids.index(call.call_id)
    if any(state.calls[c].tool != "complete_conversation" for c in last.call_ids[position + 1 :]):
        return "not_completed", "complete_conversation must be the final tool of the run"
    return "completed", ""
