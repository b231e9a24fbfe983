"""
Receivers that misbehave do not disturb the workers: a 10 MB answer, one that never ends, one
that hangs, a reset connection.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.test import override_settings
from django.utils import timezone

from apps.webhooks import delivery, endpoints
from apps.webhooks.models import WebhookDelivery

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


class RawServer:
    """A TCP server answering every connection with `behave(conn)`: no HTTP library in the way."""

    def __init__(self, behave):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.behave, self.connections = behave, 0
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        try:
            conn.recv(65536)
            self.behave(conn)
        except OSError:
            pass
        finally:
            conn.close()


def junk(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n")
    chunk = b"x" * 65536
    for _ in range(160):
        conn.sendall(chunk)


def endless(conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    while True:
        conn.sendall(b"4\r\njunk\r\n")
        time.sleep(0.01)


def hang(conn):
    time.sleep(5)


def reset(conn):
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_TIMEOUT_SECONDS=1.0, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="60")
@pytest.mark.parametrize("behave, status, code", [
    (junk, "delivered", 200), (endless, "delivered", 200), (hang, "pending", None), (reset, "pending", None),
])
def test_a_misbehaving_receiver_costs_one_bounded_attempt(start, behave, status, code):
    server = RawServer(behave)
    endpoints.create(url=server.url, events=["turn.completed"])
    start("hello there")

    began = time.monotonic()
    assert delivery.deliver_due() == 1
    took = time.monotonic() - began

    d = WebhookDelivery.objects.get()
    assert (d.status, d.attempts, d.last_status_code) == (status, 1, code)
    assert took < 4, took  # the timeout (1 s) bounds connecting, waiting and reading alike
    assert len(d.last_response) <= delivery.FIRST_BYTES
    if status == "pending":
        assert d.next_attempt_at > timezone.now()


def busy(conn):
    conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 120\r\nContent-Length: 4\r\n\r\nbusy")


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="5,5")
def test_a_longer_retry_after_on_503_is_honoured(start):
    endpoints.create(url=RawServer(busy).url, events=["turn.completed"])
    start("hello there")

    before = timezone.now()
    delivery.deliver_due()

    d = WebhookDelivery.objects.get()
    assert (d.status, d.last_status_code, d.last_response) == ("pending", 503, "busy")
    assert 115 < (d.next_attempt_at - before).total_seconds() < 125  # not the schedule's 5 s
