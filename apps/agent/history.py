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
    HandoffCancelled,
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
    summary = Summary()
    summary.feed(entries)
    return summary.history(exclude_turn=exclude_turn)


@dataclass
class _Turn:
    """One turn's entries, and what the history reads from them (kept until another entry of the turn comes)."""

    index: int  # its place in the summary's order
    events: list[Recorded] = field(default_factory=list)
    read: tuple | None = None  # (PastTurn, successes, keys, attempt) as of `events`; None: to be read again


@dataclass(frozen=True)
class _Fold:
    """The history's fold of the summary's first `upto` items, none left out: where the next `history` goes on from."""

    upto: int
    out: list[PastTurn]
    unknown: dict[tuple[str, str], Attempt]
    keys: dict[tuple[str, str], str]
    after_human: bool


class Summary:
    """
    A conversation's history folded forward as its log grows: `build` without reading every entry again.

    `feed` takes the entries after `head`; `history` gives what `build` gives for all of them. A turn
    is read again (`turns.turn_state`) only when an entry of its own came, or when clearing a fact
    forgets one of its calls, so a run of a long conversation reads what is new, not the whole log.
    Nor does `history` fold every turn again: it goes on from the fold of the items before the last
    one (or before the turn it leaves out), kept until one of those items is read again.
    """

    def __init__(self) -> None:
        self.head = 0
        self.last: Recorded | None = None  # the entry at `head`, to tell a log that grew from one that was repaired
        # The turns and the parts a person held, in the order they began: ("turn", turn id) or ("human", lines).
        self._order: list[tuple[str, Any]] = []
        self._turns: dict[str, _Turn] = {}
        self._remembered: dict[str, tuple[str, str]] = {}  # fact id -> the (turn, call) of `remember` that made it
        self._cleared: set[str] = set()
        self._fold: _Fold | None = None

    def feed(self, entries: list[Recorded]) -> None:
        """Fold entries (in `seq` order, each after `head`) into the summary."""
        for rec in entries:
            self.head, self.last = rec.seq, rec
            match rec.body:
                case MemoryRemembered(fact_id=fact_id, call_id=call_id):
                    before = self._remembered.get(fact_id)
                    self._remembered[fact_id] = (rec.turn_id, call_id)
                    if fact_id in self._cleared:
                        self._stale(before, self._remembered[fact_id])
                case MemoryCleared(fact_ids=fact_ids):
                    self._cleared.update(fact_ids)
                    self._stale(*(self._remembered.get(f) for f in fact_ids))
            line = _human_line(rec)
            if line is not None:
                if not self._order or self._order[-1][0] != "human":
                    self._order.append(("human", []))
                self._order[-1][1].append(line)
                continue
            if rec.turn_id:
                turn = self._turns.get(rec.turn_id)
                if turn is None:
                    turn = self._turns[rec.turn_id] = _Turn(len(self._order))
                    self._order.append(("turn", rec.turn_id))
                turn.events.append(rec)
                self._unread(turn)

    def _stale(self, *made: tuple[str, str] | None) -> None:
        """The turns whose calls made these facts read again: what is forgotten of them changed."""
        for found in made:
            if found is not None and found[0] in self._turns:
                self._unread(self._turns[found[0]])

    def _unread(self, turn: _Turn) -> None:
        turn.read = None
        if self._fold is not None and turn.index < self._fold.upto:
            self._fold = None

    def history(self, *, exclude_turn: str = "") -> History:
        """The history as `build` reads it from every entry fed so far, leaving out `exclude_turn`."""
        forgotten = {self._remembered[f] for f in self._cleared if f in self._remembered}
        # Items up to the last one, or up to the turn left out, are folded once and kept: the last
        # item may still grow (a person's part takes more lines), the turn left out must not be in it.
        excluded = self._turns.get(exclude_turn)
        stop = len(self._order) - 1 if excluded is None else min(len(self._order) - 1, excluded.index)
        fold = self._fold if self._fold is not None and self._fold.upto <= stop else _Fold(0, [], {}, {}, False)
        out, unknown, keys = list(fold.out), dict(fold.unknown), dict(fold.keys)
        after_human = fold.after_human  # the item before, the excluded turn aside, was a part a person held
        for i in range(fold.upto, len(self._order)):
            if i == stop and (self._fold is None or self._fold.upto < stop):
                self._fold = _Fold(i, list(out), dict(unknown), dict(keys), after_human)
            what, value = self._order[i]
            if what == "human":
                if after_human:  # what a person held on both sides of the excluded turn is one part, as in the log without it
                    out[-1] = PastTurn("", "", False, [], "", TurnStatus.HUMAN, human=[*out[-1].human, *value])
                else:
                    out.append(PastTurn("", "", False, [], "", TurnStatus.HUMAN, human=list(value)))
                after_human = True
                continue
            if value == exclude_turn:
                continue
            after_human = False
            turn = self._turns[value]
            if turn.read is None:
                turn.read = _read_turn(value, turn.events, forgotten)
            past, successes, turn_keys, attempt = turn.read
            if past is None:
                continue
            # A later call of the same action that succeeded settles what an earlier attempt left
            # unknown; one that failed does not (the earlier attempt may still have gone through).
            for key in successes:
                unknown.pop(key, None)
            keys.update(turn_keys)
            if attempt is not None:
                unknown.setdefault(action_key(attempt.tool, attempt.arguments), attempt)
            out.append(past)
        return History(out, unknown, keys)


def _read_turn(turn_id: str, events: list[Recorded], forgotten: set[tuple[str, str]]) -> tuple:
    """What the history takes from one turn: its PastTurn, the actions it settled, its keys and its unknown attempt."""
    if not any(e.kind == "turn_dispatched" for e in events):
        return None, [], {}, None
    state = turns.turn_state(events)
    successes = [action_key(c.tool, c.run_arguments) for c in state.calls.values() if c.finished is not None and c.finished.ok]
    keys = {(turn_id, c.call_id): c.idempotency_key for c in state.calls.values() if c.idempotency_key}
    attempt = None
    if state.ambiguous_call:
        call = state.calls[state.ambiguous_call]
        attempt = Attempt(turn_id, call.call_id, call.tool, call.run_arguments, call.attempted_at, call.idempotency_key)
    status = TurnStatus.INTERRUPTED if state.ambiguous_call else _STATUS.get(state.ended, TurnStatus.OPEN)
    rounds = [_forget(r, turn_id, forgotten) for r in turns.past_rounds(state, settled=True)]
    past = PastTurn(turn_id, "" if state.continuation else state.message, state.continuation, rounds, state.reply, status)
    return past, successes, keys, attempt


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
        case HandoffCancelled():
            return HumanLine("cancelled", "")
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
