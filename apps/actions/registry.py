"""
The linked server-side actions a server tool can run.

Each action says whether it has side effects: a side-effecting action that started without a
recorded outcome makes its turn ambiguous, and it is never retried automatically.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from apps.actions.outgoing import AddressRefused, outgoing_client
from apps.actions.targets import TargetError, parse_target, private_target


class ActionError(Exception):
    """The action ran and failed; the model receives the message as the tool result."""


class OutcomeUnknown(Exception):
    """
    The action was sent and no answer came (a timeout, a dropped connection): it may have taken effect.

    The runner treats it as a writer that died mid-call would leave it: a side-effecting action's
    turn becomes ambiguous and is quarantined; nothing is recorded as its outcome.
    """


@dataclass(frozen=True)
class ActionCall:
    conversation_id: str
    turn_id: str
    call_id: str
    tool: dict[str, Any]
    arguments: dict[str, Any]
    # The handle of this conversation's workspace (apps/workspaces/storage.Workspace): the only
    # files a tool can reach.
    workspace: Any = None
    # The key a re-attempt is sent with: its first attempt's (PRODUCT.md rule 8). Empty: this call's own.
    first_key: str = ""

    @property
    def idempotency_key(self) -> str:
        return self.first_key or f"{self.turn_id}:{self.call_id}"


@dataclass(frozen=True)
class Action:
    name: str
    side_effecting: bool
    run: Callable[[ActionCall], Any]
    # Changes nothing anywhere (no log entry, no file, no remote call): the runner may run it and
    # commit it together with the model round that asked for it, since a crash before that commit
    # only means deciding and running it again.
    read_only: bool = False
    # Reaches another system, whatever its class: a crash while it is under way is the
    # `during_action` boundary of the fault injection.
    remote: bool = False


def _echo(call: ActionCall) -> Any:
    return call.arguments


def _fail(call: ActionCall) -> Any:
    raise ActionError(str(call.arguments.get("message") or f"{call.tool['name']} failed"))


def _sleep(call: ActionCall) -> Any:
    seconds = call.arguments.get("seconds", 1)
    if not isinstance(seconds, int | float) or not 0 <= seconds <= 300:
        raise ActionError("seconds must be a number from 0 to 300")
    time.sleep(seconds)
    return {"slept": seconds}


def check_webhook_target(url: str) -> None:
    """
    Refuse webhook targets that are malformed or not on a global unicast address (SSRF).

    `WAYPOINT_WEBHOOK_ALLOW_PRIVATE=1` allows private addresses for local development and tests. A
    name is checked again on every connection (`apps.actions.outgoing`): it may resolve elsewhere by then.
    :raises ActionError: the URL is malformed or points somewhere refused
    """
    try:
        parse_target(url)
    except TargetError as exc:
        raise ActionError(f"webhook url refused: {exc}") from None
    if settings.WAYPOINT_WEBHOOK_ALLOW_PRIVATE:
        return
    problem = private_target(url)
    if problem:
        raise ActionError(f"webhook target {problem}")


def webhook_signature(body: bytes) -> str:
    return "sha256=" + hmac.new(settings.WAYPOINT_WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()


def _webhook(call: ActionCall) -> Any:
    url = call.tool["url"]
    check_webhook_target(url)
    body = json.dumps(
        {
            "conversation_id": call.conversation_id,
            "turn_id": call.turn_id,
            "call_id": call.call_id,
            "tool": call.tool["name"],
            "arguments": call.arguments,
        },
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "Idempotency-Key": call.idempotency_key,
        "X-Waypoint-Signature": webhook_signature(body),
    }
    try:
        with outgoing_client(timeout=settings.WAYPOINT_WEBHOOK_TIMEOUT_SECONDS) as client:
            response = client.post(url, content=body, headers=headers)
    except AddressRefused as exc:
        raise ActionError(f"webhook target {exc}") from exc
    except httpx.HTTPError as exc:
        raise ActionError(f"webhook did not answer: {type(exc).__name__}") from exc
    if response.status_code >= 400:
        raise ActionError(f"webhook answered {response.status_code}")
    try:
        return response.json()
    except ValueError:
        return {"status": response.status_code}


# --- workspace actions (docs/people.md): files and artifacts of the call's own conversation ---


def _in_workspace(call: ActionCall, operation: Callable[[Any], Any]) -> Any:
    if call.workspace is None:
        raise ActionError(f"{call.tool['name']} needs the conversation's workspace")
    try:
        return operation(call.workspace)
    except ValueError as exc:  # WorkspaceError: a refused path, a symlink, a missing file
        raise ActionError(str(exc)) from exc


def _text_argument(call: ActionCall, name: str, *, required: bool = True) -> str:
    value = call.arguments.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ActionError(f"{name} must be text")
    return value


def _write_file(call: ActionCall) -> Any:
    path, content = _text_argument(call, "path"), _text_argument(call, "content")
    from django.utils import timezone

    return _in_workspace(call, lambda w: w.write(path, content, now=timezone.now()))


def _read_file(call: ActionCall) -> Any:
    path = _text_argument(call, "path")
    data = _in_workspace(call, lambda w: w.read(path))
    try:
        return {"path": path, "content": data.decode("utf-8")}
    except UnicodeDecodeError as exc:
        raise ActionError(f"{path} is not UTF-8 text") from exc


def _list_files(call: ActionCall) -> Any:
    path = _text_argument(call, "path", required=False)
    return {"path": path or ".", "entries": _in_workspace(call, lambda w: w.list(path))}


def _write_artifact(call: ActionCall) -> Any:
    """An artifact from `content`, or from the workspace file `from_path` (its identity and hash as source)."""
    from django.utils import timezone

    name = _text_argument(call, "name")
    media_type = _text_argument(call, "media_type", required=False) or "text/plain"
    from_path = _text_argument(call, "from_path", required=False)
    if from_path:
        content = _in_workspace(call, lambda w: w.read(from_path))
        identity = f"workspace:{from_path}"
        revision = "sha256:" + hashlib.sha256(content).hexdigest()
    else:
        content = _text_argument(call, "content").encode("utf-8")
        identity = _text_argument(call, "source", required=False)
        revision = _text_argument(call, "revision", required=False)
    return _in_workspace(
        call,
        lambda w: w.create_artifact(
            turn_id=call.turn_id, call_id=call.call_id, name=name, media_type=media_type, content=content,
            source_identity=identity, source_revision=revision, now=timezone.now(),
        ),
    )


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action("echo", side_effecting=False, read_only=True, run=_echo),
        Action("fail", side_effecting=False, read_only=True, run=_fail),
        # Not read-only: its start is committed first, so a long wait shows as progress.
        Action("sleep", side_effecting=False, run=_sleep),
        Action("webhook", side_effecting=True, run=_webhook, remote=True),
        # Idempotent: a re-run writes the same file, or gets the call's artifact back.
        Action("write_file", side_effecting=False, run=_write_file),
        Action("read_file", side_effecting=False, read_only=True, run=_read_file),
        Action("list_files", side_effecting=False, read_only=True, run=_list_files),
        Action("write_artifact", side_effecting=False, run=_write_artifact),
    )
}
