from __future__ import annotations

import json
import logging
import secrets
from functools import wraps
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST, require_safe

from apps.agent import actions, answers, handoff, knowledge
from apps.agent.config import tool_by_name
from apps.agent.models import Assistant
from apps.agent.state import conversation_state
from apps.agent.tools import DECLINED, edit_fields, edited_arguments, form_fields, form_output
from apps.conversations import queries, tokens
from apps.conversations.errors import (
    ActionResultConflict,
    ConversationIsCompleted,
    TurnConflict,
    WaypointError,
)
from apps.conversations.models import Conversation
from apps.toolsources.resolve import resolved
from apps.widget import pushes
from apps.widget.framing import Embed, allow_framing, embed_for
from apps.widget.identity import Identity, IdentityRejected, check_identity
from apps.widget.presenters import conflict_notice, page_context, team_status
from apps.workspaces import actions as workspace_actions

log = logging.getLogger(__name__)

LINK_INVALID = "This link is invalid or has expired — start a new conversation"
CHAT_UNAVAILABLE = "This chat is not available"
TEMPLATE = "widget/conversation.html"


class ChatUnavailable(Http404):
    """The widget's assistant does not exist (any more), or its address is not one."""


class LinkInvalid(Http404):
    """The link's token is forged, malformed, expired or revoked, belongs elsewhere, or its conversation is gone."""


def for_people(view):
    """Answer a conversation or widget link that does not work with the page that says so (404), whatever DEBUG says."""

    @wraps(view)
    def answering(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except LinkInvalid:
            if request.htmx:  # a post from a page whose link stopped working: say so where it shows notices
                return render(request, f"{TEMPLATE}#notices", {"oob": True, "notice": LINK_INVALID}, status=404)
            return render(request, "widget/link_invalid.html", {"problem": LINK_INVALID}, status=404)
        except ChatUnavailable:
            return render(request, "widget/link_invalid.html", {"problem": CHAT_UNAVAILABLE, "chat": True}, status=404)

    return answering


@csrf_exempt  # it changes nothing: a form posted to a broken link is told so, not refused for its missing cookie
@for_people
def broken_link(request: HttpRequest, rest: str) -> HttpResponse:
    """A conversation address that is not one (cut short, mistyped, a path it does not have)."""
    raise LinkInvalid("not a conversation address")


@csrf_exempt
@for_people
def broken_widget_link(request: HttpRequest, rest: str) -> HttpResponse:
    """A widget address that is not one: the embed snippet names an assistant by its id."""
    raise ChatUnavailable("not a widget address")


def home(request: HttpRequest) -> HttpResponse:
    assistants = Assistant.objects.order_by("-is_demo", "created_at")[:20]
    return render(request, "widget/home.html", {"assistants": assistants, "demo_shop": _demo_shop(assistants)})


def _demo_shop(assistants) -> str:
    """The demo shop's address: a site the demo assistant may be embedded on, localhost first (README's)."""
    demo = next((a for a in assistants if a.is_demo), None)
    origins = [o for o in (demo.config.get("allowed_origins") or []) if isinstance(o, str)] if demo else []
    return next((o for o in origins if "//localhost:" in o), origins[0] if origins else "")


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


# --- the widget: pages inside the embed script's iframe -----------------------------------------


def _assistant(assistant_id: str) -> Assistant:
    assistant = Assistant.objects.filter(id=assistant_id).first()
    if assistant is None:
        raise ChatUnavailable("no such assistant")
    return assistant


def _identity(raw: str) -> tuple[Identity | None, str]:
    """The visitor's verified identity, or None and why the token was ignored."""
    if not raw:
        return None, ""
    try:
        return check_identity(raw, now=timezone.now()), ""
    except IdentityRejected as exc:
        log.warning("widget identity token ignored: %s", exc)
        return None, str(exc)


def _widget_embed(request: HttpRequest, assistant: Assistant) -> Embed:
    return embed_for(request, assistant_id=str(assistant.id), config=assistant.config, always=True)


def _start_page(request: HttpRequest, assistant: Assistant, embed: Embed, *, status: int = 200, **extra) -> HttpResponse:
    raw = request.POST.get("identity") if request.method == "POST" else request.GET.get("identity")
    identity, rejected = _identity(raw or "")
    resumable = identity is not None and Conversation.objects.filter(
        assistant=assistant, owner=identity.persona, status="active"
    ).exists()
    context = {"assistant": assistant, "embed": embed, "identity_token": raw if identity else "",
               "who": identity.persona if identity else "", "resumable": resumable, "identity_rejected": rejected,
               "fresh": request.GET.get("new") == "1", **extra}
    return allow_framing(render(request, "widget/start.html", context, status=status), config=assistant.config)


@for_people
@require_safe
def widget(request: HttpRequest, assistant_id: str) -> HttpResponse:
    assistant = _assistant(assistant_id)
    return _start_page(request, assistant, _widget_embed(request, assistant))


def _conversation_url(conversation_id: str, token: str, embed: Embed | None, *, started: bool = False) -> str:
    url = reverse("widget:conversation", args=[conversation_id])
    query = {"token": token}
    if started:
        # The page tells the host page of the messages it opens with: the first reply can be
        # committed before this page loads, and then no push brings it.
        query["started"] = "1"
    return f"{url}?{urlencode(query)}{'&' + embed.query if embed else ''}"


# The widget's posts carry no cookie-based authority (the iframe is third-party, cookies are not
# sent): the visitor is anonymous or proven by the signed identity token in the body, so there is
# nothing for a cross-site form to borrow.
@for_people
@csrf_exempt
@require_POST
def widget_start(request: HttpRequest, assistant_id: str) -> HttpResponse:
    assistant = _assistant(assistant_id)
    embed = _widget_embed(request, assistant)
    identity, _ = _identity(request.POST.get("identity", ""))
    persona = identity.persona if identity else f"guest:{secrets.token_hex(6)}"
    try:
        started = actions.start_conversation(
            assistant_id=str(assistant.id), message=request.POST.get("message", ""), persona=persona,
            edge="widget", now=timezone.now(),
        )
    except WaypointError as exc:
        return _start_page(request, assistant, embed, status=exc.status, send_error=exc.message)
    return redirect(_conversation_url(started["conversation_id"], started["token"], embed, started=True))


@for_people
@csrf_exempt
@require_POST
def widget_resume(request: HttpRequest, assistant_id: str) -> HttpResponse:
    assistant = _assistant(assistant_id)
    embed = _widget_embed(request, assistant)
    identity, _ = _identity(request.POST.get("identity", ""))
    conversation = None
    if identity is not None:
        conversation = (
            Conversation.objects.filter(assistant=assistant, owner=identity.persona, status="active")
            .order_by("-created_at").first()
        )
    if conversation is None:
        return _start_page(request, assistant, embed)
    token = tokens.issue(conversation_id=str(conversation.id), persona=identity.persona, edge="widget")
    return redirect(_conversation_url(str(conversation.id), token, embed))


# --- the conversation page (link and widget) ----------------------------------------------------


def _grant(request: HttpRequest, conversation_id: str, permission: str = "view") -> tokens.Grant:
    raw = request.POST.get("token") or request.GET.get("token") or ""
    grant = tokens.resolve(raw) if raw else None
    # Another conversation's token, like a forged one, learns nothing: not found either way.
    if grant is None or grant.conversation_id != str(conversation_id) or not grant.allows(permission):
        raise LinkInvalid("no such conversation")
    return grant


def _conversation(conversation_id: str) -> Conversation:
    conversation = queries.conversation_for(conversation_id)
    if conversation is None:
        raise LinkInvalid("no such conversation")
    return conversation


def _context(request: HttpRequest, conversation: Conversation, grant: tokens.Grant, **extra) -> dict:
    token = request.POST.get("token") or request.GET.get("token") or ""
    return page_context(conversation=conversation, token=token, persona=grant.persona, permissions=grant.permissions,
                        embed=_embed(request, conversation), **extra)


def _page(request: HttpRequest, context: dict, *, status: int = 200) -> HttpResponse:
    response = render(request, TEMPLATE, context, status=status)
    if context["embed"] is not None:
        allow_framing(response, config=context["assistant"].config)
    return response


@for_people
@require_safe
def conversation_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id)
    return _page(request, _context(request, _conversation(conversation_id), grant))


@for_people
@require_safe
def live(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id)
    # The page is a rendering of the log: an unchanged head is answered from one read of the head,
    # before the conversation is loaded or anything built.
    if sent := request.headers.get("If-None-Match"):
        head = queries.conversation_head(conversation_id)
        if head is None:
            raise LinkInvalid("no such conversation")
        if sent == f'"{head}"':
            return HttpResponse(status=304, headers={"ETag": f'"{head}"'})
    conversation = _conversation(conversation_id)
    context = _context(request, conversation, grant)
    response = render(request, "widget/live.html", context)
    response.headers["ETag"] = f'"{context["state"]["seq"]}"'
    response.headers["Cache-Control"] = "no-cache"
    return response


def _embed(request: HttpRequest, conversation: Conversation) -> Embed | None:
    return embed_for(request, assistant_id=str(conversation.assistant_id), config=conversation.assistant.config)


def _after_post(request: HttpRequest, conversation_id: str, grant: tokens.Grant, status: int = 200, **extra) -> HttpResponse:
    conversation = _conversation(conversation_id)
    if not request.htmx and status == 200 and not extra:
        token = request.POST.get("token") or request.GET.get("token") or ""
        return redirect(_conversation_url(str(conversation_id), token, _embed(request, conversation)))
    context = _context(request, conversation, grant, from_post=True, **extra)
    if request.htmx:
        return render(request, "widget/live.html", context, status=status)
    return _page(request, context, status=status)


def _send_problem(exc: WaypointError, conversation_id: str) -> str:
    if isinstance(exc, TurnConflict):
        state = conversation_state(_conversation(conversation_id))
        if state["run_status"] == "waiting":
            return "Please answer the request above first."
        if state["run_status"] == "running":
            return "The assistant is still replying. Send your message again in a moment."
        return "New messages arrived while you were typing. Read them, then send again."
    return exc.message


# Token-authenticated posts: the credential is the token in the form body, never a cookie, so a
# cross-site form cannot forge them and CSRF cookies (which third-party iframes lose) are not needed.
@for_people
@csrf_exempt
@require_POST
def send(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "write")
    expected = request.POST.get("expected_seq")
    expected_seq = int(expected) if expected and expected.isdigit() else None
    try:
        started = actions.start_turn(
            conversation_id=conversation_id, message=request.POST.get("message", ""), persona=grant.persona,
            edge=grant.edge, now=timezone.now(), expected_seq=expected_seq, decline_pending=True,
        )
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, send_error=_send_problem(exc, conversation_id))
    if request.htmx and expected_seq is not None:
        # The sender needs its own message and the typing row at once; the reply and everything
        # else come by push, rendered once for every socket.
        conversation = _conversation(conversation_id)
        viewer = pushes.Viewer(token=request.POST.get("token", ""), persona=grant.persona,
                               permissions=frozenset(grant.permissions), embed=_embed(request, conversation))
        return HttpResponse(pushes.sent(conversation, viewer=viewer, after=expected_seq, turn_id=started["turn_id"]))
    return _after_post(request, conversation_id, grant)


@for_people
@csrf_exempt
@require_POST
def answer(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "view")
    conversation = _conversation(conversation_id)
    state = conversation_state(conversation)
    call_id = request.POST.get("call_id", "")
    call = next((c for c in state["pending_client_actions"] + state["answered_client_actions"] if c["call_id"] == call_id), None)
    if call is None:
        return _after_post(request, conversation_id, grant, status=404, notice="That request is no longer open.")
    if call["kind"] == "approval":
        try:
            arguments = json.loads(request.POST.get("reviewed_arguments", ""))
        except ValueError:
            arguments = None
        decision = request.POST.get("decision")
        output = {"decision": decision, "reviewed": {"tool": request.POST.get("reviewed_tool"), "arguments": arguments}}
        if decision == "approve_with_changes":
            # Edit's fields, posted as they are: only what differs from the assistant's call is an edit.
            tool = tool_by_name(resolved(conversation.assistant.config), call["tool"]) or {}
            edits = edited_arguments(call, edit_fields(tool, call), request.POST)
            output = {**output, "decision": "approve", **({"edited_arguments": edits} if edits else {})}
    elif request.POST.get("declined"):
        output = dict(DECLINED)  # Skip on a question, Cancel on a client-action form
    elif call["kind"] == "question":
        output = {"answer": request.POST.get("answer", "")}
    else:
        tool = tool_by_name(resolved(conversation.assistant.config), call["tool"]) or {}
        output = form_output(form_fields(tool.get("parameters", {})), request.POST)
    try:
        acceptance = answers.accept_results(
            conversation_id=conversation_id, run_id=request.POST.get("run_id", ""), results=[{"call_id": call_id, "output": output}],
            persona=grant.persona, permissions=grant.permissions, now=timezone.now(),
        )
    except ActionResultConflict as exc:
        accepted = exc.details.get("accepted", {})
        conflict = conflict_notice(call, conversation.assistant.config, output=accepted.get("output"),
                                   answered_by=accepted.get("answered_by") or "", viewer=grant.persona)
        return _after_post(request, conversation_id, grant, status=409, conflict=conflict)
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, notice=exc.message)
    if call_id in acceptance.already:
        # The same answer was accepted before this click (another window, a stale card): nothing
        # changed and nothing failed, and the person is told it is already done.
        answered = next(c for c in conversation_state(conversation)["answered_client_actions"] if c["call_id"] == call_id)
        conflict = conflict_notice(call, conversation.assistant.config, output=answered["output"],
                                   answered_by=answered["answered_by"] or "", viewer=grant.persona, same=True)
        return _after_post(request, conversation_id, grant, conflict=conflict)
    return _after_post(request, conversation_id, grant)


AWAITING_TEAM = ("Our team is still checking whether the interrupted step went through. You can carry on once "
                 "they have; this page updates by itself.")


@for_people
@csrf_exempt
@require_POST
def continue_view(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "write")
    state = conversation_state(_conversation(conversation_id))
    if state["quarantined"] and state["run_status"] == "interrupted":
        # The customer's pages leave an unknown outcome to staff first (docs/durability.md); a page
        # that still shows Continue from before gets the reason. The API keeps PRODUCT.md's Continue.
        return _after_post(request, conversation_id, grant, status=409, notice=AWAITING_TEAM)
    try:
        actions.continue_conversation(conversation_id=conversation_id, persona=grant.persona, edge=grant.edge, now=timezone.now())
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, notice=exc.message)
    return _after_post(request, conversation_id, grant)


NO_PERSON = "No one can be reached here right now; the assistant keeps helping."


def _handoff_change(request: HttpRequest, conversation_id: str, change) -> HttpResponse:
    """A customer's change to who answers them, `change(grant)`: the page's fragments after it, or its refusal in words."""
    grant = _grant(request, conversation_id, "write")
    try:
        change(grant)
    except WaypointError as exc:
        notice = NO_PERSON if exc.code == "handoff_unavailable" else exc.message
        return _after_post(request, conversation_id, grant, status=exc.status, notice=notice)
    return _after_post(request, conversation_id, grant)


@for_people
@csrf_exempt
@require_POST
def request_handoff(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Talk to a person: the customer asks for one (PRODUCT.md "Human handoff")."""
    return _handoff_change(request, conversation_id, lambda grant: handoff.request_handoff(
        conversation_id=conversation_id, source="customer", requested_by=grant.persona, now=timezone.now()))


@for_people
@csrf_exempt
@require_POST
def handoff_details(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """While waiting for a person: why, or an email address for the reply (docs/handoff.md "Email follow-up")."""
    return _handoff_change(request, conversation_id, lambda grant: handoff.leave_details(
        conversation_id=conversation_id, persona=grant.persona, reason=request.POST.get("reason"),
        email=request.POST.get("email"), now=timezone.now()))


@for_people
@csrf_exempt
@require_POST
def cancel_handoff(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Back to the assistant: the customer stops waiting for a person."""
    return _handoff_change(request, conversation_id, lambda grant: handoff.cancel_handoff(
        conversation_id=conversation_id, persona=grant.persona, now=timezone.now()))


@for_people
@require_GET
def team(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """
    What the page says of the team (is someone there, when they are back, the place in line): the
    page asks on load, after a change of control, and every 30 s while waiting (2 minutes
    otherwise), since presence is not in the log.
    """
    grant = _grant(request, conversation_id)
    conversation = _conversation(conversation_id)
    return render(request, "widget/conversation.html#team", {
        "team": team_status(conversation, timezone.now()), "conversation_id": grant.conversation_id,
        "token": request.GET.get("token", "")})


@for_people
@require_GET
def passage(request: HttpRequest, conversation_id: str, passage_id: str) -> HttpResponse:
    """
    A cited passage's text, on request (a reply's Sources): as the conversation's search returned
    it, from its record. The page loads it into the source's details; without script it is a page.
    """
    grant = _grant(request, conversation_id)
    found = knowledge.passage_seen(grant.conversation_id, passage_id)
    if found is None:
        raise LinkInvalid("no such passage in this conversation")
    if request.htmx:
        return render(request, "widget/conversation.html#passage", {"passage": found})
    # A page of its own (no script), in the widget's frame too, with the way back to the conversation.
    conversation = _conversation(conversation_id)
    embed = _embed(request, conversation)
    token = request.GET.get("token", "")
    response = render(request, "widget/passage.html", {
        "passage": found, "back": _conversation_url(grant.conversation_id, token, embed)})
    if embed is not None:
        allow_framing(response, config=conversation.assistant.config)
    return response


@for_people
@csrf_exempt
@require_POST
def clear_memory(request: HttpRequest, conversation_id: str) -> HttpResponse:
    grant = _grant(request, conversation_id, "write")
    # One fact (its Clear button) or, without a fact id, everything ("Clear all").
    fact_id = request.POST.get("fact_id", "")
    try:
        if _conversation(conversation_id).status == "completed":
            raise ConversationIsCompleted()
        workspace_actions.clear_memory(conversation_id=conversation_id, persona=grant.persona, now=timezone.now(),
                                       fact_ids=[fact_id] if fact_id else None)
    except WaypointError as exc:
        return _after_post(request, conversation_id, grant, status=exc.status, notice=exc.message)
    return _after_post(request, conversation_id, grant)
