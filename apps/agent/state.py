"""
The state of a conversation as every client shows and resumes from it: one snapshot joining the
log's stores (messages, runs, tool usage, actions, the workspace's part).

It sits above the stores it joins, so each of them stays a leaf of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from apps.agent import statements
from apps.agent import tools as tool_words
from apps.agent.handoff import control_of
from apps.agent.message_fields import message_of
from apps.conversations.models import Conversation
from apps.ledger import sql
from apps.ledger.replay import read_only
from apps.ledger.store import iso
from apps.runs.models import WorkflowLog
from apps.toolsources.resolve import resolved
from apps.workspaces.queries import state_reads, workspace_state

KIND_NAMES = {"client_tool": "client_tool", "approval": "approval", "question": "question"}


def _when(value) -> str | None:
    return iso(value) if value else None


@contextmanager
def snapshot() -> Iterator[None]:
    """
    Read through one view of the database: every statement inside sees the same commits.

    Under PostgreSQL's READ COMMITTED each statement sees the commits made before it started, so
    separate reads could show a turn's reply and `completed` beside the head before it, and a send
    made at that head got `409 turn_conflict`. A REPEATABLE READ transaction gives them one
    snapshot; SQLite's transaction is one already. Inside a caller's transaction they share its view.
    """
    with read_only():  # replay's snapshot: the same one view, refusing writes
        yield


def conversation_state(conversation: Conversation, *, after_seq: int = 0, receipts: bool = False) -> dict[str, Any]:
    """
    Return the messages and the reconnect fields of a conversation, as of one snapshot.

    Messages are only those of committed turns: an assistant message exists only once its turn's
    `turn_complete` committed, so a paused or interrupted turn never shows partial text. `seq` is
    the head of the very snapshot the rest was read in. `conversation`'s state fields are refreshed.
    `receipts`: also read the answers of every turn after `after_seq` (what a page's transcript shows).
    :raises Conversation.DoesNotExist: the conversation is gone
    """
    cid = conversation.id
    # Every read of the state in one round trip: each push, poll and page load makes them all.
    own = [(statements.STATE_ROW, (cid,)), (statements.MESSAGES_AFTER, (cid, after_seq)),
           (statements.CONTROL_CHANGES_AFTER, (cid, after_seq)), (statements.LATEST_RUN, (cid,)),
           (statements.LATEST_RUN_USAGE, (cid,)), (statements.LATEST_RUN_ACTIONS, (cid, cid))]
    if receipts:
        own.append((statements.ANSWERS, (cid, after_seq)))
    workspace = state_reads(cid)
    with snapshot():  # what is read after the batch (artifacts' recovery, participants) too
        found = sql.batch(*own, *workspace)
        if not found[0]:
            raise Conversation.DoesNotExist(cid)
        # The row the caller loaded (to check access) may be older than the rest of what was read.
        for name, value in zip(statements.STATE_FIELDS, found[0][0], strict=True):
            setattr(conversation, name, value)
        state = _state(conversation, *found[1:6], workspace=found[len(own):])
        if receipts:
            state["receipts"] = _answers(found[6])
        return state


def _state(conversation: Conversation, message_rows, change_rows, run_rows, usages, actions, *, workspace) -> dict[str, Any]:
    # Plain tuples from named statements, not model instances: a long conversation has thousands of
    # messages and this runs on every page load, poll and websocket push.
    assistant = _assistant_author(conversation)
    messages = [message_of(row, assistant=assistant) for row in message_rows]
    changes = [
        {"seq": seq, "kind": kind, "staff": {"id": staff, "name": name or staff} if staff else None, "text": text,
         "created_at": iso(created)}
        for seq, kind, staff, name, text, created in change_rows
    ]
    run = _run(conversation, run_rows)
    pending: list[dict[str, Any]] = []
    answered: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    if run is not None:
        for (call_id, kind, tool, arguments, requested_at, reattempt_of, status, output, answered_by, answered_at,
             approver, expires_at, editable) in usages:
            item = {
                "call_id": call_id,
                "kind": KIND_NAMES[kind],
                "tool": tool,
                "arguments": arguments,
                "requested_at": _when(requested_at),
                "reattempt_of": reattempt_of or None,
                # PRODUCT.md "Approvals: expiry, edits, approvers": who answers an approval, what they
                # may change, and until when any request waits (an approval's expiry, a simple run's).
                "approver": (approver or "customer") if kind == "approval" else None,
                "editable": (editable or []) if kind == "approval" else None,
                "expires_at": _when(expires_at),
            }
            if status == "pending":
                pending.append(item)
            else:
                answered.append({**item, "status": status, "output": output, "answered_by": answered_by,
                                 "answered_at": _when(answered_at)})
        _word(conversation, pending, answered)
        summary = [{"tool": row[2], "kind": row[1], "state": row[6]} for row in usages]
        # By conversation too: action logs are indexed by conversation, not by run.
        summary += [{"tool": tool, "kind": "server", "state": status} for tool, status in actions]
    return {
        "conversation_id": str(conversation.id),
        "conversation_status": conversation.status,
        "completed_at": _when(conversation.completed_at),
        "message_count": conversation.message_count,
        "seq": conversation.head_seq,
        "messages": messages,
        "run_id": run.run_id if run else None,
        "run_status": run.status if run else None,
        "turn_id": run.turn_id if run else None,
        "quarantined": run.quarantined if run else False,
        "error": run.error if run else "",
        "pending_client_actions": pending,
        "answered_client_actions": answered,
        "tool_summary": summary,
        "progress": [{"text": p["text"], "at": p["at"], "seq": p["seq"]} for p in (run.progress if run else [])],
        "control": control_of(conversation),
        # The changes of control after `after_seq`, for the transcript's lines ("Dana joined").
        "control_changes": changes,
        # phase, display_phase, conditions, last_turn_at, visibility, participants, memory, artifacts
        **workspace_state(conversation, run=run, read=workspace),
    }


def _word(conversation: Conversation, pending: list[dict[str, Any]], answered: list[dict[str, Any]]) -> None:
    """
    Give each request its `title` in people's words: a waiting one as whoever answers it is asked
    ("Shall I refund $20 for order A-1?"; the team's approval as the team's card says it), an
    answered one as what was asked ("Refund $20 for order A-1"), so every client shows the words
    the page shows, never a tool's name. The assistant's tools are read only when there is a request.
    """
    if not pending and not answered:
        return
    tools = {t["name"]: t for t in resolved(conversation.assistant.config).get("tools", [])}
    for item in pending:
        tool = tools.get(item["tool"], {})
        asks_customer = item["kind"] == "approval" and item["approver"] != "staff"
        item["title"] = tool_words.approval_question(item, tool) if asks_customer else tool_words.card_title(item, tool)
    for item in answered:
        item["title"] = tool_words.card_title(item, tools.get(item["tool"], {}))


def _assistant_author(conversation: Conversation) -> dict[str, str]:
    name = conversation.assistant.name if Conversation.assistant.is_cached(conversation) else \
        statements.ASSISTANT_NAME.rows(conversation.assistant_id)[0][0]
    return {"kind": "assistant", "id": f"assistant:{conversation.assistant_id}", "name": name}


def _answers(rows: list[tuple]) -> list[dict[str, Any]]:
    """
    The accepted answers of every run of a conversation after a head (ANSWERS), in log order.

    Each carries the `seq` of the entry that accepted it and its run's `run_id`: an accepted answer
    never changes, so the page writes it once into the transcript where the log has it. A request
    that expired was never answered and is not among them.
    """
    return [
        {"run_id": run_id, "turn_id": turn_id, "call_id": call_id, "kind": KIND_NAMES[kind], "tool": tool,
         "arguments": arguments, "status": status, "output": output, "answered_by": answered_by,
         "answered_at": _when(answered_at), "seq": seq, "reattempt_of": reattempt_of or None}
        for run_id, turn_id, call_id, kind, tool, arguments, status, output, answered_by, answered_at, seq, reattempt_of
        in rows
    ]


def _run(conversation: Conversation, found: list[tuple]) -> WorkflowLog | None:
    """The conversation's latest run, with the fields its state shows (not its usage, pending or directives)."""
    if not found:
        return None
    [(run_id, turn_id, status, quarantined, error, progress, updated_at, dispatched_seq)] = found
    return WorkflowLog(run_id=run_id, conversation_id=conversation.id, turn_id=turn_id, status=status,
                       quarantined=quarantined, error=error, progress=progress, updated_at=updated_at,
                       dispatched_seq=dispatched_seq)
