"""
An assistant's `mcp` tools as the rest of the product runs them: each becomes a server tool whose
action is `mcp`, with its server's description and input schema, its class and whether it needs
approval, or why it cannot run now (a changed tool not yet confirmed, a missing tool, a deleted source).
"""

from __future__ import annotations

from typing import Any

from apps.toolsources.catalog import MEANING
from apps.toolsources.models import ToolSource

MAX_RESULT_CHARS = 8_000
TIMEOUT_SECONDS = 30


def tool_names() -> dict[str, dict[str, dict]]:
    """
    The tools each live source lists now (missing ones left out), by source id, each with its input
    schema: what an assistant may name, and the parameters its summary may use.
    """
    return {str(s.id): {t["name"]: t.get("input_schema") or {} for t in s.tools if not t.get("missing")}
            for s in ToolSource.objects.filter(deleted_at__isnull=True)}


def uses_sources(config: dict[str, Any]) -> bool:
    return any(t.get("kind") == "mcp" for t in config.get("tools", []))


def resolved(config: dict[str, Any]) -> dict[str, Any]:
    """`config` with its `mcp` tools resolved against their sources (one read); the same dict when it has none."""
    if not uses_sources(config):
        return config
    ids = {t["source"] for t in config["tools"] if t.get("kind") == "mcp"}
    sources = {str(s.id): s for s in ToolSource.objects.filter(id__in=list(ids))}
    return {**config, "tools": [_tool(t, sources.get(t.get("source"))) if t.get("kind") == "mcp" else t for t in config["tools"]]}


def _tool(tool: dict[str, Any], source: ToolSource | None) -> dict[str, Any]:
    listed = next((t for t in source.tools if t["name"] == tool.get("tool")), None) if source else None
    klass = tool.get("class") or (listed or {}).get("class") or "destructive"
    needs = tool["requires_approval"] if isinstance(tool.get("requires_approval"), bool) else klass == "destructive"
    out = {
        **tool, "kind": "server", "action": "mcp", "class": klass, "requires_approval": needs,
        "description": tool.get("description") or (listed or {}).get("description") or "",
        "parameters": (listed or {}).get("input_schema") or {"type": "object", "properties": {}},
        "mcp": {"source": tool.get("source"), "source_name": source.name if source else "", "tool": tool.get("tool"),
                "url": source.url if source else "",
                "class_words": MEANING[klass].format(source=source.name if source else "the team's system")},
        "max_result_chars": tool.get("max_result_chars", MAX_RESULT_CHARS),
        "timeout_seconds": tool.get("timeout_seconds", TIMEOUT_SECONDS),
    }
    if source is None or source.deleted_at is not None:
        out["unavailable"] = "its tool source was deleted"
    elif listed is None or listed.get("missing"):
        out["unavailable"] = f"{tool.get('tool')} is no longer on {source.name}"
    elif listed.get("changed"):
        out["unavailable"] = f"{tool.get('tool')} changed on {source.name} and is disabled until someone confirms it"
    elif not listed.get("enabled", True):
        out["unavailable"] = f"{tool.get('tool')} is disabled: {listed.get('problem') or 'not confirmed'}"
    return out
