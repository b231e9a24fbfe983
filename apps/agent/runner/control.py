"""
Whether the agent still has control of a run's conversation, read only when the run cannot know.

A person may take a conversation, or one be asked for, while its run is under way (PRODUCT.md
"Human handoff"); the run stops at its next step boundary (`stops.hand_off`). A read of control
before every step would cost a round trip each; `ControlCheck` knows when the run's own commits
already tell it, and says why in one place.
"""

from __future__ import annotations

from apps.conversations import statements as conversation_statements
from apps.ledger.types import ActionFinished, QuarantineSettled, TurnAmbiguous, TurnHandedOff

# Entries that record what already happened, not a new step of the agent's (see ControlCheck).
_RECORDS = TurnHandedOff | TurnAmbiguous | ActionFinished | QuarantineSettled


class HandedOff(Exception):
    """Control left the agent (PRODUCT.md "Human handoff"): the run takes no further step."""


def _check(conversation_id: str, *, lock: bool = False, found: list[tuple] | None = None) -> None:
    """
    :raises HandedOff: a person has the conversation, or one was asked for

    `lock`: read it under the conversation's row lock, which a change of control takes too, so
    that no change can commit between this read and the caller's append. `found`: the rows of
    that read, made already with others (the opening reads) and nothing committed since.
    """
    if found is None:
        found = conversation_statements.control_mode(locked=lock).rows(conversation_id)
    if found and found[0][0] != "agent":
        raise HandedOff()


class ControlCheck:
    """
    Who has control of a run's conversation, as far as the run knows: read only when it cannot know.

    No model round and no tool once a person has the conversation (or one was asked for), and no
    step recorded after a change of control the run did not see (PRODUCT.md "Human handoff"). A
    change of control is an entry, so it moves the log's head, and a run commits on the head it
    expects, refused once anyone else appended (`store.commit_optimistic`). What the run knows is
    one flag, and this is its invariant:

        `agent_at_head`: the agent had control at the head the run's next commit chains on.

    - The opening reads control with the head, in one snapshot. If the agent had control then, the
      first commit chains on that head (`first_head`) as later ones chain on their own, and the flag
      starts true; otherwise there is no such head and the first commit locks the row.
    - A commit on the run's own head leaves the flag as it was: nobody appended in between.
    - A commit off it locks the conversation's row and reads control under the lock, so a take-over
      waits for it, and the flag becomes true (`at_locked_commit`). Not so for entries that only
      record what already happened (an action's outcome, a quarantine, a stop): they are no new step
      and are committed whoever has control now, or a refund sent just before a take-over would be
      lost from the record; control is not read for them, and the flag becomes false.
    - A commit whose answer was lost leaves no head to chain on: the flag becomes false (`lost`).

    Before a model round or a tool (`before_step`) nothing is read while the flag holds: a take-over
    since then is found by that step's own commit, which finds the head moved. Otherwise control is
    read (a take-over after that read moves the head too), except that the opening's read stands for
    the first step's check while the run has committed nothing (`committing` ends that). Reading
    control before every model round and tool instead would cost a turn about 3 round trips more.
    """

    def __init__(self, opening: list[tuple] | None = None) -> None:
        """`opening`: the opening's read of control and the head (`CONTROL_AND_HEAD`), if the run made one."""
        agent = bool(opening and opening[0][0] == "agent")
        self.first_head: tuple[int, str] | None = (opening[0][1], opening[0][2]) if agent else None
        self.agent_at_head = agent
        self._opening = opening  # good for the first step's check until the run commits

    def before_step(self, conversation_id: str) -> None:
        """
        Check that the agent has control before a model round or a tool.

        :raises HandedOff: a person has the conversation, or one was asked for
        """
        if self.agent_at_head:
            return
        found, self._opening = self._opening, None
        _check(conversation_id, found=found)

    def committing(self) -> None:
        """A commit begins: after it, the opening's read stands for no check."""
        self._opening = None

    def at_locked_commit(self, conversation_id: str, events: list) -> None:
        """
        Check control under the conversation's row lock for a commit off the run's own head.

        Called in the commit's transaction, before its append.
        :raises HandedOff: the commit is a step of the agent's, and control is not the agent's
        """
        records = all(isinstance(e, _RECORDS) for e in events)
        if not records:
            _check(conversation_id, lock=True)
        self.agent_at_head = not records

    def lost(self) -> None:
        """A commit went through but its answer was lost: its head is not known, nor control there."""
        self.agent_at_head = False
