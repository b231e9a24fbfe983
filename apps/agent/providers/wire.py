"""Reading what OpenAI-compatible servers send, tolerantly, and what Waypoint sends them of its tools."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import rfc8785

from apps.agent.providers.types import ToolCall

# --- reading what OpenAI-compatible servers send ------------------------------------------------
# Servers differ in the details of the Chat Completions format (llama.cpp's llama-server,
# llama-cpp-python, vLLM, Ollama, OpenAI itself): what they send is read tolerantly, and nothing
# a vendor sends becomes one of Waypoint's keys or reaches a bounded column unchecked.

MAX_TOOL_NAME = 64  # OpenAI's limit for a function name; every configured tool name fits in it
MAX_ARGUMENT_CHARS = 100_000
MAX_VENDOR_ID = 512  # a longer id is not kept: the call is sent back under Waypoint's own id


def _text(value: Any) -> str:
    """A wire value as text: servers send strings, but some send null, an object or content parts."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: [{"type": "text", "text": …}, …]
        return "".join(_text(part.get("text")) if isinstance(part, dict) else _text(getattr(part, "text", "")) for part in value)
    if isinstance(value, dict):
        return json.dumps(value)
    return str(value)


def _no_nul(value: Any) -> Any:
    """Drop NUL characters, which PostgreSQL refuses in text and JSON, from a value received from a model."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nul(v) for v in value]
    return value


def _arguments(raw: str | None) -> dict[str, Any]:
    if raw is not None and len(raw) > MAX_ARGUMENT_CHARS:
        # Kept out of the log: only its size is recorded, and the call fails with that.
        return {"_oversized_arguments": len(raw)}
    try:
        arguments = json.loads(raw or "{}", parse_constant=_no_constant)
        if not isinstance(arguments, dict):
            raise ValueError
        arguments = _no_nul(arguments)
        rfc8785.dumps(arguments)  # what the log can sign: no NaN, no integer beyond ±(2^53 − 1)
    except ValueError:
        # A malformed call becomes a call whose result tells the model so; it can retry.
        return {"_malformed_arguments": _no_nul(raw)}
    return arguments


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _joined_name(pieces: list[str]) -> str:
    """A streamed tool name: sent once (OpenAI), whole in every delta (llama-cpp-python), or in parts."""
    pieces = [p for p in pieces if p]
    if len(pieces) > 1 and all(b.startswith(a) for a, b in zip(pieces, pieces[1:], strict=False)):
        return pieces[-1]
    return "".join(pieces)


def _joined_arguments(pieces: list[str]) -> str:
    """
    Streamed tool arguments: in parts (OpenAI, llama-cpp-python), or whole, repeated or at the end.

    The parts joined are taken when they make a JSON object; otherwise the last part, when it alone
    is one (a server that sent the whole text again) or each part repeats the one before (the text so
    far); otherwise what was sent, to be reported as malformed.
    """
    pieces = [p for p in pieces if p]
    whole = "".join(pieces)
    if len(pieces) < 2 or _is_object(whole):
        return whole
    if _is_object(pieces[-1]) or all(b.startswith(a) for a, b in zip(pieces, pieces[1:], strict=False)):
        return pieces[-1]
    return whole


@dataclass
class _WireCall:
    """A tool call as one vendor sent it, before Waypoint gives it its own id."""

    vendor_id: str = ""
    names: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)


def _tool_calls(wire: list[_WireCall], round_number: int) -> list[ToolCall]:
    """
    Give a round's calls Waypoint's ids (`call_<round>_<n>`) and keep each vendor id for the wire.

    A vendor id is kept only when it is there, not too long and not repeated in the round. A name
    longer than any tool's is cut (and so names no tool: the call fails as an unknown tool).
    """
    seen: set[str] = set()
    out = []
    for n, call in enumerate(wire, 1):
        vendor_id = _no_nul(call.vendor_id)
        if not vendor_id or len(vendor_id) > MAX_VENDOR_ID or vendor_id in seen:
            vendor_id = ""
        seen.add(vendor_id)
        name = _no_nul(_joined_name(call.names)).strip()
        if len(name) > MAX_TOOL_NAME:
            name = name[:MAX_TOOL_NAME] + "…"
        out.append(ToolCall(f"call_{round_number}_{n}", name, _arguments(_joined_arguments(call.arguments)), vendor_id))
    return out


def _usage(usage: Any) -> dict[str, int]:
    """Token counts when the server reports them (some never do, some only in a stream's last chunk)."""
    out = {}
    for name in ("prompt_tokens", "completion_tokens"):
        n = getattr(usage, name, None)
        if isinstance(n, int) and not isinstance(n, bool):
            out[name] = n
    return out


def _message_calls(message: Any) -> list[_WireCall]:
    """The tool calls of a whole (non-streamed) answer: `tool_calls`, else the legacy `function_call`."""
    wire = []
    for tc in getattr(message, "tool_calls", None) or []:
        function = getattr(tc, "function", None)
        wire.append(_WireCall(_text(getattr(tc, "id", None)), [_text(getattr(function, "name", None))],
                              [_text(getattr(function, "arguments", None))]))
    legacy = getattr(message, "function_call", None)
    if not wire and legacy is not None:
        wire.append(_WireCall("", [_text(getattr(legacy, "name", None))], [_text(getattr(legacy, "arguments", None))]))
    return wire


class _StreamedCalls:
    """The tool calls of a streamed answer, assembled from deltas whatever the server's habits."""

    def __init__(self) -> None:
        self.calls: list[_WireCall] = []
        self.at: dict[int, int] = {}  # the vendor's index -> the position of its current call
        self.legacy = _WireCall()

    def add(self, delta: Any) -> None:
        for position, tc in enumerate(getattr(delta, "tool_calls", None) or []):
            vendor_id = _text(getattr(tc, "id", None))
            index = getattr(tc, "index", None)
            if not isinstance(index, int) or isinstance(index, bool):
                index = -1 - position  # no index: the position in this delta (ids below tell calls apart)
            current = self.calls[self.at[index]] if index in self.at else None
            # Another id at the same index is another call (servers that send each call whole at index 0).
            if current is None or (vendor_id and current.vendor_id and vendor_id != current.vendor_id):
                current = _WireCall(vendor_id)
                self.at[index] = len(self.calls)
                self.calls.append(current)
            current.vendor_id = current.vendor_id or vendor_id
            function = getattr(tc, "function", None)
            if function is not None:
                current.names.append(_text(getattr(function, "name", None)))
                current.arguments.append(_text(getattr(function, "arguments", None)))
        legacy = getattr(delta, "function_call", None)
        if legacy is not None:
            self.legacy.names.append(_text(getattr(legacy, "name", None)))
            self.legacy.arguments.append(_text(getattr(legacy, "arguments", None)))

    def wire(self) -> list[_WireCall]:
        # Servers that send both (llama-cpp-python) mean the same call twice: tool_calls wins.
        if self.calls:
            return self.calls
        return [self.legacy] if any(self.legacy.names) else []


def _openai_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                },
            }
        )
    return out
