"""
Django-side steps of the process tests, run in a short-lived `manage.py shell` on a server database.

The test process never opens the server database through Django: it drives the servers over HTTP,
reads rows with plain SQL, and asks this module (in its own process, with the inline runner) for the
few things that need the application: an assistant, seeded conversations, replay and verify.
"""

from __future__ import annotations

import json
from typing import Any

MARK = "PROBE-RESULT "


def lab(*, config: dict[str, Any], conversations: int, message: str) -> dict[str, Any]:
    """Create an assistant and `conversations` conversations whose first turn (`message`) completed."""
    from django.utils import timezone

    from apps.agent import actions
    from apps.agent.actions import create_assistant

    created = create_assistant(config=config)
    started = [
        actions.start_conversation(assistant_id=str(created.id), message=message, persona="guest:crash", edge="link", now=timezone.now())
        for _ in range(conversations)
    ]
    return {"assistant_id": str(created.id), "conversations": started}


def webhook_endpoint(*, url: str, events: list[str]) -> dict[str, Any]:
    """Register an outgoing webhook endpoint; its id and signing secret."""
    from apps.webhooks import endpoints

    made = endpoints.create(url=url, events=events)
    return {"id": str(made.id), "secret": made.secret}


def resolve(*, run_id: str, resolution: str, note: str, result: str = "") -> dict[str, Any]:
    """Record a staff resolution of a quarantined turn, as the staff panel does."""
    from django.utils import timezone

    from apps.staff.actions import resolve_quarantine

    recorded = resolve_quarantine(run_id=run_id, resolution=resolution, note=note, result=result, actor="staff:ops",
                                  now=timezone.now())
    return {"seq": recorded.seq}


def staff_reply(*, conversation_id: str, staff_name: str, text: str) -> dict[str, Any]:
    """A person takes the conversation over and writes to the customer, as the staff panel does."""
    from django.utils import timezone

    from apps.agent import handoff

    staff = f"staff:{staff_name.lower()}"
    handoff.take_control(conversation_id=conversation_id, staff=staff, name=staff_name, now=timezone.now())
    handoff.staff_message(conversation_id=conversation_id, staff=staff, text=text, now=timezone.now())
    return {"ok": True}


def staff_reply_and_return(*, conversation_id: str, staff_name: str, text: str) -> dict[str, Any]:
    """The person who holds the conversation writes once more, then hands it back to the assistant."""
    from django.utils import timezone

    from apps.agent import handoff

    staff = f"staff:{staff_name.lower()}"
    handoff.staff_message(conversation_id=conversation_id, staff=staff, text=text, now=timezone.now())
    handoff.return_control(conversation_id=conversation_id, staff=staff, now=timezone.now())
    return {"ok": True}


def change_control(*, conversation_id: str, action: str, hang: bool = False, **arguments: Any) -> dict[str, Any]:
    """
    `handoff.<action>_control` as the panel makes it; returns the control after it.

    `hang`: the change is written inside a transaction that is not committed, which says so on
    stdout (`HANGING`) and waits there to be killed.
    """
    import sys
    import time

    from django.db import transaction
    from django.utils import timezone

    from apps.agent import handoff

    change = getattr(handoff, f"{action}_control")
    with transaction.atomic():
        control = change(conversation_id=conversation_id, now=timezone.now(), **arguments)
        if hang:
            print("HANGING", flush=True)
            sys.stdout.flush()
            time.sleep(600)
    return control


def control_changes(*, conversation_id: str) -> list[dict[str, Any]]:
    """The log's changes of control, in order: kind, the staff member they name, and the payload."""
    from apps.ledger import store

    return [{"kind": e.kind, "staff": e.payload.get("staff"), "payload": e.payload} for e in store.read(conversation_id)
            if e.kind in ("control_taken", "control_returned", "handoff_requested")]


def check(*, conversation_ids: list[str]) -> dict[str, Any]:
    """Run `conversation replay` and `conversation verify` on each conversation; ok and what each printed."""
    import io

    from django.core.management import CommandError, call_command

    out: dict[str, Any] = {}
    for cid in conversation_ids:
        out[cid] = {}
        for operation in ("replay", "verify"):
            printed = io.StringIO()
            try:
                call_command("conversation", operation, cid, actor="ops:crash-tests", stdout=printed)
                out[cid][operation] = {"ok": True, "output": printed.getvalue()}
            except CommandError as exc:
                out[cid][operation] = {"ok": False, "output": f"{printed.getvalue()}{exc}"}
    return out


def main(name: str, arguments: str) -> None:
    result = globals()[name](**json.loads(arguments))
    print(MARK + json.dumps(result, default=str))


def run(database, name: str, /, **arguments: Any) -> Any:
    """Run one probe step against a `ServerDatabase` and return its JSON result."""
    code = f"from tests.process.probe import main; main({name!r}, {json.dumps(arguments)!r})"
    out = database.manage("shell", "-c", code, env={"WAYPOINT_RUNNER": "inline", "WAYPOINT_FAULT_AT": ""})
    line = next(line for line in reversed(out.splitlines()) if line.startswith(MARK))
    return json.loads(line[len(MARK) :])
