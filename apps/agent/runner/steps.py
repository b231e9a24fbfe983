"""
The step loop of one run: the planner decides its next step from the log, and the step is committed.

The planner (`turns.next_step`) is pure; this loop does what it decides (a model round, a tool
call, a request to a person, the reply) and commits each step before deciding the next
(`commits.append`), so a run that stops anywhere resumes from its log. A run resumed after its
writer died records that first (`turn_retried`).
"""

from __future__ import annotations

from functools import partial

from django.conf import settings

from apps.agent import calls, knowledge, turns
from apps.agent.providers import ModelFailed, ModelRequest, provider_for
from apps.agent.runner.commits import Journal, append, turn_events
from apps.agent.runner.control import ControlCheck
from apps.agent.runner.opening import read_opening
from apps.agent.runner.stops import stopping
from apps.agent.runner.toolcalls import joins_model_round, request_event, run_action
from apps.conversations import broadcast, faults, lease
from apps.conversations.actions import new_id
from apps.ledger.types import (
    CompletionRequested,
    ConversationCompleted,
    ModelRound,
    Recorded,
    TurnComplete,
    TurnFailed,
    TurnRetried,
)
from apps.runs.models import WorkflowLog
from apps.workspaces.queries import active_facts


def execute_run(run: WorkflowLog, held: lease.Held, *, retry: str = "") -> bool:
    """
    Take committed steps of one run until it ends, pauses or can do nothing more.

    The step that ends or pauses the run gives the lease up in its own commit; True when it did.

    `retry` ("recovery" or "takeover") says the run resumes after its writer died: it records
    `turn_retried` (attempt, last committed seq) before its next step.

    A model round whose next step is a read-only action (or a tool that only writes the log) is
    committed together with that action's start and finish: one transaction instead of three.
    A crash before that commit loses nothing that was done, only work to do again.
    """
    cid = str(run.conversation_id)
    opening = read_opening(cid, run.turn_id)
    config = opening.config
    provider = provider_for(config)
    # A tool that cannot run now (a changed or missing tool of a tool source) is not offered; a call
    # of it that comes anyway fails with the reason.
    tools = [*(t for t in config.get("tools", []) if not t.get("unavailable")), *calls.offered_builtins(config)]
    events: list = opening.turn
    deferred: list = []  # decided but not yet committed: a model round waiting for its read-only action
    earlier = opening.earlier  # the conversation's other turns, read once per run
    # Who has control, as the opening read it and then as the run's own commits tell (ControlCheck).
    control = ControlCheck(opening.control)
    journal = Journal(head=control.first_head, control=control)

    def commit(new: list, *, last: bool = False) -> bool:
        nonlocal deferred
        batch, deferred = [*deferred, *new], []
        append(cid, run.turn_id, batch, held, journal, release=last)
        if any(isinstance(e, ModelRound) for e in batch):
            faults.reach("after_model_round")
        return last

    facts: list[str] | None = opening.facts  # the remembered facts, read again only when the log may have changed them
    while True:
        events, moved = turn_events(cid, run.turn_id, events, journal)
        if moved:
            facts = None
        state = turns.turn_state(events + [_provisional(e, run.turn_id) for e in deferred])
        budget = turns.effective_budget(settings.WAYPOINT_STEP_BUDGET, config, state)
        step = turns.next_step(state, config, budget)
        if deferred and not joins_model_round(step):
            commit([])
            continue
        marker = _retry_marker(retry, run, events, state, step)
        retry = ""
        # The run stops here when a side effect of it is in doubt (quarantined, see `stopping`), or when
        # it was resumed again and again without getting a step further: a turn that takes its process down fails.
        stuck = marker is not None and turns.stalled_retries(events) >= turns.MAX_RETRIES
        if stuck or isinstance(step, turns.Ambiguous):
            failed = TurnFailed(run_id=run.run_id, error=f"The run stopped after {turns.MAX_RETRIES} resumptions "
                                "that got no further. Send a new message to try again.")
            return commit([stopping(run, step, failed)], last=True)
        if marker is not None:
            commit([marker])
            continue
        if isinstance(step, turns.Done | turns.Wait):
            return False
        if isinstance(step, turns.CallModel | turns.RunAction) and not deferred:
            # No model round and no tool once a person has the conversation (a tool that joins a
            # model round goes with that round's check).
            control.before_step(cid)
        if isinstance(step, turns.CallModel):
            request = ModelRequest(
                history=earlier.turns, message=state.message, continuation=state.continuation,
                rounds=turns.past_rounds(state), tools=tools, closing=step.closing,
                memory=facts if facts is not None else (facts := active_facts(cid)),
                instructions=config.get("instructions") or "",
            )
            try:
                answer = provider.complete(request, on_draft=partial(broadcast.draft_changed, cid, run.run_id, events[-1].seq))
            except ModelFailed as exc:
                return commit([TurnFailed(run_id=run.run_id, error=str(exc))], last=True)
            deferred.append(
                ModelRound(
                    run_id=run.run_id,
                    round=len(state.rounds) + 1,
                    text=answer.text,
                    calls=[c.as_dict() for c in answer.calls] if not step.closing else [],
                    usage=answer.usage,
                    closing=step.closing,
                )
            )
        elif isinstance(step, turns.RequestClient):
            return commit([request_event(run, state, config, c, earlier) for c in step.calls], last=True)
        elif isinstance(step, turns.RunAction):
            if run_action(cid, run, step, held, commit, earlier, state, config):
                return True
        elif isinstance(step, turns.EvaluateCompletion):
            commit([CompletionRequested(run_id=run.run_id, call_id=step.call.call_id, outcome=step.outcome, reason=step.reason)])
        elif isinstance(step, turns.Finish):
            faults.reach("before_batch_two")
            batch_two = [_turn_complete(run, state, config, step)]
            if step.complete_conversation:
                batch_two.append(ConversationCompleted(run_id=run.run_id))
            commit(batch_two, last=True)
            faults.reach("after_batch_two")
            return True


BATCH_ONE_KINDS = frozenset({"turn_dispatched", "ingress_directive"})


def _retry_marker(retry: str, run: WorkflowLog, events: list, state: turns.TurnState, step: turns.Step) -> TurnRetried | None:
    """
    The `turn_retried` entry a resumed run records before its next step, if it needs one.

    None for a run with nothing left to do, and for a run taken over from a dead holder before it
    took any step (it is simply run). A turn whose side effect is in doubt is never retried: it
    stops quarantined before its marker is looked at (`stops.stopping`).
    """
    if not retry or isinstance(step, turns.Done | turns.Wait):
        return None
    if retry == "takeover" and all(e.kind in BATCH_ONE_KINDS for e in events):
        return None
    return TurnRetried(run_id=run.run_id, attempt=state.retries + 1, after_seq=events[-1].seq)


def _turn_complete(run: WorkflowLog, state: turns.TurnState, config: dict, step: turns.Finish) -> TurnComplete:
    """
    The reply; with knowledge on, its `[n]` markers resolved against the passages the turn's
    searches returned, and a person offered with it when they found nothing (`no_answer`).
    """
    text, citations, dropped, offer = step.text, [], [], False
    if knowledge.offered(config):
        results = [c.finished.output for c in state.calls.values()
                   if c.tool == knowledge.TOOL and c.finished is not None and c.finished.ok]
        text, citations, dropped = knowledge.cite(step.text, results)
        offer = knowledge.offers_a_person(config, results)
    return TurnComplete(run_id=run.run_id, message_id=new_id("msg"), text=text, fallback=step.fallback,
                        citations=citations, dropped_citations=dropped, offer_handoff=offer)


def _provisional(event, turn_id: str) -> Recorded:
    """A decided entry as the planner sees it before it is committed."""
    return Recorded(seq=0, kind=event.kind, turn_id=turn_id, actor="agent", created_at="", payload=event.payload())
