"""
`make bench ARGS="--only hooklag"`: a healthy webhook endpoint's lag (commit of a delivery to the
endpoint's first byte) alone, and beside four endpoints that accept a connection and never answer,
each kept fed with due deliveries, so every one of them always has an attempt hanging until its deadline.
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench.environment import serve

HANGING_ENDPOINTS = 4


class _Answering:
    """A healthy endpoint: answers every delivery at once and keeps the count."""

    def __init__(self) -> None:
        self.deliveries: list[str] = []  # each delivery's path, in the order they came
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                endpoint.deliveries.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Hanging:
    """Accepts every connection, reads the request and never answers; closes them all at the end."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def section_hooklag(report, database, *, quick: bool) -> None:
    from apps.webhooks import endpoints
    from apps.webhooks.models import WebhookEndpoint

    samples = 10 if quick else 30
    # Subscribed to a type no other section causes: these endpoints only get what is sent here.
    quiet = ["handoff.timed_out"]
    hanging = [_Hanging() for _ in range(HANGING_ENDPOINTS)]
    receiver = _Answering()
    server = serve(database, {"WAYPOINT_WEBHOOK_ALLOW_PRIVATE": "1"})
    made: list[WebhookEndpoint] = []
    try:
        healthy = endpoints.create(url=receiver.url, events=quiet)
        made.append(healthy)
        alone = _lags(receiver, healthy, samples, feed=[])
        stuck = [endpoints.create(url=h.url, events=quiet) for h in hanging]
        made += stuck
        beside = _lags(receiver, healthy, samples, feed=stuck)
        opened = sum(len(h.held) for h in hanging)
    finally:
        receiver.close()
        server.stop()
        for h in hanging:
            h.close()
        for endpoint in made:
            endpoints.delete(endpoint)
    for what, lags in (("alone", alone), (f"beside {HANGING_ENDPOINTS} endpoints that never answer", beside)):
        report.latency_row("hooklag", f"healthy webhook endpoint's lag, {what}", lags)
    worst = max(beside)
    report.figures["hook_lag_p99_s"] = worst
    report.notes.append(
        f"hooklag: a healthy endpoint's lag p50 {sorted(alone)[len(alone) // 2] * 1000:.0f} ms alone, "
        f"p50 {sorted(beside)[len(beside) // 2] * 1000:.0f} ms and worst {worst * 1000:.0f} ms beside "
        f"{HANGING_ENDPOINTS} hanging ones ({opened} hanging connections opened; goal ≤ 2 s)"
    )
    print(report.notes[-1])


def _lags(receiver, healthy, samples: int, *, feed: list) -> list[float]:
    """Send `samples` test events to `healthy`, one at a time, each after a due delivery to every endpoint of `feed`."""
    from django.db import transaction

    from apps.webhooks import endpoints

    lags = []
    for _ in range(samples):
        for endpoint in feed:
            endpoints.send_test(endpoint)
        got = len(receiver.deliveries)
        with transaction.atomic():
            endpoints.send_test(healthy)
        committed = time.perf_counter()
        while len(receiver.deliveries) == got:
            if time.perf_counter() - committed > 60:
                raise RuntimeError("the healthy endpoint got nothing for 60 s")
            time.sleep(0.002)
        lags.append(time.perf_counter() - committed)
        time.sleep(0.2)
    return lags
