from __future__ import annotations

import json
import secrets

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from apps.agent.models import Assistant
from apps.conversations import actions, queries, tokens
from apps.conversations.errors import ActionResultConflict, WaypointError
from apps.widget.presenters import form_fields, form_output, page_state

TEMPLATE = "widget/conversation.html"


def home(request: HttpRequest) -> HttpResponse:
    assistants = Assistant.objects.order_by("-is_demo", "created_at")[:20]
    return render(request, "widget/home.html", {"assistants": assistants})


@require_POST
def start(request: HttpRequest) -> HttpResponse:
    persona = f"guest:{secrets.token_hex(6)}"
    try:
        started = actions.start_conversation(
            assistant_id=request.POST.get("assistant", ""), message=request.POST.get("message", ""),
            persona=persona, edge="link", now=timezone.now(),
        )
    except WaypointError as exc:
        assistants = Assistant.objects.order_by("-is_demo", "created_at")[:20]
        return render(request, "widget/home.html", {"assistants": assistants, "error": exc.message}, status=exc.status)
    url = reverse("widget:conversation", args=[started["conversation_id"]])
    return redirect(f"{url}?token={started['token']}")


def _grant(request: HttpRequest, conversation_id: str, permission: str = "view") -> tokens.Grant:
    raw = request.POST.get("token") or request.GET.get("token") or ""
    grant = tokens.resolve(raw) if raw else None
    # Another conversation's token, like a forged one, learns nothing: not found either way.
    if grant is None or grant.conversation_id != str(conversation_id) or not grant.allows(permission):
        raise Http404("no such conversation")
    return grant


def _context(request: HttpRequest, conversation_id: str, grant: tokens.Grant, **extra) -> dict:
    conversation = queries.conversation_for(conversation_id)
    if conversation is None:
        raise Http404("no such conversation")
    state = page_state(queries.conversation_state(conversation), conversation.assistant.config)
    token = request.POST.get("token") or request.GET.get("token")
    return {"state": state, "assistant": conversation.assistant, "token": token, "grant": grant,
            "embedded": request.GET.get("embed") == "1", **extra}


@require_GET
def conversation_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id)
    return render(request, TEMPLATE, _context(request, conversation_id, grant))


@require_GET
def live(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id)
    context = _context(request, conversation_id, grant)
    etag = f'"{context["state"]["seq"]}"'
    if request.headers.get("If-None-Match") == etag:
        return HttpResponse(status=304, headers={"ETag": etag})
    return render(request, "widget/live.html", context, headers={"ETag": etag})


def _after_post(request: HttpRequest, conversation_id: str, grant: tokens.Grant, status: int = 200, **extra) -> HttpResponse:
    if request.htmx:
        return render(request, "widget/live.html", _context(request, conversation_id, grant, include_composer=True, **extra))
    if status == 200 and not extra:
        url = reverse("widget:conversation", args=[conversation_id])
        return redirect(f"{url}?token={request.POST.get('token', '')}")
    return render(request, TEMPLATE, _context(request, conversation_id, grant, **extra), status=status)


# Token-authenticated posts: the credential is the token in the form body, never a cookie, so a
# cross-site form cannot forge them and CSRF cookies (which third-party iframes lose) are not needed.
@csrf_exempt
@require_POST
def send(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "write")
    expected = request.POST.get("expected_seq")
    try:
        actions.start_turn(
            conversation_id=conversation_id, message=request.POST.get("message", ""), persona=grant.persona,
            edge=grant.edge, now=timezone.now(), expected_seq=int(expected) if expected and expected.isdigit() else None,
        )
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, send_error=exc.message)
    return _after_post(request, conversation_id, grant)


@csrf_exempt
@require_POST
def answer(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "view")
    conversation = queries.conversation_for(conversation_id)
    state = queries.conversation_state(conversation)
    call_id = request.POST.get("call_id", "")
    call = next((c for c in state["pending_client_actions"] + state["answered_client_actions"] if c["call_id"] == call_id), None)
    if call is None:
        return _after_post(request, conversation_id, grant, status=404, notice="That request is no longer open.")
    if call["kind"] == "approval":
        try:
            arguments = json.loads(request.POST.get("reviewed_arguments", ""))
        except ValueError:
            arguments = None
        output = {"decision": request.POST.get("decision"), "reviewed": {"tool": request.POST.get("reviewed_tool"), "arguments": arguments}}
    elif call["kind"] == "question":
        output = {"answer": request.POST.get("answer", "")}
    else:
        tool = next((t for t in conversation.assistant.config.get("tools", []) if t["name"] == call["tool"]), {})
        output = form_output(form_fields(tool.get("parameters", {})), request.POST)
    try:
        actions.accept_results(
            conversation_id=conversation_id, run_id=request.POST.get("run_id", ""), results=[{"call_id": call_id, "output": output}],
            persona=grant.persona, permissions=grant.permissions, now=timezone.now(),
        )
    except ActionResultConflict as exc:
        accepted = exc.details.get("accepted", {})
        conflict = {"answered_by": accepted.get("answered_by"), "output_text": _describe(accepted.get("output"))}
        return _after_post(request, conversation_id, grant, status=409, conflict=conflict)
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, notice=exc.message)
    return _after_post(request, conversation_id, grant)


def _describe(output) -> str:
    if isinstance(output, dict) and "decision" in output:
        return "approved" if output["decision"] == "approve" else "denied"
    if isinstance(output, dict) and set(output) == {"answer"}:
        return output["answer"]
    return json.dumps(output, sort_keys=True)


@csrf_exempt
@require_POST
def continue_view(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "write")
    try:
        actions.continue_conversation(conversation_id=conversation_id, persona=grant.persona, edge=grant.edge, now=timezone.now())
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, notice=exc.message)
    return _after_post(request, conversation_id, grant)
