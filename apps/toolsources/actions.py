"""
Writes of tool sources (PRODUCT.md "Tool sources: MCP"): add one (connect and list its tools),
list it again, confirm a changed tool, delete it. Their API and panel read the same answers (`shown`).
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.actions.targets import TargetError, parse_target
from apps.conversations.actions import check_clean
from apps.conversations.errors import BadInput, NotFound
from apps.toolsources import catalog, client, secrets
from apps.toolsources.models import ToolSource

_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")
_HEADER_VALUE = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
# Headers an MCP connection sets itself: a source may not replace them.
_RESERVED = {"host", "content-length", "content-type", "accept", "idempotency-key", "mcp-session-id", "mcp-protocol-version",
             "connection", "transfer-encoding"}


class SourceRefused(BadInput):
    """The server could not be listed: not reachable, refused, or not an MCP server."""

    code = "tool_source_unreachable"
    status = 422


def _check_headers(headers: Any) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, dict) or len(headers) > 20:
        raise BadInput("headers must be an object of at most 20 header names and their values")
    for name, value in headers.items():
        if not isinstance(name, str) or not _HEADER_NAME.match(name) or name.lower() in _RESERVED:
            raise BadInput(f"headers: {str(name)[:100]!r} is not a header a source may set")
        if not isinstance(value, str) or len(value) > 4000 or not _HEADER_VALUE.fullmatch(value):
            raise BadInput(f"headers: the value of {name} must be text of at most 4000 visible characters on one line, "
                           "with no space at either end")
    return dict(headers)


def _check_url(url: Any) -> str:
    try:
        target = parse_target(url)
    except TargetError as exc:
        raise BadInput(f"url: {exc}") from None
    # The headers are secrets: they go out encrypted, as webhook deliveries do (plain http only for local development).
    if target.scheme != "https" and not settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE:
        raise BadInput("url: must be https, since its headers are secrets")
    return url


def create_source(*, name: Any, url: Any, headers: Any = None, kind: Any = "mcp") -> ToolSource:
    """
    Connect to an MCP server, list its tools and keep it as a source; its tools are confirmed as listed.

    :raises BadInput: a bad name, kind, url or header
    :raises SourceRefused: the server could not be listed (said in words)
    """
    if kind != "mcp":
        raise BadInput('kind: only "mcp" tool sources exist')
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise BadInput("name: required text of at most 200 characters")
    check_clean(name, "name")
    url, headers = _check_url(url), _check_headers(headers)
    listing = _list(url, headers)
    tools = catalog.merge(listing.tools, [], {})
    return ToolSource.objects.create(
        name=name.strip(), url=url, headers=secrets.seal(headers), header_names=sorted(headers), description=listing.instructions[:2000],
        tools=tools, confirmed=catalog.confirmations(tools, {}), refreshed_at=timezone.now(),
    )


def _list(url: str, headers: dict[str, str]) -> client.Listing:
    try:
        return client.list_tools(url, headers)
    except client.SourceError as exc:
        raise SourceRefused(f"{url} could not be listed: {exc}") from None


def live_sources() -> list[ToolSource]:
    return list(ToolSource.objects.filter(deleted_at__isnull=True))


def live_source(source_id: Any) -> ToolSource:
    """:raises NotFound: no such source, or it was deleted"""
    found = ToolSource.objects.filter(id=source_id, deleted_at__isnull=True).first() if _is_uuid(source_id) else None
    if found is None:
        raise NotFound("no such tool source")
    return found


def _is_uuid(value: Any) -> bool:
    return isinstance(value, str) and bool(re.fullmatch(r"[0-9a-fA-F-]{36}", value))


def refresh_source(source_id: str) -> ToolSource:
    """
    List the server's tools again: a changed tool is disabled until confirmed, a gone one is `missing`.

    :raises NotFound: no such source
    :raises SourceRefused: the server could not be listed; the catalog stays as it was
    """
    source = live_source(source_id)
    listing = _list(source.url, _headers_of(source))
    with transaction.atomic():
        source = ToolSource.objects.select_for_update().get(id=source.id)
        source.tools = catalog.merge(listing.tools, source.tools, source.confirmed)
        source.confirmed = catalog.confirmations(source.tools, source.confirmed)
        source.description, source.refreshed_at = listing.instructions[:2000], timezone.now()
        source.save(update_fields=["tools", "confirmed", "description", "refreshed_at"])
    return source


def _headers_of(source: ToolSource) -> dict[str, str]:
    """:raises BadInput: the headers were stored under another key (the deployment's key changed)"""
    try:
        return secrets.unseal(source.headers)
    except secrets.UnreadableHeaders:
        raise BadInput(f"{source.name}'s headers were stored under another key than this deployment's: delete the source "
                       "and add it again with its headers") from None


def confirm_tool(source_id: str, name: str, fingerprint: str | None = None) -> ToolSource:
    """
    Confirm a changed tool's new definition: it is enabled again as it now is.

    `fingerprint`: the definition the person reviewed; if a refresh brought another one meanwhile,
    nothing is confirmed.
    :raises NotFound: no such source or tool
    :raises BadInput: the tool is missing from the server, its schema cannot be offered, or it changed again
    """
    with transaction.atomic():
        source = live_source(source_id)
        source = ToolSource.objects.select_for_update().get(id=source.id)
        tool = next((t for t in source.tools if t["name"] == name), None)
        if tool is None:
            raise NotFound("no such tool in this source")
        if tool.get("missing"):
            raise BadInput(f"{name} is no longer on the server: refresh the source once it is back")
        if tool.get("problem"):
            raise BadInput(f"{name} cannot be enabled: {tool['problem']}")
        if fingerprint and fingerprint != tool["fingerprint"]:
            raise BadInput(f"{name} changed again since it was shown: look at it once more before confirming")
        tool.update(changed=False, enabled=True)
        source.confirmed = {**source.confirmed, name: tool["fingerprint"]}
        source.save(update_fields=["tools", "confirmed"])
    return source


def delete_source(source_id: str) -> None:
    """:raises NotFound: no such source. Assistants that use its tools refuse them from then on."""
    source = live_source(source_id)
    source.deleted_at = timezone.now()
    source.save(update_fields=["deleted_at"])


def shown(source: ToolSource) -> dict[str, Any]:
    """A source as the API returns it: never its header values (their names only)."""
    return {
        "id": str(source.id), "name": source.name, "kind": source.kind, "url": source.url,
        "header_names": list(source.header_names), "description": source.description,
        "refreshed_at": source.refreshed_at.isoformat() if source.refreshed_at else None,
        "tools": [{k: t.get(k) for k in ("name", "description", "input_schema", "annotations", "class", "fingerprint",
                                         "enabled", "changed", "missing")} | ({"problem": t["problem"]} if t.get("problem") else {})
                  for t in source.tools],
    }
