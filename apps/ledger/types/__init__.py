"""
The event kinds of a conversation's log.

Pure: no Django. Each kind is a frozen dataclass whose fields are its payload, declared in the
module of its family; the log stores `kind` and `payload` and turns them back into these classes
with `decode`. Every kind is imported from here (`from apps.ledger.types import TurnComplete`), and
importing this package registers every kind in `KINDS`.

  base          EventKind, KINDS and `register`, decode, Recorded
  conversation  a conversation started, completed, closed, reopened and repaired
  turns         a turn's message, its model rounds and how it ends
  calls         actions, client actions, approvals, questions, completion requests, quarantine
  handoff       a person asked for, control taken and returned, messages while a person has control
  people        participants, memory, workspace artifacts
"""

from apps.ledger.types.base import KINDS, EventKind, Recorded, decode
from apps.ledger.types.calls import (
    ActionFinished,
    ActionStarted,
    ApprovalRequest,
    ApprovalResponse,
    ClientActionRequested,
    ClientResultAccepted,
    CompletionRequested,
    QuarantineResolved,
    QuarantineSettled,
    QuestionRequest,
    QuestionResponse,
)
from apps.ledger.types.conversation import (
    ConversationClosed,
    ConversationCompleted,
    ConversationReopened,
    ConversationStarted,
    Repair,
)
from apps.ledger.types.handoff import (
    ControlReturned,
    ControlTaken,
    CustomerMessage,
    HandoffCancelled,
    HandoffDetails,
    HandoffRequested,
    HandoffTimedOut,
    StaffMessage,
    StaffNote,
    TurnHandedOff,
)
from apps.ledger.types.people import (
    ArtifactAcknowledged,
    ArtifactCreated,
    MemoryCleared,
    MemoryRemembered,
    ParticipantAdded,
    ParticipantRemoved,
    ParticipantTokenIssued,
)
from apps.ledger.types.turns import (
    IngressDirective,
    ModelRound,
    TurnAmbiguous,
    TurnComplete,
    TurnDispatched,
    TurnExpired,
    TurnFailed,
    TurnRetried,
    TurnSuperseded,
)

__all__ = [
    "EventKind",
    "KINDS",
    "Recorded",
    "decode",
    "ConversationStarted",
    "ConversationCompleted",
    "ConversationClosed",
    "ConversationReopened",
    "Repair",
    "TurnDispatched",
    "IngressDirective",
    "ModelRound",
    "TurnComplete",
    "TurnFailed",
    "TurnExpired",
    "TurnAmbiguous",
    "TurnSuperseded",
    "TurnRetried",
    "ActionStarted",
    "ActionFinished",
    "ClientActionRequested",
    "ClientResultAccepted",
    "ApprovalRequest",
    "ApprovalResponse",
    "QuestionRequest",
    "QuestionResponse",
    "CompletionRequested",
    "QuarantineResolved",
    "QuarantineSettled",
    "HandoffRequested",
    "HandoffDetails",
    "HandoffCancelled",
    "ControlTaken",
    "ControlReturned",
    "StaffNote",
    "HandoffTimedOut",
    "TurnHandedOff",
    "CustomerMessage",
    "StaffMessage",
    "ParticipantAdded",
    "ParticipantRemoved",
    "ParticipantTokenIssued",
    "MemoryRemembered",
    "MemoryCleared",
    "ArtifactCreated",
    "ArtifactAcknowledged",
]
