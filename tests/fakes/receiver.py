"""
A local webhook receiver that records every delivery (headers and body) and answers JSON.

Like a shop that honours `Idempotency-Key`, it answers a repeated key with the refund it made for
that key the first time.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, *, status: int = 200, delay: float = 0.0) -> None:
        """`delay`: seconds each delivery takes to be answered, after it was recorded (a slow shop)."""
        self.deliveries: list[dict] = []
        self.refunds: dict[str, str] = {}  # Idempotency-Key -> the refund made for it
        self.status, self.delay = status, delay
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.deliveries.append({"headers": dict(self.headers), "body": body, "path": self.path})
                time.sleep(receiver.delay)
                key = next((v for k, v in self.headers.items() if k.lower() == "idempotency-key"), "")
                refund = receiver.refunds.setdefault(key, f"R-{len(receiver.refunds) + 1}")
                data = json.dumps({"refund_id": refund}).encode()
                self.send_response(receiver.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks/refund"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
