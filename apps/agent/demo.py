"""The demo assistant loaded by the run command: one scripted support agent showing every feature."""

from __future__ import annotations

DEMO_NAME = "Waypoint demo support"
DEMO_INSTRUCTIONS = (
    "You are the support agent of the Waypoint demo shop. Answer briefly and kindly. Look an order up with "
    "lookup_order before saying anything about it; a refund needs issue_refund, which a person approves; ask for "
    "a delivery date with pick_date; when the customer says goodbye, call complete_conversation."
)


def demo_config(webhook_url: str) -> dict:
    return {
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
