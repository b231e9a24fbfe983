"""
The demo shop's MCP server (`make run` serves it, `manage.py demo_mcp`): an order lookup that only
reads, an address change that is idempotent and a refund that is destructive and honours the
call's key, so a newcomer sees an MCP tool answer, an approval by class and a refund done once.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

SOURCE_NAME = "Demo shop"


def demo_server() -> MCPServer:
    shop = MCPServer(SOURCE_NAME, instructions="The demo shop's orders, addresses and refunds.")
    addresses: dict[str, str] = {}
    refunds: dict[str, dict[str, Any]] = {}  # by idempotency key: a repeated key gets the first refund back

    @shop.tool(description="Look an order up by its id: its status and total", annotations=ToolAnnotations(readOnlyHint=True))
    def lookup_order(order_id: str) -> dict:
        return {"order_id": order_id, "status": "shipped", "total": 20, "address": addresses.get(order_id, "1 Main St")}

    @shop.tool(description="Change an order's delivery address", annotations=ToolAnnotations(idempotentHint=True, destructiveHint=False))
    def update_address(order_id: str, address: str) -> dict:
        addresses[order_id] = address
        return {"order_id": order_id, "address": address}

    @shop.tool(description="Refund an amount of an order", annotations=ToolAnnotations(destructiveHint=True))
    def issue_refund(order_id: str, amount: float, ctx: Context) -> dict:
        key = {k.lower(): v for k, v in (ctx.headers or {}).items()}.get("idempotency-key", "")
        return refunds.setdefault(key or f"unkeyed-{len(refunds)}", {"refund_id": f"R-{len(refunds) + 1}", "order_id": order_id,
                                                                      "amount": amount})

    return shop
