"""A slow or lossy network between a page and the server, made with Playwright's routes."""

from __future__ import annotations


class LatePushes:
    """
    Page sockets that lose the pushes after a head while `losing`, up to one that shows `until`.

    A whole state (a connect's, a resync's) still arrives. `lost` holds what was lost and `asked`
    what the pages sent (a resync is "sync").
    """

    def __init__(self) -> None:
        self.losing = False
        self.until: str | None = None  # None: every push after a head is lost while losing
        self.lost: list[str] = []
        self.asked: list[str] = []

    def route(self, socket) -> None:
        server = socket.connect_to_server()
        socket.on_message(lambda message: (self.asked.append(message), server.send(message)))
        server.on_message(lambda message: self._forward(socket, message))

    def _forward(self, socket, message) -> None:
        if (self.losing and isinstance(message, str) and "data-after=" in message
                and (self.until is None or self.until not in message)):
            self.lost.append(message)
            return
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
