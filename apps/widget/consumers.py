from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import weakref
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.template.loader import render_to_string

from apps.conversations import broadcast, queries, tokens
from apps.conversations.broadcast import group_name
from apps.ops import limits
from apps.widget import pushes
from apps.widget.framing import Embed, make_embed

# The close code of a socket whose token was revoked or expired: the page and the SDK stop
# reconnecting and say the link no longer works.
REVOKED = 4401
# "Try again later" (1013's meaning, in the application range that Daphne lets an application send):
# pushes cannot reach this socket (the channel layer is down); the page and the SDK poll at once
# and reconnect with backoff.
TRY_AGAIN_LATER = 4503

log = logging.getLogger(__name__)
TYPING_EVERY_SECONDS = 2.0

DATABASE_ERRORS = (OperationalError, InterfaceError)
_TOKEN_GONE = object()  # what _render answers for a token that no longer resolves


class LayerHealth:
    """
    Whether this process reaches the channel layer's Redis, looked at every second or two while sockets are open.

    A socket whose pushes cannot arrive must not look healthy: when Redis goes away every open
    socket of this process is closed with 4503, so its client polls at once instead of waiting
    for a heartbeat to notice the silence, and new sockets are refused the same way until Redis is
    back. The in-memory layer of a single process has nothing to watch.
    """

    INTERVAL = 1.5

    def __init__(self) -> None:
        self.healthy = True
        self.sockets: weakref.WeakSet = weakref.WeakSet()
        self.task: asyncio.Task | None = None

    def watch(self, consumer: AsyncWebsocketConsumer) -> None:
        if not settings.REDIS_URL:
            return
        self.sockets.add(consumer)
        self._looking()

    def down(self) -> None:
        """The layer failed under a socket: refuse sockets until a look finds it back."""
        if settings.REDIS_URL:
            self.healthy = False
            self._looking()

    def _looking(self) -> None:
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # One try per look, no retries: a look that waits out a dead Redis would hide it.
        client = redis.asyncio.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))
        try:
            while self.sockets or not self.healthy:
                try:
                    await client.ping()
                    if not self.healthy:
                        log.warning("the channel layer is reachable again; accepting sockets")
                    self.healthy = True
                except Exception:  # noqa: BLE001 - any failure to reach Redis means no pushes
                    if self.healthy:
                        log.warning("the channel layer is unreachable; closing %d sockets so they poll", len(self.sockets))
                    self.healthy = False
                    for consumer in list(self.sockets):
                        self.sockets.discard(consumer)
                        await consumer.close(code=TRY_AGAIN_LATER)
                await asyncio.sleep(self.INTERVAL)
        finally:
            await client.aclose()


layer_health = LayerHealth()


class ConversationConsumer(AsyncWebsocketConsumer):
    """
    Pushes a conversation's state to one open client on every commit.

    `format=html` gets the page's out-of-band fragments (htmx ws extension); otherwise a JSON
    `state` message. The first push (and a resync) is the whole state; each later one what changed
    since the head this socket was sent last, read from the database, so a dropped group message is
    repaired by the next push and a reconnect with `after_seq` catches up (see pushes.py).
    """

    async def __call__(self, scope, receive, send):
        # Joining the channel layer happens before `connect` (a channel of its own on Redis); when
        # that fails, the socket is refused cleanly, with 4503, instead of a 500 at the handshake.
        answered: list[str] = []
        received: list[str] = []

        async def sending(message: dict) -> None:
            answered.append(message["type"])
            await send(message)

        async def receiving() -> dict:
            message = await receive()
            received.append(message["type"])
            return message

        if layer_health.healthy:
            try:
                return await super().__call__(scope, receiving, sending)
            except Exception as exc:
                if answered:
                    raise
                log.warning("a socket failed before it was accepted; refusing it for now", exc_info=True)
                if not isinstance(exc, DATABASE_ERRORS):
                    layer_health.down()  # the channel layer, not the database: refuse others too until it is back
        if "websocket.connect" in received or (await receive())["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
            await send({"type": "websocket.close", "code": TRY_AGAIN_LATER})

    async def connect(self) -> None:
        broadcast.serving_on(asyncio.get_running_loop())
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        query = parse_qs(self.scope["query_string"].decode())
        self.format = query.get("format", ["json"])[0]
        self.token = query.get("token", [""])[0]
        self.embed_fields = {k: query.get(k, [""])[0] for k in ("embed", "host", "color")}
        after = query.get("after_seq", ["0"])[0]
        self.after_seq = int(after) if after.isdigit() else 0
        if not await self._within_limit(limits.check_address, address=(self.scope.get("client") or [""])[0]):
            return
        grant = await database_sync_to_async(tokens.resolve)(self.token) if self.token else None
        if grant is None or grant.conversation_id != str(self.conversation_id) or not grant.allows("view"):
            await self.close(code=4403)
            return
        if not await self._within_limit(limits.check_credential, credential=f"token:{grant.token_id}"):
            return
        self.persona = grant.persona
        self.permissions = grant.permissions
        self.token_id = grant.token_id
        self.last_sent = -1
        self.shown: pushes.Shown | None = None  # what this socket's client shows; None: send the whole state
        self.viewer: pushes.Viewer | None = None
        self.draft_shown = False
        if not layer_health.healthy or not await self._joined():
            await self.accept()
            await self.close(code=TRY_AGAIN_LATER)
            return
        await self.accept()
        layer_health.watch(self)
        await self.push(whole=True)

    async def _joined(self) -> bool:
        """Join the conversation's group; False when the channel layer cannot be reached."""
        try:
            await asyncio.wait_for(self.channel_layer.group_add(group_name(self.conversation_id), self.channel_name), 2)
        except Exception:  # noqa: BLE001 - refused cleanly below, whatever the layer raised
            log.warning("joining the group of %s failed; refusing the socket for now", self.conversation_id, exc_info=True)
            self.last_sent = None  # not in the group: nothing to leave on disconnect
            return False
        return True

    async def _within_limit(self, check, **who) -> bool:
        # The HTTP API's buckets: reconnect storms count against the same address and token.
        try:
            await database_sync_to_async(check)(now=time.time(), **who)
        except limits.RateLimited:
            await self.close(code=4429)
            return False
        return True

    async def disconnect(self, code: int) -> None:
        layer_health.sockets.discard(self)
        if getattr(self, "last_sent", None) is not None and layer_health.healthy:
            with contextlib.suppress(Exception):  # the layer forgets a dead channel on its own
                await asyncio.wait_for(self.channel_layer.group_discard(group_name(self.conversation_id), self.channel_name), 2)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Clients ask for a resync, or say the customer is typing (for the person who holds the
        # conversation); everything else goes through HTTP. A resync checks the token again, so one
        # that expired (or whose revocation push was lost) gets nothing.
        if text_data == "typing":
            await self._typing()
            return
        grant = await database_sync_to_async(tokens.resolve)(self.token)
        if grant is None or grant.token_id != self.token_id:
            await self._revoked()
            return
        await self.push(whole=True)

    async def _typing(self) -> None:
        """Tell the conversation's staff sockets that this customer is typing, at most every two seconds."""
        now = time.monotonic()
        if getattr(self, "revoked", False) or now - getattr(self, "typing_told", 0.0) < TYPING_EVERY_SECONDS:
            return
        self.typing_told = now
        await self.channel_layer.group_send(group_name(self.conversation_id),
                                            {"type": "customer.typing", "persona": self.persona})

    async def customer_typing(self, event: dict) -> None:
        """For the staff inspector only: customers' own pages show their typing already."""

    async def tokens_revoked(self, event: dict) -> None:
        if self.token_id in event.get("token_ids", ()):
            await self._revoked()

    async def _revoked(self) -> None:
        # Out of the group first: between this close and the client's goodbye nothing more is sent.
        self.revoked = True
        await self.channel_layer.group_discard(group_name(self.conversation_id), self.channel_name)
        await self.close(code=REVOKED)

    async def state_changed(self, event: dict) -> None:
        # A shown draft is withdrawn by the next state push, even one this client has seen.
        if event.get("seq", 0) > self.last_sent or self.draft_shown:
            await self.push(announced=event.get("seq", 0))

    async def draft_changed(self, event: dict) -> None:
        if getattr(self, "revoked", False) or event.get("after_seq", 0) < self.last_sent:
            return  # this client already shows a state after that round committed
        self.draft_shown = True
        if self.format == "html":
            await self.send(text_data=render_to_string("widget/draft.html", {"draft": event["text"]}))
        else:
            await self.send(text_data=json.dumps({"type": "draft", "run_id": event["run_id"], "text": event["text"]}))

    async def push(self, *, whole: bool = False, announced: int = 0) -> None:
        if getattr(self, "revoked", False):
            return
        # Not thread-sensitive: pushes to many sockets render in parallel, not on one shared thread.
        push = await database_sync_to_async(self._render, thread_sensitive=False)(whole, announced)
        if push is _TOKEN_GONE:
            await self._revoked()
            return
        if push is None:
            await self.close(code=4404)
            return
        self.last_sent, self.shown = push.shown.seq, push.shown
        self.draft_shown = False
        await self.send(text_data=push.text)

    def _render(self, whole: bool, announced: int):
        # Every push checks the token (one statement): a revocation whose push was lost, or that
        # committed while this socket was joining, still stops what it is sent.
        grant = tokens.resolve(self.token)
        if grant is None or grant.token_id != self.token_id:
            return _TOKEN_GONE
        if whole or self.shown is None:
            # A whole state is named by the head it starts from, so reconnecting tabs share it too.
            announced = queries.conversation_head(self.conversation_id)
            if announced is None:
                return None
            since = None
        else:
            since = self.shown
        load = self._conversation
        if self.format == "html":
            return pushes.html(self.conversation_id, viewer=self._viewer(), since=since, announced=announced, load=load)
        # A JSON push stays the messages resource read with the connect's after_seq, as documented
        # and as a client replacing its list expects; it is still read once per head and shared.
        return pushes.state_json(self.conversation_id, after=self.after_seq, announced=announced, load=load)

    def _conversation(self):
        return queries.conversation_for(self.conversation_id)

    def _viewer(self) -> pushes.Viewer:
        if self.viewer is None:
            conversation = self._conversation()
            self.viewer = pushes.Viewer(token=self.token, persona=self.persona, permissions=frozenset(self.permissions),
                                        embed=self._embed(conversation) if conversation else None)
        return self.viewer

    def _embed(self, conversation) -> Embed | None:
        """The same embedding the page was rendered with (it only shapes links, never grants anything)."""
        origin = dict(self.scope.get("headers", [])).get(b"origin", b"").decode()
        return make_embed(self.embed_fields, assistant_id=str(conversation.assistant_id),
                          config=conversation.assistant.config, own_origin=origin)
