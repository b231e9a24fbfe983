"""Telling every open client of a conversation that its log moved on."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from functools import partial

import redis
from asgiref.sync import async_to_sync
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import InMemoryChannelLayer, get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from channels_redis.utils import _consistent_hash, decode_hosts
from django.conf import settings
from django.db import transaction
from redis.backoff import NoBackoff
from redis.retry import Retry

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
    publisher = _redis_publisher(layer)
    if publisher is not None:
        publisher.publish(layer, group, message)
        return
    # Any other network layer: its own client on this process's one publishing loop (async_to_sync
    # from a worker thread would start a new loop, and a new connection, for every commit).
    asyncio.run_coroutine_threadsafe(_published(layer, group, message), _publisher())


class _RedisPublisher:
    """
    Publishes to a Redis pub/sub channel layer's groups from the writer's own thread.

    The layer's client is asyncio's: from a writer thread every publish went through the event
    loop of another thread, about 0.3 ms of CPU each that also held the GIL against the writer,
    a quarter of a turn's CPU. A blocking client costs about 0.07 ms and waits about as long again
    for Redis on loopback. After a publish that timed out Redis is left alone for a while, so a
    stalled server costs a writer one timeout, not one per commit; clients resync by seq meanwhile.
    The timeout is long next to Redis's answers on loopback (about 0.1 ms): a publish given up is
    a push lost.
    """

    TIMEOUT_SECONDS = 1.0
    QUIET_SECONDS = 2.0

    def __init__(self, config: dict):
        self.prefix = config.get("prefix", "asgi")
        # No retries: a timed-out publish costs the writer one timeout, whatever redis-py's default.
        self.shards = [redis.Redis.from_url(host["address"], socket_timeout=self.TIMEOUT_SECONDS,
                                            socket_connect_timeout=self.TIMEOUT_SECONDS, retry=Retry(NoBackoff(), 0))
                       for host in decode_hosts(config.get("hosts"))]
        self._quiet_until = 0.0

    def publish(self, layer: RedisPubSubChannelLayer, group: str, message: dict) -> None:
        if time.monotonic() < self._quiet_until:
            return
        # The channel and shard the layer subscribes a group's sockets on (channels_redis's
        # RedisPubSubLoopLayer: _get_group_channel_name, _get_shard); tests/process pins them.
        channel = f"{self.prefix}__group__{group}"
        shard = self.shards[_consistent_hash(channel, len(self.shards))]
        try:
            shard.publish(channel, layer.serialize(message))  # its format and keys, as the layer sends
        except redis.TimeoutError:
            self._quiet_until = time.monotonic() + self.QUIET_SECONDS
            raise


# layer -> its publisher; None: a layer this does not publish for (another class, or Sentinel hosts)
_redis_publishers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _redis_publisher(layer) -> _RedisPublisher | None:
    with _loop_guard:
        if layer not in _redis_publishers:
            config = settings.CHANNEL_LAYERS.get(DEFAULT_CHANNEL_LAYER, {}).get("CONFIG", {})
            plain = isinstance(layer, RedisPubSubChannelLayer) and all(
                isinstance(host, str) or set(host) == {"address"} for host in config.get("hosts") or [])
            _redis_publishers[layer] = _RedisPublisher(config) if plain else None
        return _redis_publishers[layer]


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
