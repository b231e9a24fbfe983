"""
Receivers that misbehave do not disturb the workers: a 10 MB answer, one that never ends, one
that hangs, a reset connection.
"""

from __future__ import annotations

import socket
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
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


def drip(conn):
    """A status line, then one header byte at a time, each well within a read timeout: for 20 s."""
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for byte in b"X-Slow: " + b"z" * 80:
        conn.sendall(bytes([byte]))
        time.sleep(0.25)


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_TIMEOUT_SECONDS=1.0, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="60")
def test_a_receiver_that_drips_its_answer_is_cut_off_at_the_attempts_deadline(start):
    server = RawServer(drip)
    endpoints.create(url=server.url, events=["turn.completed"])
    start("hello there")

    began = time.monotonic()
    assert delivery.deliver_due() == 1
    took = time.monotonic() - began

    d = WebhookDelivery.objects.get()
    assert (d.status, d.attempts, d.last_status_code, d.last_response) == ("pending", 1, None, "no answer within 1 s")
    assert took < 8, took  # the drip goes on for 20 s; each byte alone is well within a read timeout


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_TIMEOUT_SECONDS=2.0, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="3")
def test_the_wait_before_a_retry_counts_from_the_end_of_the_failed_attempt(start):
    endpoints.create(url=RawServer(hang).url, events=["turn.completed"])
    start("hello there")

    began = timezone.now()
    delivery.deliver_due()

    d = WebhookDelivery.objects.get()
    # The attempt took its whole 2 s deadline; the 3 s wait comes after that, not from its start.
    assert d.next_attempt_at >= began + timedelta(seconds=2 + 3)


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_TIMEOUT_SECONDS=1.0, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="60")
def test_a_delivery_in_flight_is_not_claimed_again_until_its_attempt_is_recorded(start):
    server = RawServer(drip)
    endpoints.create(url=server.url, events=["turn.completed"])
    start("hello there")
    sending = threading.Thread(target=delivery.deliver_due)
    claimed_at = timezone.now()

    sending.start()
    while not server.connections:
        time.sleep(0.01)
    claims_meanwhile = []
    while sending.is_alive():
        claims_meanwhile.append(delivery.claim(now=claimed_at + delivery.claim_window() - timedelta(seconds=0.5)))
        time.sleep(0.05)
    sending.join()

    assert claims_meanwhile and not any(claims_meanwhile)  # not even just before the claim lapses
    assert delivery.claim_window().total_seconds() > settings.WAYPOINT_WEBHOOK_TIMEOUT_SECONDS
    assert server.connections == 1
    assert WebhookDelivery.objects.get().attempts == 1


@pytest.fixture
def dispatcher():
    """This process's dispatcher, as a server runs it, stopped after the test."""
    running = delivery._Dispatcher(capacity=16)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    running.ready.wait(5)
    yield running
    running.stop()
    thread.join(10)


def hold(conn):
    time.sleep(8)


@override_settings(WAYPOINT_WEBHOOK_ALLOW_PRIVATE=True, WAYPOINT_WEBHOOK_TIMEOUT_SECONDS=6.0, WAYPOINT_WEBHOOK_RETRY_SCHEDULE="60",
                   WAYPOINT_WEBHOOK_POLL_SECONDS=0.2)
def test_hanging_endpoints_hold_one_attempt_each_while_a_healthy_one_is_served(dispatcher):
    hanging = [RawServer(hold) for _ in range(4)]
    for server in hanging:
        endpoint = endpoints.create(url=server.url)
        for _ in range(3):
            endpoints.send_test(endpoint)
    healthy = RawServer(lambda conn: conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n"))
    endpoint = endpoints.create(url=healthy.url)
    dispatcher.wake()
    while sum(s.connections for s in hanging) < 4:
        time.sleep(0.02)

    endpoints.send_test(endpoint)
    dispatcher.wake()
    while not WebhookDelivery.objects.filter(endpoint=endpoint, status="delivered").exists():
        time.sleep(0.02)

    # Served while every hanging attempt was still open (each holds its claim for 6 s), and no
    # hanging endpoint had a second attempt in flight though each had three rows due.
    assert WebhookDelivery.objects.exclude(endpoint=endpoint).filter(attempts__gt=0).count() == 0
    assert [s.connections for s in hanging] == [1, 1, 1, 1]
