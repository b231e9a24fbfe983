"""
The real OpenAI-compatible server for tests/realmodel/, once per test session, and a relay before it.

The relay passes every request and answer through unchanged (a stream chunk by chunk) and keeps
what was sent and how the server answered, so a test can say what the real server accepted.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from tests.realmodel import server


@pytest.fixture(scope="session")
def llama():
    reason = server.missing()
    if reason and os.environ.get("WAYPOINT_REQUIRE_REALMODEL"):
        pytest.fail(reason)  # CI installs the server: its absence there is a broken install, not a skip
    if reason:
        pytest.skip(reason)
    running = server.LlamaServer().start()
    yield running
    running.stop()


class Relay:
    def __init__(self, upstream: str) -> None:
        target = urlsplit(upstream)
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                relay.requests.append(json.loads(body))
                upstream_conn = http.client.HTTPConnection(target.hostname, target.port, timeout=300)
                upstream_conn.request("POST", self.path, body=body, headers={"Content-Type": "application/json"})
                answer = upstream_conn.getresponse()
                relay.statuses.append(answer.status)
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.getheader("Content-Type", "application/json"))
                self.send_header("Connection", "close")
                self.end_headers()
                while chunk := answer.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                upstream_conn.close()
                self.close_connection = True

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}{target.path}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def relay(llama, settings):
    """The deployment's model endpoint for the test: the relay to the real server."""
    running = Relay(llama.base_url)
    settings.WAYPOINT_OPENAI_BASE_URL = running.base_url
    settings.WAYPOINT_MODEL_RETRY_SECONDS = 0.2
    yield running
    running.close()
