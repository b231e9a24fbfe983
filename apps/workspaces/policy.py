"""
Idle-close and retention policy (PRODUCT.md rule 10).

Pure: no Django. Settings and assistant configuration come in as arguments.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

_DURATION = re.compile(r"^\s*(\d{1,9})\s*([smhd])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


class MalformedDuration(ValueError):
    """A duration setting that is not a whole number with a unit, like 90m, 24h or 2d."""


def parse_duration(text: Any) -> timedelta:
    """
    Read a duration such as `90m`, `24h`, `2d` (or `30s`).

    :raises MalformedDuration: anything else, including a number without a unit
    """
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None:
        raise MalformedDuration(f"{text!r} is not a duration: write a whole number and a unit s, m, h or d, like 24h")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def idle_timeout_seconds(config: dict[str, Any], deployment_default: int) -> int:
    """The idle timeout of an assistant's conversations: its own setting, else the deployment's; 0 disables."""
    own = config.get("idle_timeout_seconds")
    value = deployment_default if own is None else own
    return max(0, int(value))


def idle_due(*, last_turn_at: datetime | None, timeout_seconds: int, now: datetime) -> bool:
    """Whether a conversation has been idle for its timeout; never with a zero timeout or no last turn."""
    if not timeout_seconds or last_turn_at is None:
        return False
    return now - last_turn_at >= timedelta(seconds=timeout_seconds)
