"""
What a run reads before its first step, in one round trip, and this process's history summaries.

Every model round is told the conversation's other turns; a process keeps its fold of each
conversation's log (`Summaries`) so that a run reads only the entries after the head it last
folded, together with the assistant's configuration, the turn so far, who has control (and the
head then, for `control.ControlCheck`) and the remembered facts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from apps.agent import history
from apps.agent.statements import ASSISTANT_CONFIG
from apps.conversations import statements as conversation_statements
from apps.ledger import sql, store
from apps.toolsources.resolve import resolved
from apps.workspaces.queries import active_facts, reading_active_facts


class Summaries:
    """
    Each conversation's history summary (`history.Summary`) as of the last head this process read, the newest few hundred.

    A run reads only the entries after that head and folds them forward; the whole log is read again
    only for a conversation this process has not seen (after a restart, say) or whose log was
    repaired. Taken out while a run folds it and put back after, so two threads never fold one.
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._guard = threading.Lock()
        self._kept: OrderedDict[str, history.Summary] = OrderedDict()

    def take(self, conversation_id: str) -> history.Summary | None:
        with self._guard:
            return self._kept.pop(conversation_id, None)

    def keep(self, conversation_id: str, summary: history.Summary) -> None:
        with self._guard:
            self._kept[conversation_id] = summary
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)


_summaries = Summaries()


@dataclass(frozen=True)
class Opening:
    """What a run reads before its first step, asked in one round trip (`sql.batch`)."""

    config: dict
    turn: list  # the run's turn so far
    control: list[tuple]  # who has control and the head then (see control.ControlCheck)
    earlier: history.History
    facts: list[str]


def read_opening(conversation_id: str, turn_id: str) -> Opening:
    """
    The assistant's configuration, the turn's entries, who has control, the log since this process's
    summary of the other turns and the remembered facts: five reads in one round trip.
    """
    summary = _summaries.take(conversation_id) or history.Summary()
    # Read from the last entry folded: still there as it was, the log only grew since (see _earlier_turns).
    config, turn, control, since, facts = sql.batch(
        (ASSISTANT_CONFIG, (conversation_id,)),
        store.reading(conversation_id, turn_id=turn_id),
        (conversation_statements.CONTROL_AND_HEAD, (conversation_id,)),
        store.reading(conversation_id, after_seq=max(0, summary.head - 1)),
        reading_active_facts(conversation_id),
    )
    return Opening(
        config=resolved(config[0][0]), turn=store.entries(conversation_id, turn), control=control,
        earlier=_earlier_turns(conversation_id, turn_id, summary, store.entries(conversation_id, since)),
        facts=active_facts(conversation_id, facts),
    )


def _earlier_turns(conversation_id: str, turn_id: str, summary: history.Summary, entries: list) -> history.History:
    """
    The conversation's other turns as the log recorded them: what every model round is told.

    `summary` is this process's fold of the log as far as it read (taken out of `_summaries`), and
    `entries` the log from its last entry on.
    """
    # From the last entry folded: still there as it was, the log only grew since; otherwise
    # `conversation repair` removed and renumbered entries, and the summary is folded anew.
    if summary.last is not None:
        if entries and entries[0] == summary.last:
            entries = entries[1:]
        else:
            summary = history.Summary()
            entries = store.read(conversation_id)
    summary.feed(entries)
    _summaries.keep(conversation_id, summary)
    return summary.history(exclude_turn=turn_id)
