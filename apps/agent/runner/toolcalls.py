"""
The tool calls of a run: an action run and its outcome committed, and what a call asks of a person.

An action that is not read-only commits its start before it runs, so a crash leaves a start
without a finish: a side-effecting one's turn is quarantined then, not sent twice (PRODUCT.md
rule 8). A read-only one commits its start and finish together, with the model round before it
when it may (`joins_model_round`). A call that needs a person becomes a request: an approval, a
question, or a client action.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.actions.registry import ACTIONS, ActionCall, ActionError, OutcomeUnknown
from apps.agent import calls, history, turns
from apps.agent.tools import approval_settings, named_approver
from apps.conversations import faults, lease
from apps.ledger import store
from apps.ledger.types import (
    ActionFinished,
    ActionStarted,
    ApprovalRequest,
    ClientActionRequested,
    QuarantineSettled,
    QuestionRequest,
    TurnAmbiguous,
)
from apps.runs.models import WorkflowLog
from apps.workspaces.storage import Workspace

log = logging.getLogger(__name__)


def run_action(cid: str, run: WorkflowLog, step: turns.RunAction, held: lease.Held, commit: Callable[..., bool],
               earlier: history.History, state: turns.TurnState, config: dict) -> bool:
    """Run one action and commit its outcome; True when that commit ended the run (and gave the lease up)."""
    call = step.call
    builtin = calls.BUILTINS.get(call.tool)
    if builtin is not None and builtin.run is not None and not step.problem:
        said = next((r.text for r in state.rounds if r.number == call.round), "")
        ran = builtin.run(calls.Call(cid, run, call, step.attempt, said, config=config, state=state))
        return commit(ran.events, last=ran.ends_run)
    if step.problem or _no_linked_action(step):
        # Recorded as an action that started and failed at once: the action log row the finish
        # updates must exist, or the step cannot commit and the run never ends.
        tool = _stored_name(call.tool)
        started = ActionStarted(run_id=run.run_id, call_id=call.call_id, tool=tool, action="", arguments=call.arguments,
                                side_effecting=False, idempotency_key=f"{run.turn_id}:{call.call_id}", attempt=step.attempt)
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=tool, ok=False,
                                  error=step.problem or f"unknown tool {tool!r}")
        commit([started, finished])
        return False
    action = ACTIONS[step.tool["action"]]
    side_effecting, read_only = calls.side_effecting(step.tool), calls.tool_class(step.tool) == "read"
    # A retry in this turn keeps the key it started with; a re-attempt of an earlier turn's
    # unknown outcome takes that attempt's key, so the receiving system can deduplicate it.
    reattempt_of = _reattempt(call, step.tool, earlier) if step.attempt == 1 else {}
    first_key = call.idempotency_key or (earlier.key_of(reattempt_of) if reattempt_of else f"{run.turn_id}:{call.call_id}")
    started = ActionStarted(
        run_id=run.run_id,
        call_id=call.call_id,
        tool=call.tool,
        action=action.name,
        arguments=call.run_arguments,  # as approved: an approver's changes included
        side_effecting=side_effecting,
        idempotency_key=first_key,
        attempt=step.attempt,
        reattempt_of=reattempt_of,
    )
    if not read_only:
        commit([started])  # before the action runs: a crash then leaves a start without a finish
    try:
        output = action.run(ActionCall(cid, run.turn_id, call.call_id, step.tool, call.run_arguments,
                                       workspace=Workspace(cid, lease=held.token), first_key=first_key))
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=True, output=output,
                                  model_output=_cut_for_model(output, step.tool))
    except OutcomeUnknown:
        if side_effecting:
            # Sent, and no answer: as if its writer had died mid-call, the turn is quarantined (rule 8).
            return commit([TurnAmbiguous(run_id=run.run_id, call_id=call.call_id, tool=call.tool, idempotency_key=first_key)],
                          last=True)
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False,
                                  error="no answer came in time; it was sent again under the same key without one either")
    except ActionError as exc:
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False, error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a broken action is the tool's failure, not the turn's crash
        log.exception("action %s raised", action.name)
        finished = ActionFinished(run_id=run.run_id, call_id=call.call_id, tool=call.tool, ok=False, error=type(exc).__name__)
    if side_effecting or action.remote:
        faults.reach("during_action")
    return commit([started, finished] if read_only else [finished, *_settled(reattempt_of, call, finished)])


def joins_model_round(step: turns.Step) -> bool:
    """Whether a step may commit together with the model round before it (see steps.execute_run)."""
    if not isinstance(step, turns.RunAction):
        return False
    if step.problem:
        return True  # the failure of a call that cannot be made: only log entries
    if step.call.tool in calls.BUILTINS:
        return calls.BUILTINS[step.call.tool].read_only
    if _no_linked_action(step):
        return True  # a tool the assistant does not have: its failure is only a log entry
    return ACTIONS.get(step.tool.get("action", "")) is not None and calls.tool_class(step.tool) == "read"


def _no_linked_action(step: turns.RunAction) -> bool:
    """A built-in tool or one the assistant does not have: nothing runs but the log."""
    return step.tool is None or step.tool.get("kind") == "builtin" or step.call.tool in calls.BUILTINS


def _stored_name(tool: str) -> str:
    """A tool name as the action log keeps it: a model's name for an unknown tool may be any length."""
    return tool if len(tool) <= 64 else tool[:64] + "…"


def _cut_for_model(output, tool: dict) -> object:
    """What the model is told of a long result: its first `max_result_chars` and a note; None when it fits."""
    limit = tool.get("max_result_chars")
    if not isinstance(limit, int) or limit <= 0:
        return None
    text = output if isinstance(output, str) else json.dumps(output, sort_keys=True, ensure_ascii=False)
    if len(text) <= limit:
        return None
    return {"result": text[:limit], "note": f"the result was cut at {limit} of its {len(text)} characters"}


def _settled(reattempt_of: dict, call: turns.CallState, finished: ActionFinished) -> list[QuarantineSettled]:
    """
    The end of the quarantine a successful re-attempt settles: the outcome is known, nothing is left to decide.

    Nothing for a re-attempt that failed (the first attempt may still have gone through) or whose
    quarantine staff resolved meanwhile.
    """
    if not reattempt_of or not finished.ok:
        return []
    quarantined = (WorkflowLog.objects.filter(turn_id=reattempt_of["turn_id"], quarantined=True)
                   .values_list("run_id", flat=True).first())
    if quarantined is None:
        return []
    return [QuarantineSettled(run_id=quarantined, turn_id=reattempt_of["turn_id"], call_id=reattempt_of["call_id"],
                              by_call_id=call.call_id)]


def _reattempt(call: turns.CallState, tool: dict, earlier: history.History) -> dict:
    """
    The first attempt a side-effecting call repeats (its `reattempt_of`), or {} for a new action.

    An approval asked for as a re-attempt stays one: the person approved sending it under the
    first attempt's key, whatever became known since.
    """
    if not calls.side_effecting(tool):
        return {}
    if call.reattempt_of:
        return call.reattempt_of
    attempt = earlier.reattempt_of(call.tool, call.run_arguments)
    return attempt.link() if attempt else {}


def request_event(run: WorkflowLog, state: turns.TurnState, config: dict, call: turns.CallState, earlier: history.History):
    """What a call that needs a person asks: a question, an approval of a server tool, or a client action."""
    if call.tool == "ask_question":
        question = str(call.arguments.get("question") or call.arguments.get("label") or "Could you tell me more?")
        return QuestionRequest(run_id=run.run_id, call_id=call.call_id, question=question, arguments={})
    tool = next(t for t in config["tools"] if t["name"] == call.tool)
    if tool["kind"] == "server":
        settings_ = approval_settings(tool)
        required = state.required_approver or config.get("required_approver", "")
        # A required approver of "staff" raises every approval of the turn to the team; never lowers one.
        approver = "staff" if required == "staff" else settings_["approver"]
        seconds = settings_["expires_in_seconds"]
        reattempt = _reattempt(call, tool, earlier)
        return ApprovalRequest(
            run_id=run.run_id,
            call_id=call.call_id,
            tool=call.tool,
            arguments=call.arguments,
            required_approver=named_approver(required, approver),
            reattempt_of=reattempt,
            approver="" if approver == "customer" else approver,
            expires_at=store.iso(timezone.now() + timedelta(seconds=seconds)) if seconds else "",
            # A re-attempt goes under its first attempt's key, which the receiving system deduplicates
            # on: changed arguments would silently not run. It is approved as it is, or denied.
            editable=[] if reattempt else settings_["editable"],
        )
    expires_at = ""
    if state.mode == "simple":
        expires_at = store.iso(timezone.now() + timedelta(seconds=settings.WAYPOINT_SIMPLE_EXPIRY_SECONDS))
    return ClientActionRequested(run_id=run.run_id, call_id=call.call_id, tool=call.tool, arguments=call.arguments, expires_at=expires_at)
