"""Domain errors, each with the stable code and HTTP status of the public contract."""

from __future__ import annotations


class WaypointError(Exception):
    code = "error"
    status = 400

    def __init__(self, message: str = "", **details):
        super().__init__(message or self.__doc__ or self.code)
        self.message = message or (self.__doc__ or self.code).strip()
        self.details = details


class BadInput(WaypointError):
    """The request is not valid."""

    code = "invalid_request"
    status = 422


class InvalidAssistantConfig(BadInput):
    """The assistant configuration is not valid; `details["problems"]` lists why."""

    code = "invalid_assistant_config"
    status = 422


class NotFound(WaypointError):
    """Not found."""

    code = "not_found"
    status = 404


class Forbidden(WaypointError):
    """This persona may not do that."""

    code = "forbidden"
    status = 403


class TurnConflict(WaypointError):
    """Another turn was started on this conversation first; refresh and retry."""

    code = "turn_conflict"
    status = 409


class ConversationIsCompleted(WaypointError):
    """This conversation is complete and read-only."""

    code = "conversation_completed"
    status = 409


class ActionResultConflict(WaypointError):
    """Someone else already answered this call with a different result."""

    code = "action_result_conflict"
    status = 409


class RunExpired(WaypointError):
    """The pending request of this run expired."""

    code = "run_expired"
    status = 409


class ApprovalExpired(WaypointError):
    """This approval expired before it was answered; the assistant was told and went on."""

    code = "approval_expired"
    status = 409


class ApproverRequired(WaypointError):
    """This approval is for the team to give: a member of staff answers it."""

    code = "approver_required"
    status = 403


class NothingToContinue(WaypointError):
    """The latest run is not interrupted; there is nothing to continue."""

    code = "nothing_to_continue"
    status = 409


class IdempotencyKeyReused(WaypointError):
    """This Idempotency-Key was used before with a different request."""

    code = "idempotency_key_reused"
    status = 422


class ApprovalMismatch(WaypointError):
    """The reviewed tool or arguments differ from the pending call; approve the exact call."""

    code = "approval_mismatch"
    status = 422


class ServiceUnavailable(WaypointError):
    """The service cannot reach its database right now; nothing was changed. Try again in a few seconds."""

    code = "service_unavailable"
    status = 503
    retry_after = 5


class RunNotWaiting(WaypointError):
    """This run is no longer waiting for an answer to that request."""

    code = "run_not_waiting"
    status = 409


class ControlConflict(WaypointError):
    """Someone else has this conversation."""

    code = "control_conflict"
    status = 409


class HandoffUnavailable(WaypointError):
    """This assistant cannot hand a conversation to a person."""

    code = "handoff_unavailable"
    status = 409
