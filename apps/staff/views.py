from __future__ import annotations

import json
import time
from functools import partial, wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import login as auth_login
from django.contrib.auth import logout as auth_logout
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.agent import handoff
from apps.conversations.errors import BadInput, WaypointError
from apps.ledger import replay
from apps.ops import limits
from apps.people import presence
from apps.staff import actions, approvals, listing
from apps.staff.models import SavedReply
from apps.staff.queries import admin, queues
from apps.staff.queries.inspector import head_seq, inspect_conversation
from apps.workspaces import actions as workspace_actions

INSPECTOR = "staff/conversation.html"


def staff_only(view):
    """Sessions of active staff users only: anyone else is sent to the login, a logged-in non-staff user gets 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        user = request.user
        if not user.is_authenticated:
            return redirect_to_login(request.get_full_path(), reverse("staff:login"))
        if not (user.is_active and user.is_staff):
            raise PermissionDenied("staff only")
        return view(request, *args, **kwargs)

    return never_cache(wrapper)


def _next_url(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return reverse("staff:conversations")


@sensitive_post_parameters("password")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated and request.user.is_staff:
        return redirect(_next_url(request))
    if request.method == "POST" and not _login_allowed(request.POST.get("username", "")):
        return render(request, "staff/locked_out.html", {"reason": "username"}, status=429)
    # The admin's form: authenticates through django-axes and refuses anyone who is not staff.
    form = AdminAuthenticationForm(request, data=request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        auth_login(request, form.get_user())
        return redirect(_next_url(request))
    return render(request, "staff/login.html", {"form": form, "next": _next_url(request)},
                  status=200 if request.method == "GET" else 401)


def _login_allowed(username: str) -> bool:
    """
    The softer per-username limit beside django-axes' lockout per (username, address).

    Attempts on one username from many addresses are counted together, so a spread-out guessing
    run slows down without one address's failures locking the owner out everywhere.
    """
    window = int(settings.AXES_COOLOFF_TIME * 3600)
    verdict = limits.hit(bucket=f"staff-login:{username.strip().lower()[:150]}", limit=settings.WAYPOINT_STAFF_LOGIN_PER_USERNAME,
                         window=window, now=time.time())
    return verdict.allowed


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    auth_logout(request)
    return redirect("staff:login")


@staff_only
@require_GET
def conversations(request: HttpRequest) -> HttpResponse:
    """The conversation list, in views by who answers (Mine, Waiting, Unassigned, All); `?counts=1` is only the views' counts, which the page polls."""
    me = actions.staff_identity(request.user)
    filters, problems = listing.check_filters(request.GET, me=me)
    shown = {"views": listing.view_counts(filters), "counts_url": f"{request.path}?{urlencode({**filters.params(), 'counts': '1'})}"}
    if request.GET.get("counts"):
        return render(request, "staff/conversations.html#views", shown)
    page = listing.conversation_page(filters=filters, after=request.GET.get("after"), before=request.GET.get("before"),
                                     problems=problems)
    return render(request, "staff/conversations.html", {"page": page, "filters": filters, **shown,
                                                        "lifecycles": listing.LIFECYCLES, "run_statuses": listing.RUN_STATUSES})


def _inspection(conversation_id, *, live: bool = False, since: int | None = None) -> dict:
    data = inspect_conversation(str(conversation_id), live=live, since=since)
    if data is None:
        raise Http404("no such conversation")
    data["approvals"] = approvals.pending_approvals(conversation_id=str(conversation_id))
    return data


@staff_only
@require_GET
def inspector(request: HttpRequest, conversation_id) -> HttpResponse:
    replies = [{"shortcut": r.shortcut, "text": r.text} for r in SavedReply.objects.all()[:500]]
    return render(request, INSPECTOR, {"c": _inspection(conversation_id), "saved_replies": replies})


@staff_only
@require_GET
def inspector_live(request: HttpRequest, conversation_id) -> HttpResponse:
    head = head_seq(str(conversation_id))
    if head is None:
        raise Http404("no such conversation")
    etag = f'"{head}"'
    if request.headers.get("If-None-Match") == etag:
        return HttpResponse(status=304, headers={"ETag": etag})
    response = render(request, "staff/live.html", {"c": _inspection(conversation_id, live=True, since=_shown(request.GET))})
    response["ETag"] = etag
    return response


def _check(request: HttpRequest, conversation_id, check: dict) -> HttpResponse:
    if request.htmx:
        return render(request, f"{INSPECTOR}#check-result", {"check": check})
    return render(request, INSPECTOR, {"c": _inspection(conversation_id), "check": check})


@staff_only
@require_POST
def verify(request: HttpRequest, conversation_id) -> HttpResponse:
    _inspection(conversation_id)
    return _check(request, conversation_id, {"name": "verify", "verify": replay.verify(str(conversation_id))})


@staff_only
@require_POST
def replay_view(request: HttpRequest, conversation_id) -> HttpResponse:
    _inspection(conversation_id)
    return _check(request, conversation_id, {"name": "replay", "replay": replay.replay(str(conversation_id))})


@staff_only
@require_POST
def what_if(request: HttpRequest, conversation_id) -> HttpResponse:
    _inspection(conversation_id)
    seq, patch = request.POST.get("seq", ""), request.POST.get("patch", "")
    try:
        result = replay.what_if(str(conversation_id), seq=int(seq), patch=patch)
        check = {"name": "what_if", "what_if": result, "seq": seq, "patch": patch,
                 "before_text": json.dumps(getattr(result, "before", None), indent=2, sort_keys=True),
                 "after_text": json.dumps(getattr(result, "after", None), indent=2, sort_keys=True)}
    except ValueError as exc:  # a bad seq or patch: said in the form, like the CLI says it
        check = {"name": "what_if", "error": str(exc), "seq": seq, "patch": patch}
    return _check(request, conversation_id, check)


@staff_only
@require_POST
def clear_memory(request: HttpRequest, conversation_id) -> HttpResponse:
    _inspection(conversation_id)
    fact_id = request.POST.get("fact_id", "")
    actor = actions.staff_identity(request.user)
    try:
        cleared = workspace_actions.clear_memory(conversation_id=str(conversation_id), persona=actor, now=timezone.now(),
                                                 fact_ids=[fact_id] if fact_id else None)["cleared"]
    except WaypointError as exc:
        if request.htmx:
            return render(request, "staff/live.html", {"c": _inspection(conversation_id)}, status=exc.status)
        messages.error(request, exc.message)
        return redirect("staff:conversation", conversation_id)
    if request.htmx:
        return render(request, "staff/live.html", {"c": _inspection(conversation_id)})
    messages.success(request, f"Cleared {len(cleared)} remembered fact{'s' if len(cleared) != 1 else ''} — recorded as {actor}.")
    return redirect("staff:conversation", conversation_id)


def _after_control(request: HttpRequest, conversation_id, *, error: WaypointError | None = None, refused: str = "",
                   done: str = "", sent: bool = False) -> HttpResponse:
    """
    The inspector after Take over, Send reply or Hand back: its live fragments for htmx, else the page again.

    A refusal (someone else took it first) is said in words, what did not happen then why: as the
    answer's #control-notice (swapped although it is a 409, see staff.js), or as the page's message.
    """
    notice = {"error": f"{refused} {error.message}".strip(), "code": error.code} if error else {}
    if request.htmx:
        # What changed after the head the page shows (its form's `shown`), verified from the last entry
        # checked, as a push is: neither the whole log again nor the whole inspector.
        c = _inspection(conversation_id, live=True, since=_shown(request.POST))
        return render(request, "staff/live.html", {"c": c, "notice": notice, "sent": sent, "answered": True},
                      status=error.status if error else 200)
    if error:
        messages.error(request, notice["error"])
    elif done:
        messages.success(request, done)
    return redirect("staff:conversation", conversation_id)


def _shown(data) -> int | None:
    """The log head the inspector page shows, as its forms and polls send it (`shown`); None when it did not say."""
    raw = data.get("shown", "")
    return int(raw) if raw.isdigit() else None


def _change_control(request: HttpRequest, conversation_id, change, *, refused: str, **after) -> HttpResponse:
    """Make one change of control as the staff member of the request (`change(staff=…)`), then show the inspector."""
    if head_seq(str(conversation_id)) is None:
        raise Http404("no such conversation")
    try:
        change(conversation_id=str(conversation_id), staff=actions.staff_identity(request.user), now=timezone.now())
    except WaypointError as exc:
        return _after_control(request, conversation_id, error=exc, refused=refused)
    return _after_control(request, conversation_id, **after)


def _holder(request: HttpRequest) -> str | None:
    """The colleague the page showed holding the conversation (`from`), which a rescue names; None when it named none."""
    return request.POST.get("from") or None


@staff_only
@require_POST
def take_over(request: HttpRequest, conversation_id) -> HttpResponse:
    """
    Take over: this staff member answers the customer (PRODUCT.md "Human handoff"); one taker wins.

    From a colleague too (**Take over from Sam**, `from`): only while that colleague still holds it.
    """
    return _change_control(request, conversation_id,
                           partial(handoff.take_control, name=actions.staff_name(request.user), from_=_holder(request)),
                           refused="You did not take over:", done="You have this conversation: the assistant stays silent until you hand it back.")


@staff_only
@require_POST
def send_reply(request: HttpRequest, conversation_id) -> HttpResponse:
    origin = f"{request.scheme}://{request.get_host()}"  # the email follow-up's link to the conversation
    return _change_control(request, conversation_id, partial(handoff.staff_message, text=request.POST.get("text", ""), origin=origin),
                           refused="Your reply was not sent:", sent=True)


@staff_only
@require_POST
def hand_back(request: HttpRequest, conversation_id) -> HttpResponse:
    """Hand back to the assistant: by the holder, or by an admin for a colleague who holds it (`from`)."""
    from_ = _holder(request) if actions.may_return_any(request.user) else None
    # The holder is named as the customer knew them; an admin handing back for them, by their own name.
    name = actions.staff_name(request.user) if from_ else None
    return _change_control(request, conversation_id,
                           partial(handoff.return_control, name=name, note=request.POST.get("note") or None, from_=from_),
                           refused="Not handed back:", done="Handed back to the assistant.")


@staff_only
@require_POST
def add_note(request: HttpRequest, conversation_id) -> HttpResponse:
    """An internal note by any staff member: in the log and this panel, never to the customer or the model."""
    return _change_control(request, conversation_id,
                           partial(handoff.staff_note, name=actions.staff_name(request.user), text=request.POST.get("text", "")),
                           refused="Your note was not added:", done="Note added.")


@staff_only
@require_POST
def hand_to(request: HttpRequest, conversation_id) -> HttpResponse:
    """Hand the conversation to a named colleague (`to`), who then holds it: by its holder, or while nobody holds it."""
    named = {person["id"]: person["name"] for person in actions.colleagues()}
    to = request.POST.get("to", "")
    if to not in named:
        error = BadInput("Choose a colleague from the list: that staff member is not one (or is no longer active).")
        return _after_control(request, conversation_id, error=error, refused="Not handed on:")
    return _change_control(request, conversation_id,
                           partial(handoff.assign_control, to=to, to_name=named[to], from_=_holder(request)),
                           refused="Not handed on:", done=f"Handed to {named[to]}.")


@staff_only
@require_GET
def waiting(request: HttpRequest) -> HttpResponse:
    """
    The conversations waiting for a person, oldest request first; live by polling its fragment.

    `?count=1` is only the navigation's counts (waiting for a person, for your reply, for a
    decision): every staff page polls it, so the tab's title and the notifications tell of them
    wherever the staff member is.
    """
    if request.GET.get("count"):
        return render(request, "staff/base.html#counts", {"oob": True})
    template = "staff/waiting_live.html" if request.GET.get("live") else "staff/waiting.html"
    return render(request, template, {"items": queues.waiting_for_a_person()})


@staff_only
@require_GET
def quarantine(request: HttpRequest) -> HttpResponse:
    return render(request, "staff/quarantine.html", {"items": queues.quarantine_queue(), "resolutions": actions.RESOLUTIONS})


@staff_only
@require_POST
def resolve(request: HttpRequest, run_id: str) -> HttpResponse:
    try:
        actions.resolve_quarantine(
            run_id=run_id, resolution=request.POST.get("resolution", ""), note=request.POST.get("note", ""),
            result=request.POST.get("result", ""), actor=actions.staff_identity(request.user), now=timezone.now(),
            customer_visible=request.POST.get("customer_visible") == "1",
        )
    except WaypointError as exc:
        items = queues.quarantine_queue()
        return render(request, "staff/quarantine.html",
                      {"items": items, "resolutions": actions.RESOLUTIONS, "error_run": run_id, "error": exc.message,
                       "note": request.POST.get("note", ""), "result": request.POST.get("result", ""),
                       "customer_visible": request.POST.get("customer_visible") == "1"}, status=exc.status)
    label = actions.RESOLUTIONS[request.POST["resolution"]].lower()
    messages.success(request, f"Run {run_id}: {label} — recorded as {actions.staff_identity(request.user)}.")
    return redirect(_next_url(request) if request.POST.get("next") else "staff:quarantine")


@staff_only
@require_GET
def assistants(request: HttpRequest) -> HttpResponse:
    return render(request, "staff/assistants.html", {"assistants": admin.assistants(),
                                                     "audit": admin.recent_audit(prefix="assistant:")})


NEW_CONFIG = """{
  "name": "New assistant",
  "allow_conversation_completion": false,
  "step_budget": 8,
  "model": {
    "provider": "scripted",
    "rules": [],
    "fallback": [{"say": "You said: {message}"}]
  },
  "tools": []
}"""


def _origin(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


def _assistant_page(request: HttpRequest, assistant, *, config_text: str, origins_text: str, problems=(), status=200):
    context = {"assistant": assistant, "config_text": config_text, "origins_text": origins_text, "problems": problems,
               "origin": _origin(request)}
    return render(request, "staff/assistant_form.html", context, status=status)


@staff_only
@require_http_methods(["GET", "POST"])
def assistant_new(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _assistant_page(request, None, config_text=NEW_CONFIG, origins_text="")
    config_text, origins_text = request.POST.get("config", ""), request.POST.get("allowed_origins", "")
    try:
        config = actions.check_config_text(text=config_text, allowed_origins=origins_text)
        assistant = actions.create_assistant(config=config, actor=actions.staff_identity(request.user), now=timezone.now())
    except WaypointError as exc:
        return _assistant_page(request, None, config_text=config_text, origins_text=origins_text,
                               problems=exc.details.get("problems") or [exc.message], status=exc.status)
    messages.success(request, f"Assistant “{assistant.name}” created.")
    return redirect("staff:assistant", assistant.id)


@staff_only
@require_http_methods(["GET", "POST"])
def assistant_edit(request: HttpRequest, assistant_id) -> HttpResponse:
    assistant = admin.assistant_for(assistant_id)
    if assistant is None:
        raise Http404("no such assistant")
    if request.method == "GET":
        config_text, origins_text = admin.editable_config(assistant)
        return _assistant_page(request, assistant, config_text=config_text, origins_text=origins_text)
    config_text, origins_text = request.POST.get("config", ""), request.POST.get("allowed_origins", "")
    try:
        config = actions.check_config_text(text=config_text, allowed_origins=origins_text)
        assistant = actions.update_assistant(assistant_id=str(assistant.id), config=config,
                                             actor=actions.staff_identity(request.user), now=timezone.now())
    except WaypointError as exc:
        return _assistant_page(request, assistant, config_text=config_text, origins_text=origins_text,
                               problems=exc.details.get("problems") or [exc.message], status=exc.status)
    messages.success(request, f"Assistant “{assistant.name}” saved.")
    return redirect("staff:assistant", assistant.id)


@staff_only
@require_GET
def assistant_preview(request: HttpRequest, assistant_id) -> HttpResponse:
    assistant = admin.assistant_for(assistant_id)
    if assistant is None:
        raise Http404("no such assistant")
    return render(request, "staff/assistant_preview.html", {"assistant": assistant, "origin": _origin(request)})


@staff_only
@require_http_methods(["GET", "POST"])
def api_keys(request: HttpRequest) -> HttpResponse:
    created, error, status = None, "", 200
    if request.method == "POST":
        try:
            key, raw = actions.create_api_key(name=request.POST.get("name", ""), actor=actions.staff_identity(request.user),
                                              now=timezone.now())
            created, status = {"key": key, "secret": raw}, 201
        except WaypointError as exc:
            error, status = exc.message, exc.status
    return render(request, "staff/api_keys.html", {"keys": admin.api_keys(), "created": created, "error": error,
                                                   "audit": admin.recent_audit(prefix="api_key:")}, status=status)


@staff_only
@require_POST
def api_key_revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    try:
        key = actions.revoke_api_key(key_id=key_id, actor=actions.staff_identity(request.user), now=timezone.now())
    except WaypointError as exc:
        raise Http404(exc.message) from exc
    messages.success(request, f"API key “{key.name}” ({key.prefix}…) is revoked.")
    return redirect("staff:api_keys")


@staff_only
@require_GET
def personas(request: HttpRequest) -> HttpResponse:
    search = request.GET.get("q", "").strip()[:300]
    rows = admin.personas(search=search)
    for row in rows:
        row["conversations_link"] = reverse("staff:conversations") + "?" + urlencode({"persona": row["persona"]})
    return render(request, "staff/personas.html", {"personas": rows, "q": search})


@staff_only
@require_http_methods(["GET", "POST"])
def profile(request: HttpRequest) -> HttpResponse:
    """Your profile: the display name customers see (never the login name), and your presence."""
    me = actions.staff_identity(request.user)
    if request.method == "POST":
        name = request.POST.get("display_name", "").strip()
        try:
            actions.check_display_name(name)
        except BadInput as exc:
            return render(request, "staff/profile.html", {"problem": exc.message, "display_name": name,
                                                          "shown_name": actions.staff_name(request.user)}, status=422)
        presence.set_display_name(me, name, now=timezone.now())
        messages.success(request, f"Customers now see you as {name}." if name else "Your display name is cleared.")
        return redirect("staff:profile")
    found = presence.profile(me)
    return render(request, "staff/profile.html", {"display_name": found.display_name if found else "",
                                                  "shown_name": actions.staff_name(request.user)})


@staff_only
@require_POST
def away(request: HttpRequest) -> HttpResponse:
    """The Away toggle: away until you say you are back (`away=0`), whatever your pages do."""
    presence.set_away(actions.staff_identity(request.user), request.POST.get("away") == "1", now=timezone.now())
    target = request.headers.get("Referer", "")
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect("staff:conversations")


@staff_only
@require_http_methods(["GET", "POST"])
def saved_replies(request: HttpRequest) -> HttpResponse:
    """The team's saved replies: add one (a shortcut and its text), or delete one; the composer inserts them with `/`."""
    if request.method == "POST" and request.POST.get("delete"):
        SavedReply.objects.filter(pk=request.POST["delete"]).delete()
        messages.success(request, "Saved reply deleted.")
        return redirect("staff:saved_replies")
    form = {}
    if request.method == "POST":
        form = {"shortcut": request.POST.get("shortcut", "").strip().lstrip("/").lower(), "text": request.POST.get("text", "").strip()}
        try:
            actions.save_reply(**form, staff=actions.staff_identity(request.user), now=timezone.now())
        except BadInput as exc:
            return render(request, "staff/saved_replies.html", {"replies": SavedReply.objects.all(), "form": form,
                                                               "problem": exc.message}, status=422)
        messages.success(request, f"Saved /{form['shortcut']}.")
        return redirect("staff:saved_replies")
    return render(request, "staff/saved_replies.html", {"replies": SavedReply.objects.all(), "form": form})
