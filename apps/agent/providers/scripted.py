"""The scripted provider: deterministic rules and steps, no network (tests, demos, the bench)."""

from __future__ import annotations

import json
import re
import time
from functools import partial
from typing import Any

from apps.agent.providers.types import (
    DraftSink,
    ModelRequest,
    ModelRound,
    PastRound,
    PastTurn,
    ToolCall,
    _no_draft,
)


class ScriptedProvider:
    """A rule-based model: the first rule whose `match` is found in the message; one step per round."""

    def __init__(self, config: dict[str, Any], *, stream_delay: float = 0.0):
        self.rules = config.get("rules", [])
        self.fallback = config.get("fallback", [{"say": "You said: {message}"}])
        self.stream_delay = stream_delay

    def _steps(self, message: str) -> list[dict[str, Any]]:
        for rule in self.rules:
            if re.search(rule["match"], message, re.IGNORECASE):
                return rule["steps"]
        return self.fallback

    def complete(self, request: ModelRequest, on_draft: DraftSink = _no_draft) -> ModelRound:
        if request.closing:
            tried = [c.tool for r in request.rounds for c in r.calls]
            if not tried:
                return ModelRound()
            return ModelRound(text="I could not finish this. I tried: " + ", ".join(dict.fromkeys(tried)) + ".")
        message, known = request.message, []
        if request.continuation:
            message, known = resume_point(request.history)
        steps = self._steps(message)
        rounds = [*known, *request.rounds]
        index = next_step_index(steps, rounds, approval_tools(request.tools))
        if index >= len(steps):
            return ModelRound()
        step = steps[index]
        last_result = next((list(past.results.values())[-1] for past in reversed(rounds) if past.results), None)
        text = _PLACEHOLDER.sub(lambda m: _placeholder(m, message, last_result, request.memory), step.get("say", ""))
        specs = step.get("calls") or ([{"call": step["call"], "arguments": step.get("arguments", {})}] if "call" in step else [])
        if "handoff" in step:  # asks for a person, as a model's `handoff_to_human` call does
            specs = [*specs, {"call": "handoff_to_human", "arguments": {"reason": step["handoff"]}}]
        fill = partial(_PLACEHOLDER.sub, lambda m: _placeholder(m, message, last_result, request.memory))
        calls = [
            ToolCall(call_id=f"call_{index + 1}_{i + 1}", tool=spec["call"],
                     # A text argument may carry placeholders too: {"query": "{message}"} searches for the question.
                     arguments={k: fill(v) if isinstance(v, str) and "{" in v else v for k, v in spec.get("arguments", {}).items()})
            for i, spec in enumerate(specs)
        ]
        if step.get("stream"):
            # Simulates a streaming vendor: the round's text arrives word by word.
            so_far = ""
            for chunk in re.findall(r"\S+\s*", text):
                so_far += chunk
                on_draft(so_far)
                time.sleep(self.stream_delay)
        return ModelRound(text=text, calls=calls, usage={"rounds": 1})


# One pass over the step's text, so a message or result that contains a placeholder is never read as one.
_PLACEHOLDER = re.compile(r"\{(message|memory|result|passages)(?:\.([A-Za-z0-9_-]+))?\}")


def _placeholder(match: re.Match, message: str, result: Any, memory: list[str]) -> str:
    """
    The text of a `say` placeholder: {message}, {result} (the JSON of the last tool result), {result.<field>}
    (one field of it as text, "" when it has none: a reply people read), {memory} (the remembered facts) or
    {passages} (the last search_knowledge result's passages as "[n] title", the markers a reply cites).
    """
    name, field_name = match.groups()
    if name == "passages":
        if field_name is not None:
            return match.group(0)
        found = result.get("passages") if isinstance(result, dict) else None
        return ", ".join(f"[{p['n']}] {p.get('title', '')}".rstrip() for p in found or [] if isinstance(p, dict) and "n" in p)
    if name == "message":
        return message if field_name is None else match.group(0)
    if name == "memory":
        return ("; ".join(memory) or "nothing") if field_name is None else match.group(0)
    if field_name is None:
        return json.dumps(result, sort_keys=True, separators=(", ", ": "))
    value = result.get(field_name) if isinstance(result, dict) else None
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def approval_tools(tools: list[dict[str, Any]]) -> frozenset[str]:
    """The names of the tools a person approves before they run."""
    return frozenset(t["name"] for t in tools if t.get("requires_approval"))


def outcome(past: PastRound, approval: frozenset[str]) -> str:
    """
    The outcome of a round's last call, as a `when` names it, or "" for none of those.

    Read from the result the model was given, as a model reading its history would: a denial, a
    declined answer, an error; a call that needed approval and has any other settled result was approved.
    """
    if not past.calls:
        return ""
    call = past.calls[-1]
    result = past.results.get(call.call_id)
    if call.tool == "search_knowledge" and isinstance(result, dict) and isinstance(result.get("passages"), list):
        return "found" if result["passages"] else "not_found"
    if isinstance(result, dict):
        if result.get("denied") is True:
            return "denied"
        if result.get("declined") is True:
            return "declined"
        if result.get("expired") is True:
            return "expired"
        if "error" in result and set(result) <= {"error", "note"}:
            return "failed"
        if _unsettled(result):
            return ""
    if result is None:
        return ""
    return "approved" if call.tool in approval else ""


def next_step_index(steps: list[dict[str, Any]], rounds: list[PastRound], approval: frozenset[str]) -> int:
    """
    The index of the step the next round takes, after `rounds` (each took one step).

    A step with `when` applies only right after that outcome of the previous call: otherwise it is
    passed over. Walking the rounds from the first makes the choice a function of the record alone.
    """
    index, previous = 0, ""
    for position in range(len(rounds) + 1):
        while index < len(steps) and steps[index].get("when") and steps[index]["when"] != previous:
            index += 1
        if position == len(rounds):
            break
        previous = outcome(rounds[position], approval)
        index += 1
    return index


def _unsettled(result: Any) -> bool:
    """A result that says the call's outcome is not known (or was given up on): it has to be made again."""
    return isinstance(result, dict) and (
        result.get("outcome") in ("unknown", "not_run") or result.get("expired") is True or result.get("status") == "abandoned"
    )


def resume_point(history: list[PastTurn]) -> tuple[str, list[PastRound]]:
    """
    Where a continuation goes on, read from the history as a model reading it would.

    Returns the message of the turn that the interrupted turns (a turn, and the continuations of
    it that were interrupted too) answer, and the rounds of its rule whose outcome is known, in
    order: the rule goes on after them.
    """
    chain: list[PastTurn] = []
    for turn in reversed(history):
        if turn.status == "human":
            continue
        chain.insert(0, turn)
        if not turn.continuation:
            break
    if not chain or chain[0].continuation:
        return "", []
    known: list[PastRound] = []
    for turn in chain:
        for past in turn.rounds:
            if any(_unsettled(r) for r in past.results.values()):
                break
            known.append(past)
    return chain[0].message, known
