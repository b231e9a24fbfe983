"""
Which log entries announce which webhook event, and the fields each carries.

The table is by log kind; a kind that never occurs simply sends nothing.
"""

from __future__ import annotations

from typing import Any

from apps.ledger.identities import persona_name

TYPES = (
    "conversation.started", "turn.completed", "approval.requested", "client_action.requested",
    "question.requested", "run.failed", "turn.quarantined", "conversation.completed",
    "handoff.requested", "handoff.accepted", "handoff.returned", "handoff.timed_out", "message.created", "webhook.test",
)

# log kind -> (event type, the payload fields it carries: payload name -> data name)
BY_KIND: dict[str, tuple[str, dict[str, str]]] = {
    "conversation_started": ("conversation.started", {}),
    "turn_complete": ("turn.completed", {"run_id": "run_id", "text": "reply"}),
    "approval_request": ("approval.requested", {"run_id": "run_id", "call_id": "call_id", "tool": "tool"}),
    "client_action_requested": ("client_action.requested", {"run_id": "run_id", "call_id": "call_id", "tool": "tool"}),
    "question_request": ("question.requested", {"run_id": "run_id", "call_id": "call_id", "question": "question"}),
    "turn_failed": ("run.failed", {"run_id": "run_id", "error": "reason"}),
    "turn_ambiguous": ("turn.quarantined", {"run_id": "run_id", "call_id": "call_id", "tool": "tool"}),
    "conversation_completed": ("conversation.completed", {"run_id": "run_id"}),
    # handoff.*: `control` (below) and these
    "handoff_requested": ("handoff.requested", {"reason": "reason", "source": "source", "run_id": "run_id",
                                                "staff_online": "staff_online", "within_hours": "within_hours"}),
    "control_taken": ("handoff.accepted", {"reason": "reason", "from": "from", "by": "by"}),
    "control_returned": ("handoff.returned", {"note": "note", "from": "from"}),
    "handoff_timed_out": ("handoff.timed_out", {"message": "reason"}),
    "handoff_cancelled": ("handoff.returned", {"persona": "cancelled_by"}),  # the customer went back to the assistant
}
# The kinds that announce nothing, said so: a new kind is in one table or the other
# (tests/unit/test_event_kinds.py), never forgotten.
SILENT = frozenset({
    "turn_dispatched", "ingress_directive", "model_round", "action_started", "action_finished", "client_result_accepted",
    "approval_response", "question_response", "completion_requested", "turn_expired", "turn_superseded", "turn_retried",
    "quarantine_resolved", "quarantine_settled", "turn_handed_off", "customer_message", "staff_message", "staff_note", "repair",
    "participant_added", "participant_removed", "participant_token_issued", "memory_remembered", "memory_cleared",
    "artifact_created", "artifact_acknowledged", "conversation_closed", "conversation_reopened", "handoff_details",
})


def announced(
    kind: str, turn_id: str, payload: dict[str, Any], control: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]] | None:
    """
    The event type and its own data fields for a log entry, or None when it announces nothing.

    `control` is the state's `control` right after the entry, which a handoff.* event carries.
    """
    found = BY_KIND.get(kind)
    if found is None:
        return None
    type_, fields = found
    data: dict[str, Any] = {"turn_id": turn_id} if turn_id else {}
    data.update({name: payload[key] for key, name in fields.items() if payload.get(key) not in (None, "")})
    if kind == "approval_request":
        # Who gives it (PRODUCT.md "Approvals: expiry, edits, approvers"); a staff one also carries
        # `approve_url`, which the outbox signs.
        data["approver"] = payload.get("approver") or "customer"
        if payload.get("expires_at"):
            data["expires_at"] = payload["expires_at"]
    if kind == "turn_complete":
        # The reply's sources (PRODUCT.md "Knowledge"), [] when it cites none; and a person offered with it.
        data["citations"] = payload.get("citations") or []
        if payload.get("offer_handoff"):
            data["offer_handoff"] = True
    if changes_control(kind):
        data["control"] = control
        if kind == "control_returned":
            data["staff"] = {"id": payload["staff"], "name": payload.get("name") or payload["staff"]}
    return type_, data


def changes_control(kind: str) -> bool:
    """Whether entries of this kind announce a change of control (and carry `control`)."""
    found = BY_KIND.get(kind)
    return found is not None and found[0].startswith("handoff.")


# log kind -> (its message id field, its text field, who wrote it): the entries that add a message
# to the transcript, each of which also announces `message.created`, so a backend can mirror the
# conversation (a handed-off one included) message by message. A continuation or an empty reply adds none.
MESSAGES: dict[str, tuple[str, str, str]] = {
    "turn_dispatched": ("message_id", "text", "customer"),
    "customer_message": ("message_id", "text", "customer"),
    "turn_complete": ("message_id", "text", "assistant"),
    "turn_handed_off": ("message_id", "reply", "assistant"),
    "staff_message": ("message_id", "text", "staff"),
}
ROLES = {"customer": "user", "assistant": "assistant", "staff": "staff"}


def message_created(kind: str, turn_id: str, payload: dict[str, Any], assistant: dict[str, str]) -> dict[str, Any] | None:
    """
    The data of the `message.created` event an entry announces besides its own, or None.

    `message` is the message as the state's `messages` has it: `id`, `role`, `text` and `author`
    (`{kind, id, name}`; `assistant` is the conversation's assistant as an author).
    """
    found = MESSAGES.get(kind)
    if found is None or payload.get("continuation"):
        return None
    id_field, text_field, who = found
    message_id, text = payload.get(id_field), payload.get(text_field)
    if not message_id or not text:
        return None
    if who == "assistant":
        author = assistant
    elif who == "staff":
        author = {"kind": "staff", "id": payload["staff"], "name": payload.get("name") or persona_name(payload["staff"])}
    else:
        caller = payload.get("caller", "")
        author = {"kind": "customer", "id": caller, "name": persona_name(caller) if caller else ""}
    data: dict[str, Any] = {"turn_id": turn_id} if turn_id else {}
    data["message"] = {"id": message_id, "role": ROLES[who], "text": text, "author": author}
    return data

