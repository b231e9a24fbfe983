"""
The staff panel's **Knowledge** page (PRODUCT.md "Knowledge"): add the team's help content (paste
or upload), the sources with their status, version and passages, **Try a question** (the passages
an assistant's search finds, with their scores) and **Unanswered questions** (the customers'
questions whose searches found nothing in the last 30 days, grouped and counted: the content gaps).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from apps.actions.models import ActionLog
from apps.agent import knowledge as assistant_knowledge
from apps.agent.models import Assistant
from apps.conversations.errors import WaypointError
from apps.knowledge import actions, queries
from apps.staff.views import staff_only

PAGE = "staff/knowledge.html"
MAX_QUERY_CHARS = 1000  # as the API's search takes it
UNANSWERED_DAYS = 30
FORMATS = ("markdown", "html", "text")
_URL = re.compile(r"^https?://\S+$")


def _assistants() -> list[dict[str, Any]]:
    """The assistants that answer from the help content, with the sources and passage count their search uses."""
    out = []
    for assistant in Assistant.objects.order_by("name"):
        settings = assistant_knowledge.knowledge_settings(assistant.config or {})
        if settings["enabled"]:
            out.append({"id": str(assistant.id), "name": assistant.name, "settings": settings})
    return out


def _unanswered_turns(now, days: int) -> list[tuple[str, Any, Any]]:
    """
    (question, conversation, when) of each turn since `days` ago whose searches all found nothing:
    a turn whose second search found the answer was answered. The question is what its first
    search asked.
    """
    rows = ActionLog.objects.filter(tool=assistant_knowledge.TOOL, status="succeeded",
                                    started_at__gte=now - timedelta(days=days)).order_by("-started_at")
    turns: dict[str, dict[str, Any]] = {}
    for turn_id, query, note, conversation_id, at in rows.values_list(
            "turn_id", "arguments__query", "output__note", "conversation_id", "started_at")[:10000]:
        turn = turns.setdefault(turn_id, {"empty": True, "query": query, "conversation": conversation_id, "at": at})
        turn["empty"] = turn["empty"] and note == assistant_knowledge.NOTHING_FOUND["note"]
        if at <= turn["at"]:
            turn["query"], turn["at"] = query, at
    return [(t["query"], t["conversation"], t["at"]) for t in turns.values() if t["empty"]]


def unanswered(now, *, days: int = UNANSWERED_DAYS, limit: int = 50) -> list[dict[str, Any]]:
    """
    The customers' questions whose searches found nothing since `days` ago, grouped by their words
    (case, spacing and end punctuation aside), most asked first; each with its latest conversation.
    """
    groups: dict[str, dict[str, Any]] = {}
    for query, conversation_id, at in sorted(_unanswered_turns(now, days), key=lambda t: t[2], reverse=True):
        if not isinstance(query, str) or not query.strip():
            continue
        key = re.sub(r"\s+", " ", query).strip().rstrip("?!.").lower()
        group = groups.setdefault(key, {"question": query.strip(), "count": 0, "conversations": set(),
                                        "latest": conversation_id, "last_asked": at})
        group["count"] += 1
        group["conversations"].add(conversation_id)
    found = sorted(groups.values(), key=lambda g: (-g["count"], -g["last_asked"].timestamp()))[:limit]
    return [{**g, "conversations": len(g["conversations"])} for g in found]


def _tried(request: HttpRequest, assistants: list[dict[str, Any]]) -> dict[str, Any] | None:
    """**Try a question**: the search the chosen assistant's model would get, or why it was not run."""
    if "q" not in request.GET:
        return None
    question = request.GET.get("q", "").strip()
    chosen = next((a for a in assistants if a["id"] == request.GET.get("assistant")), None)
    if not question:
        return {"problem": "Write a question to try.", "question": ""}
    if len(question) > MAX_QUERY_CHARS:
        return {"problem": f"A question may be at most {MAX_QUERY_CHARS:,} characters; this one is {len(question):,}.",
                "question": question[:MAX_QUERY_CHARS]}
    settings = chosen["settings"] if chosen else assistant_knowledge.KNOWLEDGE_DEFAULTS
    sources = None if settings["sources"] == "all" else list(settings["sources"])
    passages = queries.search(question, sources=sources, limit=settings["max_passages"])
    return {"question": question, "assistant": chosen, "passages": passages}


@staff_only
@require_GET
def page(request: HttpRequest) -> HttpResponse:
    return render(request, PAGE, _context(request))


def _context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    assistants = _assistants()
    sources = [{**queries.source_out(s), "changed_at": s.updated_at} for s in queries.live_sources()]
    return {"sources": sources, "assistants": assistants,
            "tried": _tried(request, assistants), "unanswered": unanswered(timezone.now()), "days": UNANSWERED_DAYS,
            "formats": FORMATS, **extra}


@staff_only
@require_POST
def add(request: HttpRequest) -> HttpResponse:
    """Add a source: a file, or text pasted with its format; a title, and where people read it."""
    upload = request.FILES.get("file")
    url = request.POST.get("url", "").strip()
    form = {"title": request.POST.get("title", ""), "url": url, "format": request.POST.get("format", "markdown"),
            "text": request.POST.get("text", "")}
    problem = ""
    if url and (len(url) > actions.URL_CHARS or not _URL.match(url)):
        problem = "Address: a web address starting with https:// or http://, without spaces."
    elif upload is None and not form["text"].strip():
        problem = "Paste the text, or choose a file."
    elif upload is None and form["format"] not in FORMATS:
        problem = "Format: Markdown, HTML or plain text."
    elif upload is not None and upload.size > settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES:
        problem = f"A file may be at most {settings.WAYPOINT_KNOWLEDGE_MAX_FILE_BYTES:,} bytes; this one is {upload.size:,}."
    if not problem:
        try:
            if upload is not None:
                checked = actions.check_upload(title=form["title"], content=upload.read(), url=url or None,
                                               filename=upload.name or "", media_type=upload.content_type or "")
            else:
                checked = actions.check_upload(title=form["title"], content=form["text"].encode(), format=form["format"],
                                               url=url or None)
            written = actions.add_source(upload=checked, now=timezone.now())
        except WaypointError as exc:
            problem = exc.message
    if problem:
        return render(request, PAGE, _context(request, add_error=problem, form=form), status=422)
    source = written.source
    said = {"ready": f"{source.chunks} passages", "indexing": "being indexed", "failed": f"failed: {source.reason}"}
    messages.success(request, f"Added {source.title} (version {source.version}): {said.get(source.status, source.status)}.")
    return redirect("staff:knowledge")


@staff_only
@require_POST
def delete(request: HttpRequest, source_id) -> HttpResponse:
    try:
        source = queries.live_source(str(source_id))
        actions.delete_source(source_id=str(source_id), now=timezone.now())
        messages.success(request, f"Deleted {source.title if source else 'the source'}: its passages are no longer searched.")
    except WaypointError as exc:
        messages.error(request, exc.message)
    return redirect("staff:knowledge")
