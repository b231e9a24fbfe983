from __future__ import annotations

import asyncio
import contextlib
import json

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string
from django.utils import timezone

from apps.conversations import broadcast
from apps.conversations.broadcast import group_name
from apps.ledger.identities import persona_name
from apps.people import presence
from apps.staff.actions import panel_context, staff_identity
from apps.staff.queries import inspector

TYPING_SHOWN_SECONDS = 5.0  # the customer's page says so every 2.5 s while they type


class StaffConversationConsumer(AsyncWebsocketConsumer):
    """
    Pushes the inspector's live fragments to a staff member watching one conversation.

    Joins the same `conversation.<id>` group as the customer page. The first push is the whole
    inspection; each later one brings what changed after the head this socket last sent (the new
    entries and messages, the runs, calls and actions they touched, the small fragments whole), or
    the whole inspection again when that head's log did not verify. The chain is verified once
    per head (`inspector.verified_at`), not per push and socket. Only staff sessions
    connect (the route is wrapped in the session middleware; the origin check is the router's).
    """

    async def connect(self) -> None:
        broadcast.serving_on(asyncio.get_running_loop())
        self.conversation_id = str(self.scope["url_route"]["kwargs"]["conversation_id"])
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not (user.is_active and user.is_staff):
            await self.close(code=4403)
            return
        self.last_sent = -1
        self.shown: int | None = None  # the head the page was sent, when its log verified
        await self.channel_layer.group_add(group_name(self.conversation_id), self.channel_name)
        await self.accept()
        await self.push()

    async def dispatch(self, message: dict) -> None:
        # The group is shared with the customer sockets: a broadcast kind the panel does not show
        # is skipped rather than fatal to the socket.
        if message["type"].startswith("websocket.") or hasattr(self, get_handler_name(message)):
            await super().dispatch(message)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "last_sent", None) is not None:
            await self.channel_layer.group_discard(group_name(self.conversation_id), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.push()

    async def state_changed(self, event: dict) -> None:
        if event.get("seq", 0) > self.last_sent:
            await self.push()
            # What the customer typed has most likely just arrived: "… is typing" would otherwise
            # linger for seconds under their own message. Typing on shows it again at the next sign.
            if getattr(self, "typing_ends", None) is not None:
                self.typing_ends.cancel()
                self.typing_ends = None
                await self._typing_over()

    async def draft_changed(self, event: dict) -> None:
        """The panel shows committed entries only; a model round in progress is not one."""

    async def customer_typing(self, event: dict) -> None:
        """The customer is typing: shown under the transcript, and gone a few seconds after the last sign."""
        name = persona_name(event.get("persona") or "") or "The customer"
        await self.send(text_data=render_to_string("staff/conversation.html#typing", {"typing": f"{name} is typing…", "oob": True}))
        if getattr(self, "typing_ends", None) is not None:
            self.typing_ends.cancel()
        self.typing_ends = asyncio.get_running_loop().call_later(
            TYPING_SHOWN_SECONDS, lambda: asyncio.ensure_future(self._typing_over()))

    async def _typing_over(self) -> None:
        with contextlib.suppress(Exception):  # the socket may have closed meanwhile
            await self.send(text_data=render_to_string("staff/conversation.html#typing", {"typing": "", "oob": True}))

    async def push(self) -> None:
        text, seq, shown = await database_sync_to_async(self._render)()
        if text is None:
            await self.close(code=4404)
            return
        self.last_sent, self.shown = seq, shown
        await self.send(text_data=text)

    def _render(self) -> tuple[str | None, int, int | None]:
        data = inspector.inspect_conversation(self.conversation_id, live=True, since=self.shown)
        if data is None:
            return None, 0, None
        # Whose controls the inspector shows: Send reply and Hand back are the holder's.
        text = render_to_string("staff/live.html", {"c": data, **panel_context(self.scope["user"])})
        return text, data["seq"], data["seq"] if data["verification"].ok else None


class StaffPresenceConsumer(AsyncWebsocketConsumer):
    """
    Every staff panel page's presence socket: the member is online while one is open (apps/people/presence.py).

    The page says it is there every `HEARTBEAT_SECONDS`, with `{"active": true}` when its person
    pressed a key, clicked or scrolled since; anything else it sends counts as a plain heartbeat.
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not (user.is_active and user.is_staff):
            await self.close(code=4403)
            return
        self.staff = staff_identity(user)
        await self.accept()
        await self._seen(active=True)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            active = json.loads(text_data or "{}").get("active") is True
        except (ValueError, AttributeError):
            active = False
        await self._seen(active=active)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "staff", None):
            await database_sync_to_async(presence.gone)(self.channel_name)

    async def _seen(self, *, active: bool) -> None:
        await database_sync_to_async(presence.seen)(self.channel_name, self.staff, active=active, now=timezone.now())
