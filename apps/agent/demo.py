"""The demo assistant loaded by the run command: one scripted support agent showing every feature."""

from __future__ import annotations

DEMO_NAME = "Waypoint demo support"


def demo_config(webhook_url: str) -> dict:
    return {
        "name": DEMO_NAME,
        "allow_conversation_completion": True,
        "step_budget": 8,
        "model": {
            "provider": "scripted",
            "rules": [
                {
                    "match": "refund",
                    "steps": [
                        {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
                        {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                        {"say": "Refund issued: {result}."},
                    ],
                },
                {
                    "match": "order",
                    "steps": [
                        {"call": "lookup_order", "arguments": {"order_id": "A-1"}},
                        {"say": "Your order A-1 is on its way: {result}."},
                    ],
                },
                {
                    "match": "when|deliver",
                    "steps": [
                        {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                        {"say": "Booked for {result}."},
                    ],
                },
                {
                    "match": "help|question",
                    "steps": [
                        {"call": "ask_question", "arguments": {"question": "Which order is this about?"}},
                        {"say": "Thanks, I will look into {result}."},
                    ],
                },
                {"match": "bye", "steps": [{"say": "Goodbye!", "call": "complete_conversation", "arguments": {}}]},
            ],
            "fallback": [{"say": "You said: {message}. Try asking about an order, a refund, a delivery date, help, or say bye."}],
        },
        "tools": [
            {"name": "lookup_order", "kind": "server", "action": "echo"},
            {"name": "issue_refund", "kind": "server", "action": "webhook", "url": webhook_url, "requires_approval": True},
            {
                "name": "pick_date",
                "kind": "client",
                "parameters": {"type": "object", "properties": {"date": {"type": "string", "format": "date", "title": "Delivery date"}}},
            },
        ],
    }
