"""
A real MCP server for tests, built with the `mcp` package (Streamable HTTP on localhost, in a
thread): a small shop whose tools record every call with the idempotency key it came with.

`lookup_order` is read-only, `update_address` idempotent, `issue_refund` destructive and
`add_note` carries no annotations (destructive by the specification's defaults). A refund keeps
the keys it has seen and returns the first result for a repeated key, as docs/tools.md asks servers to.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

from devservers.asgi import serve


class McpShop:
    def __init__(self, *, token: str = "", delay: float = 0.0, legacy: bool = False) -> None:
        """`legacy`: a server of the handshake era, which knows no `server/discover` (clients fall back to `initialize`)."""
        self.calls: list[dict[str, Any]] = []  # every tools/call: tool, arguments, key header, _meta key, headers
        self.refunds: dict[str, dict] = {}
        self.token, self.delay = token, delay
        self.server = self._build()
        if legacy:
            self.server._lowlevel_server._request_handlers.pop("server/discover")
        self.protocols: list[str] = []  # the MCP-Protocol-Version of each request
        self.port = _free_port()
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _record(self, ctx: Context, tool: str, arguments: dict) -> str:
        headers = {k.lower(): v for k, v in (ctx.headers or {}).items()}
        meta = ctx.request_context.meta
        meta_key = ""
        if meta is not None:
            extra = meta.model_dump() if hasattr(meta, "model_dump") else dict(meta)
            meta_key = extra.get("io.waypoint/idempotency-key", "")
        key = headers.get("idempotency-key", "")
        self.calls.append({"tool": tool, "arguments": arguments, "key": key, "meta_key": meta_key, "headers": headers})
        if self.delay:
            time.sleep(self.delay)
        return key

    def _build(self) -> MCPServer:
        shop = MCPServer("Acme shop", instructions="The Acme shop's orders and refunds.")

        @shop.tool(description="Look an order up by its id", annotations=ToolAnnotations(readOnlyHint=True))
        def lookup_order(order_id: str, ctx: Context) -> dict:
            self._record(ctx, "lookup_order", {"order_id": order_id})
            return {"order_id": order_id, "status": "shipped", "total": 20}

        @shop.tool(description="Change an order's delivery address",
                   annotations=ToolAnnotations(idempotentHint=True, destructiveHint=False))
        def update_address(order_id: str, address: str, ctx: Context) -> dict:
            self._record(ctx, "update_address", {"order_id": order_id, "address": address})
            return {"order_id": order_id, "address": address}

        @shop.tool(description="Refund an amount of an order", annotations=ToolAnnotations(destructiveHint=True))
        def issue_refund(order_id: str, amount: float, ctx: Context) -> dict:
            key = self._record(ctx, "issue_refund", {"order_id": order_id, "amount": amount})
            return self.refunds.setdefault(key, {"refund_id": f"R-{len(self.refunds) + 1}", "amount": amount})

        @shop.tool(description="Add a note to an order")
        def add_note(order_id: str, note: str, ctx: Context) -> str:
            self._record(ctx, "add_note", {"order_id": order_id, "note": note})
            return f"noted on {order_id}"

        @shop.tool(description="Always fails", annotations=ToolAnnotations(readOnlyHint=True))
        def broken(ctx: Context) -> str:
            self._record(ctx, "broken", {})
            raise ValueError("the shop's database is down")

        return shop

    def app(self):
        inner = self.server.streamable_http_app()

        async def guarded(scope, receive, send):
            if scope["type"] == "http":
                headers = dict(scope.get("headers") or [])
                self.protocols.append(headers.get(b"mcp-protocol-version", b"").decode())
                if self.token and headers.get(b"authorization", b"").decode() != f"Bearer {self.token}":
                    await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
                    await send({"type": "http.response.body", "body": b"unauthorized"})
                    return
            await inner(scope, receive, send)

        return guarded

    def of(self, tool: str) -> list[dict[str, Any]]:
        return [c for c in self.calls if c["tool"] == tool]

    def __enter__(self) -> McpShop:
        self._uvicorn, self._thread = serve(self.app(), self.port)
        return self

    def __exit__(self, *exc) -> None:
        self._uvicorn.should_exit = True
        self._thread.join(timeout=5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
