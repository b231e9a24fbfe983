"""
The `mcp` action: one call of a tool source's tool, under the call's key (PRODUCT.md "Tool sources: MCP").

`read` and `idempotent` calls whose outcome is unknown are sent again under the same key; a
`write` or `destructive` one raises `OutcomeUnknown`, which makes its turn ambiguous.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from apps.actions.registry import Action, ActionCall, ActionError, OutcomeUnknown
from apps.toolsources import client, secrets
from apps.toolsources.models import ToolSource

LOG_LIMIT = 1_000_000  # characters of a result the log keeps
SAFE_RESENDS = 2  # a read or idempotent call with no answer is sent this many times more


def run(call: ActionCall) -> Any:
    tool = call.tool
    if tool.get("unavailable"):
        raise ActionError(f"{tool['name']} cannot be used now: {tool['unavailable']}")
    source = ToolSource.objects.filter(id=tool["mcp"]["source"], deleted_at__isnull=True).first()
    if source is None:
        raise ActionError(f"{tool['name']} cannot be used now: its tool source was deleted")
    if problem := _arguments_problem(tool.get("parameters"), call.arguments):
        raise ActionError(f"the arguments do not match {tool['name']}'s input schema: {problem}")
    try:
        headers = secrets.unseal(source.headers)
    except secrets.UnreadableHeaders as exc:
        raise ActionError(f"{source.name}: {exc}") from None
    safe = tool.get("class") in ("read", "idempotent")
    sends = 1 + (SAFE_RESENDS if safe else 0)
    for _ in range(sends):
        try:
            outcome = client.call_tool(source.url, headers, tool["mcp"]["tool"], call.arguments, key=call.idempotency_key,
                                       timeout=float(tool.get("timeout_seconds") or 30))
            break
        except client.OutcomeUnknown as exc:
            if not safe:
                raise OutcomeUnknown(str(exc)) from None
            last = exc
        except client.SourceError as exc:
            raise ActionError(f"{source.name}: {exc}") from None
    else:
        raise ActionError(f"{source.name} did not answer ({last}), {sends} times under the same key")
    if not outcome.ok:
        raise ActionError(client.text_of(outcome.output)[:2000] or f"{tool['name']} failed")
    return _kept(outcome.output)


def _arguments_problem(schema: Any, arguments: dict[str, Any]) -> str:
    if not isinstance(schema, dict):
        return ""
    try:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
    except Exception:  # noqa: BLE001 - a server's schema that cannot be applied (an unresolvable $ref) blocks no call
        return ""
    return error.message if error is not None else ""


def _kept(output: Any) -> Any:
    """A result as the log keeps it: up to LOG_LIMIT characters, said so when cut."""
    text = client.text_of(output)
    if len(text) <= LOG_LIMIT:
        return output
    return {"result": text[:LOG_LIMIT], "note": f"the result was cut at {LOG_LIMIT} of its {len(text)} characters"}


ACTION = Action("mcp", side_effecting=True, run=run, remote=True)
