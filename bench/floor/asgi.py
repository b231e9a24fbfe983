"""The floor app (`daphne bench.floor.asgi:application`): pages and the conversation socket."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.floor.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

http = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from bench.floor.consumers import ConversationConsumer  # noqa: E402

application = ProtocolTypeRouter({
    "http": http,
    "websocket": URLRouter([path("ws/conversations/<uuid:conversation_id>/", ConversationConsumer.as_asgi())]),
})
