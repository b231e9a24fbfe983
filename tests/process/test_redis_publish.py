"""
Heads published to Redis from a writer's own thread (apps/conversations/broadcast.py): they reach
the sockets the channel layer subscribed, on the channel and shard the layer chose, and a stalled
Redis costs a writer one timeout, not one per commit.
"""

import asyncio
import os
import signal
import time

import pytest
from channels.layers import get_channel_layer
from channels_redis.utils import _consistent_hash

from apps.conversations import broadcast
from tests.servers import OwnRedis


@pytest.fixture
def servers():
    started = []
    yield lambda: started.append(OwnRedis()) or started[-1]
    for server in started:
        if server.proc:
            os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()


def use_layer(settings, hosts, **config):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                                           "CONFIG": {"hosts": hosts, **config}}}
    return get_channel_layer()


def received(layer, conversation_id: str, seq: int) -> dict:
    """Subscribe a socket's channel as a consumer does, publish a head from a writer's thread, receive it."""

    async def main():
        channel = await layer.new_channel()
        await layer.group_add(broadcast.group_name(conversation_id), channel)
        await asyncio.to_thread(broadcast.state_changed, conversation_id, seq)
        return await asyncio.wait_for(layer.receive(channel), 5)

    return asyncio.run(main())


@pytest.mark.parametrize("shards", [1, 2])
@pytest.mark.parametrize("prefix", [None, "waypoint"])
def test_a_head_published_from_a_writers_thread_reaches_a_socket_subscribed_through_the_layer(
        settings, servers, shards, prefix):
    layer = use_layer(settings, [servers().url for _ in range(shards)], **({"prefix": prefix} if prefix else {}))
    broadcast.state_changed("conversation-0", 1)
    assert broadcast._redis_publishers[layer] is not None, "published through the layer's asyncio client instead"
    by_shard: dict[int, list[str]] = {shard: [] for shard in range(shards)}
    n = 0
    while any(len(found) < 2 for found in by_shard.values()):  # two conversations on every shard
        channel = f"{prefix or 'asgi'}__group__{broadcast.group_name(f'conversation-{n}')}"
        by_shard[_consistent_hash(channel, shards)].append(f"conversation-{n}")
        n += 1
    for n, conversation_id in enumerate(c for found in by_shard.values() for c in found[:2]):
        assert received(layer, conversation_id, 7 + n) == {"type": "state.changed", "seq": 7 + n}


def test_a_stalled_redis_costs_a_writer_one_timeout_and_publishing_resumes_after_it_answers(
        settings, servers, monkeypatch, caplog):
    monkeypatch.setattr(broadcast._RedisPublisher, "QUIET_SECONDS", 0.5)
    monkeypatch.setattr(broadcast._RedisPublisher, "TIMEOUT_SECONDS", 0.3)
    redis = servers()
    layer = use_layer(settings, [redis.url])
    assert received(layer, "conversation-1", 1)["seq"] == 1
    os.kill(redis.proc.pid, signal.SIGSTOP)
    try:
        began = time.monotonic()
        for seq in range(2, 12):
            broadcast.state_changed("conversation-1", seq)  # as ten commits would
        spent = time.monotonic() - began
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    assert spent < 1.5, f"ten commits waited {spent:.1f} s for a stalled Redis (one timeout is 0.3 s)"
    assert "state.changed push to conversation conversation-1 failed" in caplog.text
    time.sleep(0.6)
    assert received(layer, "conversation-1", 12)["seq"] == 12
