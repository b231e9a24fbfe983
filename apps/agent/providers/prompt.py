"""The Chat Completions messages of a request: the history, the current turn, and fitting them to a context window."""

from __future__ import annotations

import json
from typing import Any

from apps.agent.providers.types import HumanLine, ModelRequest, PastRound, PastTurn

CONTINUE_NOTE = (
    "The previous turn was interrupted before it finished. Go on from where it stopped, using the results "
    "above. A call whose outcome is unknown may or may not have taken effect: if you call it again with the "
    "same arguments it is sent with its first attempt's idempotency key, so the other system can tell."
)


def _round_messages(past: PastRound) -> list[dict[str, Any]]:
    """A model round with tool calls: the assistant's calls, then one tool message per call, in order."""
    out: list[dict[str, Any]] = [{
        "role": "assistant",
        # Never null: several OpenAI-compatible servers refuse a null content beside tool calls.
        "content": past.text or "",
        "tool_calls": [
            {"id": c.vendor_id or c.call_id, "type": "function", "function": {"name": c.tool, "arguments": json.dumps(c.arguments)}}
            for c in past.calls
        ],
    }]
    for c in past.calls:
        # Always a string: a tool message's content is text on every server, whatever the result is.
        out.append({"role": "tool", "tool_call_id": c.vendor_id or c.call_id, "content": json.dumps(past.results.get(c.call_id))})
    return out


def _human_message(line: HumanLine) -> dict[str, str]:
    """One line of the part a person held, as the model reads it: the customer as the user, the rest said by the system."""
    person = line.name or "A person from the support team"
    match line.kind:
        case "customer":
            return {"role": "user", "content": line.text}
        case "staff":
            return {"role": "system", "content": f"{person} (a person, not you) replied to the customer: {line.text}"}
        case "requested":
            why = f" Reason: {line.text}" if line.text else ""
            return {"role": "system", "content": f"The conversation was handed to a person.{why}"}
        case "joined":
            return {"role": "system", "content": f"{person} took over the conversation from you."}
        case "returned":
            note = f" Their note for you: {line.text}" if line.text else ""
            return {"role": "system", "content": f"{person} handed the conversation back to you.{note}"}
        case "cancelled":
            return {"role": "system", "content": "The customer stopped waiting for a person and went back to you."}
        case _:
            return {"role": "system", "content": f"No person was free; the customer was told: {line.text}"}


def openai_messages(request: ModelRequest, *, budget_tokens: int = 0) -> list[dict[str, Any]]:
    """
    Build the Chat Completions message list for a request: the earlier turns from the record, then this one.

    `budget_tokens` (0: no bound) bounds what is sent (docs/api.md, "Bounded context"): the newest
    earlier turns that fit are kept, and always the instructions, the remembered facts, this turn and
    every earlier turn with an action whose outcome is still unknown (what a re-attempt repeats).
    One system line says what was left out.
    """
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    if request.memory:
        messages.append({"role": "system", "content": "Facts to remember:\n" + "\n".join(f"- {m}" for m in request.memory)})
    earlier = [_turn_messages(turn) for turn in request.history]
    current = _current_messages(request)
    if budget_tokens:
        earlier = _fit(earlier, request.history, budget_tokens - estimate_tokens(messages) - estimate_tokens(current))
    for block in earlier:
        messages += block
    return messages + current


def _turn_messages(turn: PastTurn) -> list[dict[str, Any]]:
    messages = [_human_message(line) for line in turn.human]
    if turn.message:
        messages.append({"role": "user", "content": turn.message})
    for past in turn.rounds:
        if past.calls:
            messages += _round_messages(past)
    if turn.reply:
        messages.append({"role": "assistant", "content": turn.reply})
    return messages


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """
    A generous count of the tokens messages take: a token per three characters of their JSON.

    Tokenizers differ per model and none is at hand here; English runs about four characters a
    token, so this errs on the side of sending less.
    """
    return sum(len(json.dumps(m, ensure_ascii=False)) // 3 + 4 for m in messages)


def _unknown_outcome(turn: PastTurn) -> bool:
    return any(isinstance(r, dict) and r.get("outcome") == "unknown" for past in turn.rounds for r in past.results.values())


def _fit(blocks: list[list[dict[str, Any]]], history: list[PastTurn], budget: int) -> list[list[dict[str, Any]]]:
    """The newest earlier turns that fit `budget`, the ones that must not be forgotten, and a line for the rest."""
    if estimate_tokens([m for block in blocks for m in block]) <= budget:
        return blocks
    kept = [_unknown_outcome(turn) for turn in history]
    budget -= sum(estimate_tokens(block) for block, keep in zip(blocks, kept, strict=True) if keep) + 40
    for i in range(len(blocks) - 1, -1, -1):
        if kept[i]:
            continue
        cost = estimate_tokens(blocks[i])
        if cost > budget:
            break
        kept[i], budget = True, budget - cost
    left_out = [turn for turn, keep in zip(history, kept, strict=True) if not keep]
    if not left_out:
        return blocks
    said = sum(1 for turn in left_out if turn.status != "human")
    parts = [f"{said} earlier turn{'s' if said != 1 else ''}"] if said else []
    if any(turn.status == "human" for turn in left_out):
        parts.append("earlier messages with a person")
    line = {"role": "system", "content": (
        f"Left out here to fit the model's context: {' and '.join(parts)} of this conversation. What follows is "
        "its newest part, and every earlier action whose outcome is still unknown.")}
    return [[line], *(block for block, keep in zip(blocks, kept, strict=True) if keep)]


def _current_messages(request: ModelRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.continuation:
        messages.append({"role": "system", "content": CONTINUE_NOTE})
    else:
        messages.append({"role": "user", "content": request.message})
    for past in request.rounds:
        if past.calls:
            messages += _round_messages(past)
        elif past.text:
            messages.append({"role": "assistant", "content": past.text})
    if request.closing:
        messages.append(
            {
                "role": "system",
                "content": "The step budget is spent. Reply to the user now, without tools: say briefly what you tried.",
            }
        )
    return messages
