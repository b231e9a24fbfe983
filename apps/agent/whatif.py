"""
What `replay --what-if` asks the agent: would the completion rule still give what the log says.

Registered with the log's what-if judges in `AgentConfig.ready()` (the log knows no rule above it).
"""

from __future__ import annotations

from apps.agent import turns
from apps.agent.models import Assistant
from apps.ledger.replay import WhatIf
from apps.ledger.types import CompletionRequested, Recorded


def judge_completion(report: WhatIf, conversation_id: str, recorded: list[Recorded], changed: list[Recorded]) -> None:
    """Re-apply the completion rule to every completion request of the changed log."""
    config = Assistant.objects.filter(conversations__id=conversation_id).values_list("config", flat=True).first() or {}
    report.completion_recorded = any(rec.kind == "conversation_completed" for rec in recorded)
    holds = any(rec.kind == "conversation_completed" for rec in changed)
    for i, rec in enumerate(changed):
        if rec.kind != "completion_requested":
            continue
        prefix = [e for e in changed[:i] if e.turn_id == rec.turn_id]
        said = rec.payload.get("outcome")
        try:
            request: CompletionRequested = rec.body
            state = turns.turn_state(prefix)
            call = state.calls[request.call_id]
            last = next(r for r in reversed(state.rounds) if call.call_id in r.call_ids)
            outcome, reason = turns.completion_outcome(config, state, last, call)
        except (KeyError, StopIteration, TypeError, AttributeError) as exc:
            outcome, reason = "not_completed", f"the turn no longer reads ({type(exc).__name__}: {exc})"
        completes = any(e.kind == "conversation_completed" and e.turn_id == rec.turn_id for e in changed[i:])
        if said != outcome:
            report.completion.append(
                f"completion at seq {rec.seq}: recorded {said}, the rule now says {outcome}" + (f" ({reason})" if reason else "")
            )
        if completes and (said != "completed" or outcome != "completed"):
            holds = False
    report.completion_holds = holds if report.completion_recorded else None
