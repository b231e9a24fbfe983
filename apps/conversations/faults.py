"""
Fault injection for crash tests: `WAYPOINT_FAULT_AT=<boundary>` hard-exits the process there.

Unset, `reach` is one comparison of two strings.
"""

from __future__ import annotations

import os

from django.conf import settings

BOUNDARIES = (
    "before_batch_one",
    "after_batch_one",
    "after_model_round",
    "during_action",
    "after_result_accepted",
    "before_batch_two",
    "after_batch_two",
)
# The artifact boundaries (docs/people.md): before a tool call's artifact exists, right after its
# record committed, right after the application's acknowledgment committed.
ARTIFACT_BOUNDARIES = ("before_artifact", "after_artifact", "after_artifact_ack")
# The outgoing webhooks' boundary (docs/webhooks.md): the receiver answered, the outcome is not yet recorded.
WEBHOOK_BOUNDARIES = ("after_webhook_sent",)

_FAULT_AT = settings.WAYPOINT_FAULT_AT
if _FAULT_AT and _FAULT_AT not in BOUNDARIES + ARTIFACT_BOUNDARIES + WEBHOOK_BOUNDARIES:
    raise ValueError(f"WAYPOINT_FAULT_AT={_FAULT_AT!r} is not one of {BOUNDARIES + ARTIFACT_BOUNDARIES + WEBHOOK_BOUNDARIES}")


def reach(boundary: str) -> None:
    """Die here, without any cleanup, if this is the configured boundary."""
    if boundary == _FAULT_AT:
        os._exit(137)
