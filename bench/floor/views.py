"""
The floor's pages: a start form, a conversation page and its send form.

The same user-visible work as Waypoint's customer page path, and nothing else: one transaction
stores the user's message and its reply, and the new `<li>`s are pushed to the conversation's
sockets once it commits.
"""

from __future__ import annotations

import secrets
from functools import partial

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from bench.floor.models import Conversation, Message


def group(conversation_id) -> str:
    return f"conversation.{conversation_id}"


def reply_to(text: str) -> str:
    return f"You said: {text}"


def _exchange(conversation: Conversation, text: str) -> list[Message]:
    return Message.objects.bulk_create([Message(conversation=conversation, role="user", text=text),
                                        Message(conversation=conversation, role="assistant", text=reply_to(text))])


def _push(conversation_id, messages: list[Message]) -> None:
    html = render_to_string("floor/added.html", {"messages": messages})
    async_to_sync(get_channel_layer().group_send)(group(conversation_id), {"type": "messages.added", "html": html})


def home(request):
    return render(request, "floor/home.html")


@require_POST
def start(request):
    with transaction.atomic():
        conversation = Conversation.objects.create(token=secrets.token_urlsafe(24))
        _exchange(conversation, request.POST.get("message", ""))
    return redirect(f"/c/{conversation.id}?token={conversation.token}")


def _conversation(conversation_id, token: str) -> Conversation:
    conversation = Conversation.objects.filter(id=conversation_id, token=token).first()
    if conversation is None:
        raise Http404("no such conversation")
    return conversation


def page(request, conversation_id):
    token = request.GET.get("token", "")
    conversation = _conversation(conversation_id, token)
    messages = Message.objects.filter(conversation=conversation).order_by("id")
    return render(request, "floor/page.html", {"conversation": conversation, "messages": messages, "token": token})


@csrf_exempt
@require_POST
def send(request, conversation_id):
    token = request.POST.get("token", "")
    conversation = _conversation(conversation_id, token)
    with transaction.atomic():
        added = _exchange(conversation, request.POST.get("message", ""))
        transaction.on_commit(partial(_push, conversation.id, added))
    if request.headers.get("HX-Request"):
        return HttpResponse(status=204)  # the push brings the new messages
    return redirect(f"/c/{conversation.id}?token={token}")
