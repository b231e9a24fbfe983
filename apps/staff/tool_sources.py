"""
The staff panel's **Tool sources** page (PRODUCT.md "Tool sources: MCP"): add a team's MCP server,
its catalog with each tool's class, annotations and state, **Refresh** and **Confirm**, which
assistants use each tool, and the last calls with their outcome and duration. Header values are
asked for and never shown.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from apps.actions.models import ActionLog
from apps.agent.models import Assistant
from apps.conversations.errors import WaypointError
from apps.staff.views import staff_only
from apps.toolsources import actions
from apps.toolsources.catalog import MEANING

PAGE = "staff/tool_sources.html"


def _used_by() -> dict[tuple[str, str], list[str]]:
    """Which assistants use each (source, tool), by name."""
    used: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, config in Assistant.objects.values_list("name", "config"):
        for tool in (config or {}).get("tools", []):
            if tool.get("kind") == "mcp":
                used[(str(tool.get("source")), str(tool.get("tool")))].append(name)
    return used


def _last_calls(limit: int = 20) -> list[dict[str, Any]]:
    rows = ActionLog.objects.filter(action="mcp").order_by("-started_at")[:limit]
    return [{"tool": r.tool, "status": r.status, "started_at": r.started_at, "conversation_id": r.conversation_id,
             "duration": f"{(r.finished_at - r.started_at).total_seconds():.2f} s" if r.finished_at else "—",
             "error": r.error[:200]} for r in rows]


def _context(**extra: Any) -> dict[str, Any]:
    used = _used_by()
    sources = []
    for source in actions.live_sources():
        tools = [{**t, "used_by": used.get((str(source.id), t["name"]), []),
                  "annotations_text": json.dumps(t.get("annotations") or {}, sort_keys=True),
                  "meaning": MEANING[t.get("class", "destructive")].format(source=source.name)} for t in source.tools]
        sources.append({"source": source, "tools": tools})
    return {"sources": sources, "calls": _last_calls(), **extra}


@staff_only
@require_GET
def page(request: HttpRequest) -> HttpResponse:
    return render(request, PAGE, _context())


@staff_only
@require_POST
def add(request: HttpRequest) -> HttpResponse:
    """Add a source: its name, URL and headers (one `Name: value` a line)."""
    headers, problem = _headers(request.POST.get("headers", ""))
    if not problem:
        try:
            made = actions.create_source(name=request.POST.get("name", ""), url=request.POST.get("url", "").strip(), headers=headers)
        except WaypointError as exc:
            problem = exc.message
    if problem:
        form = {"name": request.POST.get("name", ""), "url": request.POST.get("url", "")}  # never the headers back
        return render(request, PAGE, _context(add_error=problem, form=form), status=422)
    messages.success(request, f"Added {made.name}: {len(made.tools)} tools listed.")
    return redirect("staff:tool_sources")


def _headers(text: str) -> tuple[dict[str, str], str]:
    headers = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            return {}, "Headers: one “Name: value” a line, like “Authorization: Bearer …”."
        headers[name.strip()] = value.strip()
    return headers, ""


@staff_only
@require_POST
def refresh(request: HttpRequest, source_id) -> HttpResponse:
    try:
        source = actions.refresh_source(str(source_id))
        changed = [t["name"] for t in source.tools if t.get("changed")]
        messages.success(request, f"Listed {source.name} again." + (f" Changed, waiting for Confirm: {', '.join(changed)}." if changed else ""))
    except WaypointError as exc:
        messages.error(request, exc.message)
    return redirect("staff:tool_sources")


@staff_only
@require_POST
def confirm(request: HttpRequest, source_id, name: str) -> HttpResponse:
    try:
        actions.confirm_tool(str(source_id), name, fingerprint=request.POST.get("fingerprint") or None)
        messages.success(request, f"Confirmed {name}: it is enabled as it now is.")
    except WaypointError as exc:
        messages.error(request, exc.message)
    return redirect("staff:tool_sources")
