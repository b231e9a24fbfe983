"""
The event stream of one AG-UI request: the conversation's messages, then its run followed from the
record to its end (or its pause), encoded by the `ag-ui-protocol` package's SSE encoder.

The run does not belong to the stream: it goes on in the runner whether or not anyone listens, so
a dropped connection loses nothing. The stream reads the log after the position its request wrote
(or the head, when it wrote nothing), wakes up on the conversation's broadcasts (drafts included)
and polls the record besides, so a lost push only delays it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ag_ui.core import BaseEvent, RunErrorEvent, RunStartedEvent
from ag_ui.encoder import EventEncoder
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection

from apps.agent.state import conversation_state
from apps.agui import events, queries
from apps.agui.actions import Plan
from apps.conversations import broadcast
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.runs.models import WorkflowLog
from apps.toolsources.resolve import resolved

POLL_SECONDS = 0.5
# While the staff side holds the conversation, the conversation's broadcasts wake the stream; the
# record is read besides every few seconds, and a comment line keeps proxies from closing it.
HELD_POLL_SECONDS = 2.0
HEARTBEAT_SECONDS = 15.0
HEARTBEAT = ": heartbeat\n\n"
ENCODER = EventEncoder()


def _read(function):
    """
    Run one read of the stream in a worker thread, and give its database connection back after it.

    A stream lives as long as its run: holding a pooled connection between polls, a few dozen
    followers would starve every other request of connections.
    """

    def read(*args: Any) -> Any:
        try:
            return function(*args)
        finally:
            connection.close()

    return sync_to_async(read)


def _opening(plan: Plan) -> dict[str, Any]:
    """The state the stream starts from, the messages up to its starting position, and the run's entries so far."""
    conversation = Conversation.objects.select_related("assistant").get(id=plan.conversation_id)
    state = conversation_state(conversation)
    after = state["seq"] if plan.after_seq is None else plan.after_seq
    run_id = plan.run_id or state["run_id"]
    shown = [m for m in state["messages"] if m["seq"] <= after]
    return {
        "state": state,
        "after": after,
        "run_id": run_id,
        "tools": {t["name"]: t for t in resolved(conversation.assistant.config).get("tools", [])},
        "messages": events.messages_snapshot(shown, queries.client_message_ids(plan.conversation_id)),
        "citations": [event for m in shown for event in events.citations(m["id"], m["citations"])],
        "before": store.read(plan.conversation_id, turn_id=_turn_of(run_id)) if run_id else [],
    }


def _turn_of(run_id: str) -> str | None:
    return WorkflowLog.objects.filter(run_id=run_id).values_list("turn_id", flat=True).first()


def _poll(conversation_id: str, run_id: str | None, after: int) -> tuple[str, list]:
    """The run's status, then the entries after `after`: read in this order, a settled status has its entries."""
    status = WorkflowLog.objects.filter(run_id=run_id).values_list("status", flat=True).first() if run_id else None
    return status or "completed", store.read(conversation_id, after_seq=after)


def _state(conversation_id: str) -> dict[str, Any]:
    return conversation_state(Conversation.objects.get(id=conversation_id))


async def follow(plan: Plan, *, thread_id: str, run_id: str, allowed: Callable[[], bool] = lambda: True) -> AsyncIterator[str]:
    """
    Yield the request's events as SSE text, from `RUN_STARTED` to exactly one `RUN_FINISHED` or `RUN_ERROR`.

    `allowed` says whether the request's credential is still valid: a stream the staff side holds
    open may outlive it.
    """

    def sse(event: BaseEvent) -> str:
        return ENCODER.encode(event)

    yield sse(RunStartedEvent(thread_id=thread_id, run_id=run_id))
    if plan.error is not None:
        details = {k: v for k, v in plan.error["details"].items()}
        yield sse(RunErrorEvent(message=plan.error["message"], code=plan.error["code"],
                                metadata={"waypoint": details} if details else None))
        return
    opening = await _read(_opening)(plan)
    yield sse(opening["messages"])
    for event in opening["citations"]:
        yield sse(event)
    followed = opening["run_id"]
    run = events.RunEvents(run_id=followed or "", tools=opening["tools"])
    run.seen([e for e in opening["before"] if e.seq <= opening["after"]])
    state = opening["state"]
    yield sse(events.state_snapshot(state))
    shown = (state["run_status"], len(state["progress"]))
    cursor = opening["after"]
    async with _wakeups(plan.conversation_id) as wakeups:
        while True:
            status, entries = await _read(_poll)(plan.conversation_id, followed, cursor)
            for entry in entries:
                for event in run.feed(entry):
                    yield sse(event)
                cursor = entry.seq
            if status in events.SETTLED:
                state = await _read(_state)(plan.conversation_id)
                staff = _StaffSide(plan.conversation_id, cursor=cursor, state=state, shown_up_to=opening["after"])
                for event in [*run.close(), *run.pending_calls(state), *staff.news(state), events.state_snapshot(state)]:
                    yield sse(event)
                if _held(state):
                    async for event in staff.follow(wakeups, allowed):
                        yield event if isinstance(event, str) else sse(event)
                    if staff.refused:
                        yield sse(RunErrorEvent(message="This stream's credential was revoked or has expired.",
                                                code="unauthorized"))
                        return
                    state = staff.state
                yield sse(events.run_ended(thread_id=thread_id, run_id=run_id, state=state, tools=opening["tools"]))
                return
            if entries:
                state = await _read(_state)(plan.conversation_id)
                if (state["run_status"], len(state["progress"])) != shown:
                    shown = (state["run_status"], len(state["progress"]))
                    yield sse(events.state_snapshot(state))
            for draft in await wakeups(POLL_SECONDS):
                if draft.get("run_id") == followed and draft.get("after_seq", 0) >= cursor:
                    for event in run.draft(draft["text"]):
                        yield sse(event)


def _held(state: dict[str, Any]) -> bool:
    """Whether the conversation waits on the staff side: a person was asked for, or has it, and it is still open."""
    return state["control"]["mode"] != "agent" and state["phase"] != "completed"


class _StaffSide:
    """
    What the staff side says on a stream: a person's replies the client has not been shown, and,
    while the staff side holds the conversation, the rest of the stream: each reply and change of
    control as it is recorded, a heartbeat while nothing happens, and the end once control returns
    to the agent or the conversation is completed. The client leaving ends it too (the server
    cancels the stream); nothing is lost, as the next request's MESSAGES_SNAPSHOT has it all.
    """

    def __init__(self, conversation_id: str, *, cursor: int, state: dict[str, Any], shown_up_to: int):
        self.conversation_id, self.cursor, self.state = conversation_id, cursor, state
        # The client has the messages of its MESSAGES_SNAPSHOT and the run's own; a person's reply
        # recorded after the snapshot is news, even one the run's polling read past.
        self.shown = {m["id"] for m in state["messages"] if m["seq"] <= shown_up_to or m["role"] != "staff"}
        self.refused = False

    async def follow(self, wakeups, allowed: Callable[[], bool]) -> AsyncIterator[BaseEvent | str]:
        """
        Until control returns or the conversation is completed; or until the request's credential
        stops being valid (revoked, expired), checked with each news and each heartbeat: then
        `refused` is set and nothing more is sent.
        """
        written = time.monotonic()
        while _held(self.state):
            await wakeups(HELD_POLL_SECONDS)
            _, entries = await _read(_poll)(self.conversation_id, None, self.cursor)
            news: list[BaseEvent | str] = []
            if entries:
                self.cursor = entries[-1].seq
                before, self.state = self.state, await _read(_state)(self.conversation_id)
                news = list(self.news(before))
            if not news and time.monotonic() - written >= HEARTBEAT_SECONDS:
                news = [HEARTBEAT]
            if not news:
                continue
            if not await _read(allowed)():
                self.refused = True
                return
            for event in news:
                yield event
            written = time.monotonic()

    def news(self, before: dict[str, Any]) -> list[BaseEvent]:
        """The replies not shown yet, and the state when control changed since `before`."""
        out: list[BaseEvent] = []
        for message in self.state["messages"]:
            if message["id"] not in self.shown and message["role"] == "staff":
                self.shown.add(message["id"])
                out += events.text_message(message)
        if (self.state["control"], self.state["phase"]) != (before["control"], before["phase"]):
            out.append(events.state_snapshot(self.state))
        return out


@contextlib.asynccontextmanager
async def _wakeups(conversation_id: str):
    """
    A wait for the conversation's next broadcast (or a timeout); it returns the drafts that came.

    Without a channel layer it is a plain sleep: the record is polled all the same.
    """
    layer = get_channel_layer()
    channel = None
    if layer is not None:
        broadcast.serving_on(asyncio.get_running_loop())
        channel = await layer.new_channel("agui.")
        await layer.group_add(broadcast.group_name(conversation_id), channel)

    async def wait(seconds: float) -> list[dict[str, Any]]:
        if channel is None:
            await asyncio.sleep(seconds)
            return []
        drafts = []
        try:
            message = await asyncio.wait_for(layer.receive(channel), seconds)
        except TimeoutError:
            return []
        while True:
            if message.get("type") == "draft.changed":
                drafts.append(message)
            try:
                message = await asyncio.wait_for(layer.receive(channel), 0.001)
            except TimeoutError:
                return drafts

    try:
        yield wait
    finally:
        if channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(broadcast.group_name(conversation_id), channel)
