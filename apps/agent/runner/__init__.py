"""
Executing runs: the single writer of each conversation, and recovery after a crash.

`kick` hands a conversation to this process's workers once batch one (or the last answer of a
paused run) has committed. `drive` takes the conversation's lease, then executes its running runs
oldest first, one committed step at a time, until none is left. The recovery loop finds runs left
`running` by a process that died and drives them again under their original turn id.

The package, by job (each imports only those below it):
- `recovery`: runs orphaned by a dead writer, and the clock's work (expiry, time-outs, idle close).
- `drive`: `claim`, `kick` and `drive`, this process's workers, the runs of a conversation in turn.
- `leases`: this process's name as a lease holder, and the one thread that renews its leases.
- `steps`: the step loop of one run (`execute_run`).
- `toolcalls`: an action run and its outcome committed; a call's request to a person.
- `opening`: what a run reads before its first step, in one round trip.
- `stops`: a run handed off or failed, and the one rule for all stops: a side effect in doubt quarantines.
- `commits`: the commit protocol, a step appended once on the head its run left, under the lease.
- `control`: whether the agent still has control, read only when the run cannot know (`ControlCheck`).
"""

from __future__ import annotations

from django.utils import timezone  # the clock the runner reads, which callers read as runner.timezone

from apps.agent.runner.control import ControlCheck, HandedOff
from apps.agent.runner.drive import ConversationLocks, claim, drive, kick
from apps.agent.runner.leases import HOLDER, Renewals, renewals
from apps.agent.runner.opening import Summaries, read_opening
from apps.agent.runner.recovery import expire_approvals, expire_requests, housekeep, recover_once, start
from apps.agent.runner.steps import execute_run

# The names callers knew before the runner was a package.
_opening = read_opening
_renewals = renewals

__all__ = [
    "HOLDER", "ControlCheck", "ConversationLocks", "HandedOff", "Renewals", "Summaries", "_opening", "_renewals", "claim",
    "drive", "execute_run", "expire_approvals", "expire_requests", "housekeep", "kick", "read_opening", "recover_once",
    "renewals", "start", "timezone",
]
