from channels.auth import AuthMiddlewareStack
from django.urls import path

from apps.staff.consumers import StaffConversationConsumer, StaffPresenceConsumer

# Only this route reads the session cookie: customer sockets authenticate by token alone.
websocket_urlpatterns = [
    path("ws/staff/conversations/<uuid:conversation_id>/", AuthMiddlewareStack(StaffConversationConsumer.as_asgi())),
    path("ws/staff/presence/", AuthMiddlewareStack(StaffPresenceConsumer.as_asgi())),
]
