"""
A local stand-in for an OpenAI-compatible vendor, answering in the real Chat Completions wire format.

Each test queues the HTTP responses the vendor gives, in order; every request body is recorded.
`delay_seconds` makes every answer that late (a slow model).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(*, content: str | None = None, tool_calls: list[dict] | None = None, finish_reason: str | None = None,
               prompt_tokens: int = 12, completion_tokens: int = 5) -> dict[str, Any]:
    """A recorded-shape `chat.completion` object."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-AbC123",
        "object": "chat.completion",
        "created": 1764500000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
        "system_fingerprint": "fp_0ba0d124f1",
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def error(status: int, message: str, kind: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": kind, "param": None, "code": None}}


class Vendor:
    def __init__(self, *, delay_seconds: float = 0.0) -> None:
        self.delay_seconds = delay_seconds
        self.responses: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # each request's headers, in order
        vendor = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("Content-Length", 0))
                vendor.requests.append(json.loads(self.rfile.read(length)))
                vendor.headers.append({k.lower(): v for k, v in self.headers.items()})
                time.sleep(vendor.delay_seconds)
                status, body = vendor.responses.pop(0) if vendor.responses else error(500, "no response queued", "server_error")
                if isinstance(body, list):  # a stream: server-sent events
                    self.send_response(status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for chunk in body:
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll, so that leaving the `with` block does not wait half a second.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def queue(self, *responses: dict[str, Any] | tuple[int, Any]) -> None:
        for response in responses:
            self.responses.append(response if isinstance(response, tuple) else (200, response))

    def __enter__(self) -> Vendor:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
