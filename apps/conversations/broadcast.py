"""Telling every open client of a conversation that its log moved on."""

from __future__ import annotations

import asyncio
import logging
import threading
from functools import partial

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

PUBLISH_TIMEOUT_SECONDS = 5.0
_loop: asyncio.AbstractEventLoop | None = None
_loop_guard = threading.Lock()


def _publisher() -> asyncio.AbstractEventLoop:
    """This process's one event loop for publishing, started on first use."""
    global _loop
    with _loop_guard:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, daemon=True, name="waypoint-broadcast").start()
            _loop = loop
        return _loop


_consumers_loop: asyncio.AbstractEventLoop | None = None


def serving_on(loop: asyncio.AbstractEventLoop) -> None:
    """Record the event loop this process's sockets live on (called as each one connects)."""
    global _consumers_loop
    _consumers_loop = loop


def _group_send(layer, group: str, message: dict) -> None:
    if isinstance(layer, InMemoryChannelLayer):
        # The in-memory layer's queues belong to the sockets' own loop: a send from a writer's
        # thread through async_to_sync ran on a loop of its own, which puts into those queues
        # without waking their loop, so a push waited for the loop's next wake-up (up to a
        # heartbeat, 30 s). Scheduled onto that loop instead, and not waited for: the writer
        # goes on at once.
        loop = _consumers_loop
        if loop is None or loop.is_closed():
            return  # no socket has connected to this process: nobody to tell
        if loop.is_running():
            asyncio.run_coroutine_threadsafe(_published(layer, group, message), loop)
        else:
            async_to_sync(layer.group_send)(group, message)
        return
    # A network layer gets one long-lived loop: async_to_sync from a worker thread would start a
    # new loop, and with it a new Redis connection, for every commit.
    # Not waited for: the writer goes on with its next step while the loop publishes, in order.
    if message["type"] == "state.changed":
        # Heads not yet sent for a group collapse into the newest: a client only needs the head,
        # and a writer committing faster than Redis answers must not queue a push per commit.
        with _loop_guard:
            queued = group in _unsent_heads
            _unsent_heads[group] = max(message["seq"], _unsent_heads.get(group, 0))
        if not queued:
            asyncio.run_coroutine_threadsafe(_publish_head(layer, group), _publisher())
        return
    asyncio.run_coroutine_threadsafe(_published(layer, group, message), _publisher())


_unsent_heads: dict[str, int] = {}  # group -> the newest head announced and not yet published


async def _publish_head(layer, group: str) -> None:
    with _loop_guard:
        seq = _unsent_heads.pop(group)
    await _published(layer, group, {"type": "state.changed", "seq": seq})


async def _published(layer, group: str, message: dict) -> None:
    try:
        await asyncio.wait_for(layer.group_send(group, message), PUBLISH_TIMEOUT_SECONDS)
    except Exception:  # noqa: BLE001 - best effort, as state_changed says: clients resync by seq
        log.warning("push to %s failed; clients will resync by seq", group, exc_info=True)


def group_name(conversation_id: str) -> str:
    return f"conversation.{conversation_id}"


def _announce(conversation_id: str, message: dict, *, lost: str) -> None:
    """
    Send `message` to the conversation's group, best effort: a failure is logged, never raised.

    A push must never undo or fail a committed write; `lost` says in the log what missing it costs.
    """
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        _group_send(layer, group_name(conversation_id), message)
    except Exception:  # noqa: BLE001 - see the docstring
        log.warning("%s push to conversation %s failed; %s", message["type"], conversation_id, lost, exc_info=True)


def state_changed(conversation_id: str, seq: int) -> None:
    """
    Announce a new log head to the conversation's group.

    Best effort by design: the channel layer may drop messages, and clients resynchronise from the
    database by `seq`, so a failed send loses nothing.
    """
    _announce(conversation_id, {"type": "state.changed", "seq": seq}, lost="clients will resync by seq")


def on_commit(conversation_id: str, seq: int) -> None:
    """Announce head `seq` once the caller's transaction commits: every action that appends calls it."""
    transaction.on_commit(partial(state_changed, str(conversation_id), seq))


def draft_changed(conversation_id: str, run_id: str, after_seq: int, text: str) -> None:
    """
    Show the text of the model round in progress to every open client.

    Transient: never stored; the next state push (a committed step) withdraws it. `after_seq` is
    the log head the round started from, so a client already showing a later state drops it.
    """
    _announce(conversation_id, {"type": "draft.changed", "run_id": run_id, "after_seq": after_seq, "text": text},
              lost="harmless: the committed text follows")


def tokens_revoked(conversation_id: str, token_ids: list[str]) -> None:
    """Close the open sockets of revoked tokens (each consumer closes its own if it is one of them)."""
    _announce(conversation_id, {"type": "tokens.revoked", "token_ids": token_ids},
              lost="their sockets are refused on their next push or resync")
