"""
Talking to an MCP server (PRODUCT.md "Tool sources: MCP"), with the `mcp` package's client over
Streamable HTTP (it falls back to the handshake of earlier protocol versions by itself).

Every connection is checked by the SSRF rules of outgoing calls (`apps.actions.outgoing`) with
`WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE`, follows no redirect to another origin and ignores the
environment's proxies. The calls are synchronous for their callers (the runner's threads, the
API's views): each runs its own event loop. Header values go to the server and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from dataclasses import dataclass
from typing import Any

import httpcore2
import httpx2
from django.conf import settings

from apps.actions.outgoing import AsyncCheckedBackend

IDEMPOTENCY_META = "io.waypoint/idempotency-key"


class SourceError(Exception):
    """The server could not be reached or did not answer as an MCP server; the message says so in words."""


class TooLarge(Exception):
    """The server's answer was larger than WAYPOINT_TOOL_SOURCES_MAX_RESULT_BYTES."""


class OutcomeUnknown(SourceError):
    """The call was sent and no answer came (a timeout, a dropped connection): it may have taken effect."""


@dataclass(frozen=True)
class Listing:
    instructions: str
    tools: list[dict[str, Any]]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    output: Any  # structuredContent when given, else the text content


class _CheckedTransport(httpx2.AsyncHTTPTransport):
    def __init__(self, *, allow_private: bool) -> None:
        limits = httpx2.Limits()
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl.create_default_context(), max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=AsyncCheckedBackend(allow_private=allow_private, core=httpcore2),
        )


def _http(headers: dict[str, str], timeout: float, statuses: list[int]) -> httpx2.AsyncClient:
    async def seen(response: httpx2.Response) -> None:
        # The MCP client's errors do not say which status came. Only POSTs (the messages) count: a
        # server may answer the optional GET event stream with 405 and still take every call.
        if response.request.method == "POST":
            statuses.append(response.status_code)
        if int(response.headers.get("content-length") or 0) > _max_bytes():
            raise TooLarge(f"the answer was larger than {_max_bytes()} bytes")

    return httpx2.AsyncClient(
        transport=_CheckedTransport(allow_private=settings.WAYPOINT_TOOL_SOURCES_ALLOW_PRIVATE),
        headers=headers, timeout=httpx2.Timeout(timeout, read=timeout), follow_redirects=False, trust_env=False,
        event_hooks={"response": [seen]},
    )


def _words(exc: BaseException, statuses: list[int], secrets: dict[str, str] | None = None) -> str:
    """What went wrong, for people: never a header value, even one an HTTP library quoted back."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    for value in (secrets or {}).values():
        if value:
            text = text.replace(value, "•••")
    if isinstance(exc, TooLarge):
        return str(exc)
    failed = next((s for s in reversed(statuses) if s >= 400), None)
    if failed in (401, 403):
        return f"the server refused the credentials ({failed}): check the source's headers"
    if failed in (404, 405):
        return f"there is no MCP endpoint at this address ({failed})"
    if failed is not None and failed >= 500:
        return f"the server failed ({failed})"
    if isinstance(exc, TimeoutError):
        return "the server did not answer in time"
    if "does not resolve" in text or "private" in text.lower() or "refused" in text.lower():
        return text
    return f"the server did not answer as an MCP server ({type(exc).__name__}: {text[:200]})"


def _max_bytes() -> int:
    """The largest answer a server may send: a bigger one is refused rather than held in memory."""
    return settings.WAYPOINT_TOOL_SOURCES_MAX_RESULT_BYTES


def _run(work, timeout: float):
    async def bounded():
        return await asyncio.wait_for(work(), timeout)

    return asyncio.run(bounded())


def _client(url: str, http: httpx2.AsyncClient):
    """
    The `mcp` package's client over `http`. Imported here, not with the module: the package takes
    about half a second to import, which every process (each server, each `manage.py`) would pay
    at start-up for an assistant that may never call a tool source.
    """
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    return Client(streamable_http_client(url, http_client=http, max_sse_event_size=_max_bytes()), cache=None)


def list_tools(url: str, headers: dict[str, str], *, timeout: float | None = None) -> Listing:
    """
    Connect and list the server's tools (every page).

    :raises SourceError: not reachable, refused, not an MCP server, or too slow
    """

    statuses: list[int] = []
    timeout = timeout or settings.WAYPOINT_TOOL_SOURCES_LIST_TIMEOUT_SECONDS

    async def work() -> Listing:
        async with _http(headers, timeout, statuses) as http, _client(url, http) as client:
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += [{"name": t.name, "description": t.description or "", "input_schema": t.input_schema,
                           "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else {}}
                          for t in page.tools]
                cursor = page.next_cursor
                if not cursor or len(tools) > 1000:
                    break
            instructions = getattr(client.session, "instructions", None) or ""
            return Listing(instructions if isinstance(instructions, str) else "", tools)

    try:
        return _run(work, timeout)
    except Exception as exc:  # noqa: BLE001 - whatever a server does, the person is told in words
        raise SourceError(_words(exc, statuses, headers)) from None


def call_tool(url: str, headers: dict[str, str], name: str, arguments: dict[str, Any], *, key: str,
              timeout: float = 30.0) -> Outcome:
    """
    Call one tool with the call's key in `Idempotency-Key` and in `_meta`.

    :raises OutcomeUnknown: the call was sent and no answer came in time, or the connection dropped
    :raises SourceError: the server could not be reached (nothing was sent) or refused the call
    """
    sent = {"value": False}
    statuses: list[int] = []

    async def work() -> Outcome:
        async with _http({**headers, "Idempotency-Key": key}, timeout, statuses) as http, _client(url, http) as client:
            sent["value"] = True
            statuses.clear()  # from here, a status is the call's own
            result = await client.call_tool(name, arguments, meta={IDEMPOTENCY_META: key})
            if result.structured_content is not None:
                output: Any = result.structured_content
            else:
                texts = [getattr(part, "text", "") for part in result.content if getattr(part, "type", "") == "text"]
                output = _json_or_text("\n".join(texts))
            if len(text_of(output)) > _max_bytes():
                raise TooLarge(f"the answer was larger than {_max_bytes()} bytes")
            return Outcome(not result.is_error, output)

    try:
        return _run(work, timeout)
    except Exception as exc:  # noqa: BLE001 - a server's failure is the call's, in words
        if sent["value"] and not _refused(exc, statuses):
            raise OutcomeUnknown(_words(exc, statuses, headers)) from None
        raise SourceError(_words(exc, statuses, headers)) from None


def _refused(exc: BaseException, statuses: list[int]) -> bool:
    """An answer that says the call was not taken (a 4xx, a JSON-RPC error), as opposed to silence or a failure mid-way."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TooLarge):
        return False  # the server acted and answered, but what it answered was not read: the outcome is not known
    if any(400 <= s < 500 for s in statuses):
        return True
    code = getattr(getattr(exc, "error", None), "code", None)
    return code in (-32600, -32601, -32602)  # invalid request, unknown method or tool, invalid params


def _json_or_text(text: str) -> Any:
    """A text result that is one JSON object or array is read as it: servers often put their result there as JSON."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def text_of(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, sort_keys=True, ensure_ascii=False)
