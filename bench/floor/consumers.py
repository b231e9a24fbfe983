from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from bench.floor.models import Conversation
from bench.floor.views import group


def _allowed(conversation_id, token: str) -> bool:
    return Conversation.objects.filter(id=conversation_id, token=token).exists()


class ConversationConsumer(AsyncWebsocketConsumer):
    """Sends each pushed fragment to its socket, as it came."""

    async def connect(self) -> None:
        self.conversation_id = self.scope["url_route"]["kwargs"]["conversation_id"]
        token = parse_qs(self.scope["query_string"].decode()).get("token", [""])[0]
        if not await database_sync_to_async(_allowed)(self.conversation_id, token):
            await self.close(code=4403)
            return
        await self.channel_layer.group_add(group(self.conversation_id), self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(group(self.conversation_id), self.channel_name)

    async def messages_added(self, event: dict) -> None:
        await self.send(text_data=event["html"])
