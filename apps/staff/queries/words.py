"""How the staff pages say things: a run's state, a call, a wait, a JSON value."""

from __future__ import annotations

import json
from typing import Any

from apps.agent import tools


def last_run(run_status: str | None, quarantined: bool) -> str:
    """
    The one-word state of a conversation's latest run, shown beside its lifecycle (never in its place).

    A run `completed` is a finished turn: the conversation stays `active` until it is completed.
    """
    if quarantined and run_status == "interrupted":
        return "quarantined"
    return run_status or ""


def pretty(value: Any) -> str:
    """JSON for people: on one line when it is short, indented when it is not."""
    if isinstance(value, str):
        return value
    line = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return line if len(line) <= 60 else json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def waited(delta) -> str:
    """How long someone has waited, as people say it: "just now", "4 min", "1 h 5 min"."""
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return "just now" if seconds < 10 else f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def call_words(tool: dict[str, Any], name: str, arguments: Any) -> str:
    """What the customer's card says of a call (its tool's summary, else display name), "" when it says only the name."""
    return tools.summary(tool, arguments) or (tools.display_name(tool, name) if tool.get("display_name") else "")
