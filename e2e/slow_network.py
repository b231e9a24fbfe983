"""A slow or lossy network between a page and the server, made with Playwright's routes."""

from __future__ import annotations


class LatePushes:
    """Page sockets whose pushes after a head are lost until one that shows `until` (None: none lost)."""

    def __init__(self) -> None:
        self.until: str | None = None

    def route(self, socket) -> None:
        server = socket.connect_to_server()
        socket.on_message(server.send)
        server.on_message(lambda message: self._forward(socket, message))

    def _forward(self, socket, message) -> None:
        lost = self.until is not None and isinstance(message, str) and "data-after=" in message and self.until not in message
        if not lost:
            socket.send(message)


class LateReply:
    """Replies to a page's request held back until `send()`."""

    def __init__(self) -> None:
        self.held = None

    def hold(self, route) -> None:
        self.held = (route, route.fetch())

    def send(self) -> None:
        route, response = self.held
        route.fulfill(response=response)
