"""
A conversation's history as a model sees it, built from the log (PRODUCT.md rule 8, "History is the record").

Pure: no Django. `build(entries)` reads every entry of a conversation's earlier turns into `PastTurn`s
(the user's message, each model round's calls with the outcome of each, the reply) and finds the
attempts whose outcome nobody knows: a side-effecting action that started and never finished, in a
turn quarantined as ambiguous and not resolved since. A later call of the same tool with the same
canonical arguments is a re-attempt of the first of them (`History.reattempt_of`).

The runner builds the request of every model round from it, and replay builds it from the same
entries, so what a model was told can always be read back from the record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from apps.agent import turns
from apps.agent.providers import HumanLine, PastRound, PastTurn, ToolCall
from apps.ledger.types import (
    ControlReturned,
    ControlTaken,
    CustomerMessage,
    HandoffRequested,
    HandoffTimedOut,
    MemoryCleared,
    MemoryRemembered,
    Recorded,
    StaffMessage,
)
from apps.runs.machine import TurnStatus


@dataclass(frozen=True)
class Attempt:
    """The first attempt at a logical action whose outcome is unknown."""

    turn_id: str
    call_id: str
    tool: str
    arguments: dict[str, Any]
    attempted_at: str
    idempotency_key: str

    def link(self) -> dict[str, str]:
        """What a re-attempt records of it (`reattempt_of`)."""
        return {"turn_id": self.turn_id, "call_id": self.call_id, "attempted_at": self.attempted_at}


@dataclass(frozen=True)
class History:
    turns: list[PastTurn] = field(default_factory=list)
    unknown: dict[tuple[str, str], Attempt] = field(default_factory=dict)
    # (turn_id, call_id) -> the key each action that started was sent with (a re-attempt's is its first attempt's)
    keys: dict[tuple[str, str], str] = field(default_factory=dict)

    def reattempt_of(self, tool: str, arguments: dict[str, Any]) -> Attempt | None:
        """The earlier attempt a call of `tool` with `arguments` repeats, while that attempt's outcome is unknown."""
        return self.unknown.get(action_key(tool, arguments))

    def key_of(self, link: dict[str, str]) -> str:
        """The Idempotency-Key of the attempt a `reattempt_of` names: the one it was sent with."""
        return self.keys.get((link["turn_id"], link["call_id"])) or f"{link['turn_id']}:{link['call_id']}"


def action_key(tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """What makes two calls the same logical action: the tool and its canonical arguments."""
    return tool, json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_STATUS = {
    "turn_complete": TurnStatus.COMPLETED,
    "turn_failed": TurnStatus.FAILED,
    "turn_expired": TurnStatus.EXPIRED,
    "turn_abandoned": TurnStatus.ABANDONED,
    "turn_resolved": TurnStatus.INTERRUPTED,
    "turn_superseded": TurnStatus.ABANDONED,  # the customer wrote instead of answering its requests
    "turn_handed_off": TurnStatus.HANDED_OFF,
}


def build(entries: list[Recorded], *, exclude_turn: str = "") -> History:
    """
    Read a conversation's entries (in `seq` order) into its history, leaving out `exclude_turn`.

    Entries without a dispatched turn (participants, memory cleared by staff) are not part of any turn.
    """
    by_turn: dict[str, list[Recorded]] = {}
    # The turns and the parts a person held, in the order they began: ("turn", turn id) or ("human", lines).
    order: list[tuple[str, Any]] = []
    remembered: dict[str, tuple[str, str]] = {}  # fact id -> the (turn, call) of `remember` that made it
    cleared: set[str] = set()
    for rec in entries:
        match rec.body:
            case MemoryRemembered(fact_id=fact_id, call_id=call_id):
                remembered[fact_id] = (rec.turn_id, call_id)
            case MemoryCleared(fact_ids=fact_ids):
                cleared.update(fact_ids)
        line = _human_line(rec)
        if line is not None:
            if not order or order[-1][0] != "human":
                order.append(("human", []))
            order[-1][1].append(line)
            continue
        if rec.turn_id and rec.turn_id != exclude_turn:
            if rec.turn_id not in by_turn:
                order.append(("turn", rec.turn_id))
            by_turn.setdefault(rec.turn_id, []).append(rec)
    forgotten = {remembered[f] for f in cleared if f in remembered}
    out: list[PastTurn] = []
    unknown: dict[tuple[str, str], Attempt] = {}
    keys: dict[tuple[str, str], str] = {}
    for what, value in order:
        if what == "human":
            out.append(PastTurn("", "", False, [], "", TurnStatus.HUMAN, human=value))
            continue
        turn_id, events = value, by_turn[value]
        if not any(e.kind == "turn_dispatched" for e in events):
            continue
        state = turns.turn_state(events)
        # A later call of the same action that succeeded settles what an earlier attempt left
        # unknown; one that failed does not (the earlier attempt may still have gone through).
        for call in state.calls.values():
            if call.finished is not None and call.finished.ok:
                unknown.pop(action_key(call.tool, call.arguments), None)
            if call.idempotency_key:
                keys[(turn_id, call.call_id)] = call.idempotency_key
        if state.ambiguous_call:
            call = state.calls[state.ambiguous_call]
            unknown.setdefault(
                action_key(call.tool, call.arguments),
                Attempt(turn_id, call.call_id, call.tool, call.arguments, call.attempted_at, call.idempotency_key),
            )
        status = TurnStatus.INTERRUPTED if state.ambiguous_call else _STATUS.get(state.ended, TurnStatus.OPEN)
        rounds = [_forget(r, turn_id, forgotten) for r in turns.past_rounds(state, settled=True)]
        out.append(PastTurn(turn_id, "" if state.continuation else state.message, state.continuation, rounds, state.reply, status))
    return History(out, unknown, keys)


def _human_line(rec: Recorded) -> HumanLine | None:
    """An entry of the part a person held, as a line of the history; None for any other entry."""
    match rec.body:
        case CustomerMessage(text=text):
            return HumanLine("customer", text)
        case StaffMessage(text=text, name=name, staff=staff):
            return HumanLine("staff", text, name or staff)
        case HandoffRequested(reason=reason):
            return HumanLine("requested", reason)
        case ControlTaken(name=name, staff=staff):
            return HumanLine("joined", "", name or staff)
        case ControlReturned(note=note, name=name, staff=staff):
            return HumanLine("returned", note, name or staff)
        case HandoffTimedOut(message=message):
            return HumanLine("timed_out", message)
    return None


FORGOTTEN = "(a fact that was cleared from memory)"


def _forget(past: PastRound, turn_id: str, forgotten: set[tuple[str, str]]) -> PastRound:
    """A round whose `remember` calls made facts cleared since: their text never reaches a model again."""
    if not any((turn_id, c.call_id) in forgotten for c in past.calls):
        return past
    calls = [ToolCall(c.call_id, c.tool, {"fact": FORGOTTEN}, c.vendor_id) if (turn_id, c.call_id) in forgotten else c
             for c in past.calls]
    results = {call_id: {"forgotten": True} if (turn_id, call_id) in forgotten else value for call_id, value in past.results.items()}
    return PastRound(past.text, calls, results)
