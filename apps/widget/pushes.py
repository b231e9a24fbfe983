"""
What a conversation socket is sent: the part of the state that changed since the head it was sent
last, rendered once per (conversation, head) in this process and shared by every socket that asks.

A committed message never changes, so after its first (whole) state a socket gets the messages after
the head it was sent, the status line, the typing row, and the cards, the memory or the composer
only when what decides them changed (their `data-key`, the lifecycle). Each such push names the
head it follows (`data-after` in HTML); the page asks for the whole state again when that is not
the head it shows. A connect, a resync and a poll get the whole state. JSON sockets get the
messages resource with the messages after the head they were sent (merged by id, as the SDK does).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.template.loader import render_to_string

from apps.agent.state import conversation_state
from apps.widget.framing import Embed
from apps.widget.presenters import Bounded, page_state, viewer_context

# Daphne closes a socket (1011) on a message over 1 MiB; a push stays below, with room to spare.
MAX_PUSH_BYTES = 900_000


@dataclass(frozen=True)
class Shown:
    """What a socket's page shows after a push: the head, and what decides its cards, memory and composer."""

    seq: int
    cards: str = ""
    memory: str = ""
    completed: bool = False


@dataclass(frozen=True)
class Push:
    text: str
    shown: Shown


@dataclass(frozen=True)
class Viewer:
    """Whose socket: what the fragments show besides the log (the token in its forms, whose messages are "yours", the links)."""

    token: str
    persona: str
    permissions: frozenset[str]
    embed: Embed | None


# Heads move on: a push is asked for by the sockets of its conversation within moments, then never
# again, so a few hundred held is plenty; bounded by their size, as a whole state can be large.
_pushes = Bounded(max_size=32_000_000, size=lambda push: len(push.text))
_states = Bounded(max_size=64, size=lambda state: 1)  # page states, shared by the viewers of one head


def within_limit(render, state: dict[str, Any]) -> str:
    """
    Render a push no larger than MAX_PUSH_BYTES: the whole state, or its latest messages.

    A long conversation's full transcript can exceed what one socket message may carry; the push
    then holds the latest messages and says how many earlier ones it leaves out
    (`earlier_messages`), which the page shows as a link to the whole conversation.
    """
    text = render()
    messages = state["messages"]
    keep = len(messages)
    while len(text.encode()) > MAX_PUSH_BYTES and keep > 1:
        keep //= 2
        state["messages"], state["earlier_messages"] = messages[-keep:], len(messages) - keep
        if "transcript" in state:  # a page's: the receipts among the messages it leaves out go with them
            state["transcript"] = [b for b in state["transcript"] if b["seq"] >= state["messages"][0]["seq"]]
        text = render()
    return text


def html(conversation_id: str, *, viewer: Viewer, since: Shown | None, announced: int, load) -> Push | None:
    """
    The `format=html` push for one viewer: the whole state (`since` None) or what changed since `since`.

    `announced` is the head the writer announced (for a whole state, the head just read); with
    the viewer and `since` it names the push, so the sockets that ask for it share one rendering.
    It may show a later head than `announced`, never an earlier one. `load()` gives the
    conversation with its assistant, or None when there is none (then so is the push).
    """
    key = ("html", conversation_id, viewer, since, announced)
    return _pushes.once(key, partial(_html, conversation_id, viewer, since, announced, load))


def _html(conversation_id: str, viewer: Viewer, since: Shown | None, announced: int, load) -> Push | None:
    conversation = load()
    if conversation is None:
        return None
    after = since.seq if since else 0
    state = _states.once(("html", conversation_id, after, announced), lambda: page_state(
        conversation_state(conversation, after_seq=after, receipts=True), conversation.assistant.config))
    context = viewer_context(state, conversation=conversation, token=viewer.token, persona=viewer.persona,
                             embed=viewer.embed, permissions=viewer.permissions)
    now = Shown(state["seq"], state["cards_key"], context["memory_key"], state["conversation_status"] == "completed")
    if since is None:
        return Push(within_limit(partial(render_to_string, "widget/live.html", context), context["state"]), now)
    changed = {"cards": now.cards != since.cards, "memory": now.memory != since.memory,
               "composer": now.completed and not since.completed}
    text = render_to_string("widget/live.html", {**context, "after": since.seq, "changed": changed})
    if len(text.encode()) > MAX_PUSH_BYTES:
        return html(conversation_id, viewer=viewer, since=None, announced=announced, load=load)
    return Push(text, now)


def sent(conversation, *, viewer: Viewer, after: int, turn_id: str) -> str:
    """
    The reply to the sender's own post: the receipts before their message, the message, the typing row, the status line.

    Everything else (the reply, cards, another's messages) comes by push, rendered once for every
    socket. `after` is the head the sender's page showed, so only the newer messages are read.
    """
    state = conversation_state(conversation, after_seq=after, receipts=True)
    state["messages"] = [m for m in state["messages"] if m["turn_id"] == turn_id and m["role"] == "user"]
    # The answers the same commit recorded before that message (the cards it declined) come first,
    # where the log has them: a push would add them after it.
    sent_at = min((m["seq"] for m in state["messages"]), default=0)
    state["receipts"] = [r for r in state["receipts"] if r["seq"] < sent_at]
    context = viewer_context(page_state(state, conversation.assistant.config), conversation=conversation,
                             token=viewer.token, persona=viewer.persona, embed=viewer.embed,
                             permissions=viewer.permissions, from_post=True)
    return render_to_string("widget/live.html", {**context, "after": after, "changed": {}})


def state_json(conversation_id: str, *, after: int, announced: int, load) -> Push | None:
    """The JSON push: the messages resource with the messages after `after`, shared like `html`."""

    def make() -> Push | None:
        conversation = load()
        if conversation is None:
            return None
        state = conversation_state(conversation, after_seq=after)
        text = within_limit(lambda: json.dumps({"type": "state", "seq": state["seq"], "state": state}), state)
        return Push(text, Shown(state["seq"]))

    return _pushes.once(("json", conversation_id, after, announced), make)
