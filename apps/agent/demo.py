"""
The demo assistant loaded by the run command: one support agent showing every feature.

Scripted by default (no key, no network); given a model name (`WAYPOINT_DEMO_MODEL`) it is the same
agent on the deployment's OpenAI-compatible endpoint, with the same tools and instructions.
"""

from __future__ import annotations

DEMO_NAME = "Waypoint demo support"
DEMO_INSTRUCTIONS = (
    "You are the support agent of the Waypoint demo shop. Answer briefly and kindly. Look an order up with "
    "lookup_order before saying anything about it; a refund needs issue_refund, which a person approves; ask for "
    "a delivery date with pick_date; when the customer says goodbye, call complete_conversation."
)


def real_model(name: str) -> dict:
    """The demo's model block for a real model on the deployment's endpoint (WAYPOINT_OPENAI_BASE_URL)."""
    return {"provider": "openai", "model": name, "stream": True, "temperature": 0.2, "max_output_tokens": 400,
            "timeout_seconds": 120}


def demo_config(webhook_url: str, *, model: str = "") -> dict:
    config = {
        "name": DEMO_NAME,
        "instructions": DEMO_INSTRUCTIONS,
        "allow_conversation_completion": True,
        "step_budget": 8,
        "model": {
            "provider": "scripted",
            "temperature": 0.2,
            "max_output_tokens": 400,
            "rules": [
                {
                    # Asking for a person hands the conversation to the staff's queue (docs/handoff.md).
                    "match": r"\b(person|human|someone real|real agent)\b",
                    "steps": [{"say": "Of course, I'm asking a person to join.", "handoff": "the customer asked for a person"}],
                },
                {
                    "match": "refund",
                    "steps": [
                        {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
                        {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                        {"when": "approved", "say": "Refund issued: $20 for order A-1."},
                        {"when": "denied", "say": "The refund was declined, so nothing was refunded for order A-1."},
                        {"when": "failed", "say": "The refund could not be issued just now ({result.error}). Nothing was refunded; please try again later."},
                    ],
                },
                {
                    "match": "order",
                    "steps": [
                        {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
                        {"say": "Your order A-1 is on its way."},
                    ],
                },
                {
                    "match": "when|deliver",
                    "steps": [
                        {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                        {"when": "declined", "say": "No problem: no delivery date is booked. Ask again whenever you like."},
                        {"say": "Booked for {result.date}."},
                    ],
                },
                {
                    "match": "help|question",
                    "steps": [
                        {"call": "ask_question", "arguments": {"question": "Which order is this about?"}},
                        {"when": "declined", "say": "No problem. Tell me more whenever you are ready."},
                        {"say": "Thanks, I will look into {result.answer}."},
                    ],
                },
                {"match": "bye", "steps": [{"say": "Goodbye!", "call": "complete_conversation", "arguments": {}}]},
                {
                    # A how-to question is answered from the help centre (docs/knowledge.md), citing it;
                    # one it has no answer for is told so, with a person offered (knowledge.no_answer).
                    "match": r"\bhow (do|can|long|much) i\b|\b(send (it|something|this|them) back|shipping|warranty|exchange)\b",
                    "steps": [
                        {"call": "search_knowledge", "arguments": {"query": "{message}"}},
                        {"when": "found", "say": "Our help centre covers this in {passages}."},
                        {"when": "not_found", "say": "I couldn't find that in our help centre."},
                    ],
                },
            ],
            # The message keeps its own closing punctuation ("are you there?"), so nothing is added after it.
            "fallback": [{"say": "You said: {message}\n\nTry asking about an order, a refund, a delivery date, help, or say bye."}],
        },
        # A person can be asked for: by Talk to a person, by the application, and by the model.
        "handoff": {"enabled": True, "model_tool": True, "queue_timeout_seconds": 600},
        # The demo shop's help centre (apps/knowledge/demo.py), which load_demo adds.
        "knowledge": {"enabled": True, "max_passages": 3, "no_answer": "offer_handoff"},
        "tools": [
            {"name": "lookup_order", "kind": "server", "action": "echo", "description": "Look an order up by its id",
             "display_name": "Order lookup", "summary": "Looking up your order {order_id}",
             "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": webhook_url, "requires_approval": True,
             "description": "Refund an amount of an order (a person approves it first)",
             "display_name": "Refund", "summary": "Refund ${amount} for order {order_id}",
             "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                            "required": ["order_id", "amount"]}},
            {
                "name": "pick_date",
                "kind": "client",
                "description": "Ask the customer for a delivery date",
                "display_name": "Delivery date",
                "parameters": {"type": "object", "properties": {"date": {"type": "string", "format": "date", "title": "Delivery date",
                                                     "minimum": "today"}}},
            },
        ],
    }
    if model:
        config["model"] = real_model(model)
    return config


def with_mcp_tools(config: dict, source: str) -> dict:
    """
    The demo with the demo shop's MCP server as a tool source: an order's status (read), a new
    address (idempotent) and a return's refund (destructive: approved by class, done once).
    """
    rules = [
        {"match": r"\b(status|track)\b", "steps": [
            {"call": "order_status", "arguments": {"order_id": "A-1"}},
            {"say": "Order A-1 is {result.status}, on its way to {result.address}."}]},
        {"match": r"\baddress\b", "steps": [
            {"call": "change_address", "arguments": {"order_id": "A-1", "address": "221B Baker Street"}},
            {"say": "Done: order A-1 now goes to {result.address}."}]},
        {"match": r"\breturn\b", "steps": [
            {"call": "return_refund", "arguments": {"order_id": "A-1", "amount": 20}},
            {"when": "denied", "say": "The return was declined, so nothing was refunded."},
            {"when": "failed", "say": "The refund could not be issued just now. Nothing was refunded; please try again later."},
            {"say": "Refund {result.refund_id} issued for the return of order A-1."}]},
    ]
    tools = [
        {"name": "order_status", "kind": "mcp", "source": source, "tool": "lookup_order", "display_name": "Order status",
         "summary": "Looking up order {order_id}"},
        {"name": "change_address", "kind": "mcp", "source": source, "tool": "update_address", "display_name": "New address",
         "summary": "Send order {order_id} to {address}"},
        {"name": "return_refund", "kind": "mcp", "source": source, "tool": "issue_refund", "display_name": "Return refund",
         "summary": "Refund ${amount} for the return of order {order_id}"},
    ]
    model = config["model"]
    if model.get("provider") == "scripted":
        # Before the webhook refund's rule, which any message naming a refund would match first.
        model = {**model, "rules": [*model["rules"][:1], *rules, *model["rules"][1:]]}
    return {**config, "model": model, "tools": [*config["tools"], *tools]}

