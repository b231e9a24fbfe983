"""Turning a conversation's state into what its page shows: sanitised markdown and card fields."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

import nh3
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from apps.agent import tools
from apps.agent.config import handoff_settings
from apps.agent.handoff import control_words, queue_place, team
from apps.agent.state import conversation_state
from apps.agent.tools import DECLINED, edit_fields, form_fields
from apps.ledger.identities import persona_name
from apps.runs.machine import CONTINUABLE, OPEN
from apps.toolsources.resolve import resolved

# `breaks`: a line break typed with Shift+Enter stays a line break in the message.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": True, "breaks": True}).enable(["table", "linkify"])
_TAGS = {"p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "a", "blockquote", "h1", "h2", "h3", "h4",
         "table", "thead", "tbody", "tr", "th", "td", "hr", "del"}


def render_markdown(text: str) -> str:
    """Render model or user text as markdown with raw HTML off, then sanitise what remains."""
    html = _markdown.render(text)
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes={"a": {"href", "title"}},
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        # Inside the widget iframe a link must not replace the chat; a new tab is right on the page too.
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )


class Bounded:
    """
    A process's least-recently-used cache, bounded by the total size of what it holds; thread-safe.

    `once` makes a missing value once for everyone who asks at the same time: the sockets of one
    conversation all ask for the same push at the same moment.
    """

    def __init__(self, *, max_size: int, size=len):
        self.max_size, self.size = max_size, size
        self.held: OrderedDict = OrderedDict()
        self.total = 0
        self.made = 0  # how many values were made rather than found
        self.guard = threading.Lock()
        self.making: dict = {}  # key -> the Event its maker sets when done

    def get(self, key):
        with self.guard:
            if key in self.held:
                self.held.move_to_end(key)
                return self.held[key]
        return None

    def put(self, key, value) -> None:
        size = self.size(value)
        if size > self.max_size:
            return
        with self.guard:
            if key in self.held:
                self.total -= self.size(self.held.pop(key))
            self.held[key] = value
            self.total += size
            while self.total > self.max_size:
                _, dropped = self.held.popitem(last=False)
                self.total -= self.size(dropped)

    def once(self, key, make):
        """The value for `key`, made by `make()` unless it is held or being made; None is never held."""
        while True:
            with self.guard:
                if key in self.held:
                    self.held.move_to_end(key)
                    return self.held[key]
                making = self.making.get(key)
                if making is None:
                    making = self.making[key] = threading.Event()
                    break
            # Someone else makes it: wait, then look again (if they failed, the next one makes it).
            making.wait(timeout=30)
        try:
            value = make()
            self.made += 1
            if value is not None:
                self.put(key, value)
            return value
        finally:
            with self.guard:
                self.making.pop(key, None)
            making.set()


# A committed message never changes, so its sanitised markdown is rendered once per process.
# Keyed by message id; the text is kept beside it and compared, so a reused id can never show
# another text's rendering.
_rendered = Bounded(max_size=8_000_000, size=lambda pair: len(pair[0]) + len(pair[1]))


def message_html(message_id: str, text: str) -> str:
    """`render_markdown(text)` of a committed message, from the cache when it was rendered before."""
    held = _rendered.get(message_id)
    if held is not None and held[0] == text:
        return held[1]
    html = render_markdown(text)
    _rendered.put(message_id, (text, html))
    return html


def describe_output(output: Any, kind: str = "") -> str:
    """A person's words for an accepted answer: Approved/Denied, Skipped/Cancelled, the answer, the field values, or the JSON."""
    if output == DECLINED:
        return "Skipped" if kind == "question" else "Cancelled"
    if isinstance(output, dict) and "decision" in output:
        if output["decision"] == "expired":
            return "Expired"
        if output["decision"] == "approve" and output.get("edited_arguments"):
            reviewed = (output.get("reviewed") or {}).get("arguments") or {}
            changed = tools.changes_text(reviewed, output["edited_arguments"])
            return f"Approved with changes: {changed}" if changed else "Approved"
        return "Approved" if output["decision"] == "approve" else "Denied"
    if isinstance(output, dict) and len(output) == 1:
        (value,) = output.values()
        return value if isinstance(value, str) else json.dumps(value)
    if isinstance(output, dict) and output and all(isinstance(v, str | int | float) for v in output.values()):
        return ", ".join(f"{key}: {value}" for key, value in sorted(output.items()))
    return json.dumps(output, sort_keys=True)


def progress_line(state: dict[str, Any], tools_by_name: dict[str, dict[str, Any]]) -> str:
    """
    The status line of an active run, as people talk: what is under way or whose turn it is.

    Read from the run's state (its pending calls, the tools its latest model round called), never
    from raw names: a tool's summary or display name says what it does.
    """
    pending = state["pending_client_actions"]
    if state["run_status"] == "waiting" and pending:
        call = pending[0]
        if call["kind"] == "approval":
            return "Waiting for approval from the team…" if call.get("approver") == "staff" else "Waiting for your approval…"
        if tools_by_name.get(call["tool"], {}).get("answered_by") == "application":
            return "Waiting for the application…"
        return "Waiting for your answer…"
    last = state["progress"][-1]["text"] if state["progress"] else ""
    if last.startswith("Using "):
        name = last.removeprefix("Using ").split(", ")[0]
        tool = tools_by_name.get(name, {})
        # The arguments a person just approved are the ones the tool now runs with.
        approved = next(({**c["arguments"], **((c["output"] or {}).get("edited_arguments") or {})}
                         for c in reversed(state["answered_client_actions"]) if c["tool"] == name), None)
        return tools.progress_phrase(tool, name, approved)
    if last == "Continuing":
        return "Picking up where we left off…"
    return "Working on it…"


ACTIVE = OPEN


def clock_time(iso: str | None) -> str:
    """HH:MM UTC of an ISO time, as a card says when something happened."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return ""
    return moment.strftime("%H:%M UTC")


def interruption(state: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> dict[str, str]:
    """
    What the Continue card says of an interrupted turn: why it stopped and what Continue will do.

    A side-effecting action whose outcome is unknown is being checked; once staff confirmed it
    went through, Continue goes on without doing it again.
    """
    unknown = next((s for s in state["tool_summary"] if s["state"] == "ambiguous"), None)
    confirmed = next((s for s in state["tool_summary"] if s["state"] == "resolved_done"), None)
    if state["run_status"] == "failed":
        return {"why": "Something went wrong while the reply was being prepared.",
                "next": "Nothing you sent was lost: Continue tries again from the last step that finished."}
    if state["run_status"] == "expired":
        return {"why": "Nobody answered the last request in time.", "next": "Continue asks again."}
    if confirmed is not None:
        name = tools.display_name(by_name.get(confirmed["tool"], {}), confirmed["tool"])
        return {"why": f"It stopped while “{name}” was under way. Our team has since confirmed that it went through.",
                "next": "Continue picks up from there without doing it again."}
    if unknown is not None and state.get("quarantined"):
        # Staff settle an unknown outcome before the customer is offered to go on (docs/durability.md,
        # "Who may try it again"): Continue would ask to do it again before anyone has looked.
        name = tools.display_name(by_name.get(unknown["tool"], {}), unknown["tool"])
        return {"why": f"Something went wrong on our side while “{name}” was under way, so we don’t know yet "
                       "whether it went through.",
                "check": "We are checking whether it went through: our team is looking at what the system that "
                         "handles it received. Nothing is tried again until they have.",
                "next": "You don’t need to do anything. This page updates as soon as they have checked, and you "
                        "can carry on from there. You can still write to us here meanwhile."}
    return {"why": "It stopped before it finished.", "next": "Nothing you sent was lost: Continue picks up from here."}


def _source(citation: dict[str, Any]) -> dict[str, Any]:
    """A cited passage as the Sources list shows it: its number, title and, for a web address only, a link."""
    url = citation.get("url") or ""
    return {"n": citation.get("n"), "title": citation.get("title") or "Untitled", "passage_id": citation.get("passage_id") or "",
            "href": url if url.startswith(("https://", "http://")) else ""}


def page_state(state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """Add the display fields the templates need to a `conversation_state`."""
    config = resolved(config)  # a tool source's tools as their cards name them
    by_name = {t["name"]: t for t in config.get("tools", [])}
    for message in state["messages"]:
        message["html"] = mark_safe(message_html(message["id"], message["text"]))  # noqa: S308 - sanitised by nh3
        message["time_text"] = clock_time(message.get("created_at"))
        message["sources"] = [_source(c) for c in message.get("citations") or []]
    for call in state["pending_client_actions"]:
        tool = by_name.get(call["tool"], {})
        if call.get("reattempt_of"):
            call["reattempt_at"] = clock_time(call["reattempt_of"].get("attempted_at"))
        call["arguments_text"] = json.dumps(call["arguments"], indent=2, sort_keys=True)
        call["arguments_json"] = json.dumps(call["arguments"], sort_keys=True)
        call["answered_by_application"] = tool.get("answered_by") == "application"
        call["title"] = tools.card_title(call, tool)
        if call["kind"] == "approval":
            call["question"] = tools.approval_question(call, tool)
            call["expires_text"] = clock_time(call.get("expires_at"))
            # A tool source's tool: where it acts, and what its class means (PRODUCT.md "Tool sources: MCP").
            call["source_words"] = (tool.get("mcp") or {}).get("class_words", "")
            call["edit_fields"] = edit_fields(tool, call)
        call["display_name"] = tools.display_name(tool, call["tool"])
        call["fields"] = form_fields(tool.get("parameters", {}))
        # One field named like the card itself: the heading already says it, the label stays for screen readers.
        if len(call["fields"]) == 1 and call["fields"][0]["label"] == call["title"]:
            call["fields"][0]["label_hidden"] = True
    state.setdefault("receipts", [])
    for call in state["answered_client_actions"]:
        call["dom_id"] = f"call-{call['call_id']}"
    for call in state["receipts"]:
        # Call ids are a run's own: another turn may use the same one.
        call["block"], call["dom_id"] = "receipt", f"receipt-{call['run_id']}-{call['call_id']}"
    for call in [*state["answered_client_actions"], *state["receipts"]]:
        edits = (call["output"] or {}).get("edited_arguments") if isinstance(call["output"], dict) else None
        # Approved with changes: the receipt names the call that ran, and says what changed.
        shown = {**call, "arguments": {**call["arguments"], **edits}} if edits else call
        call["title"] = tools.card_title(shown, by_name.get(call["tool"], {}))
        call["declined"] = call["output"] == DECLINED or call["status"] == "declined"
        if call["status"] == "withdrawn":
            # The conversation went to a person while it waited (`turn_handed_off`).
            call["declined"], call["output_text"] = True, "Withdrawn: handed to a person"
        elif call["status"] == "expired" and (call["output"] or {}).get("decision") == "expired":
            # An approval nobody answered in time: the clock resolved it, the assistant went on.
            call["output_text"], call["expired_at"] = "Expired", clock_time(call.get("answered_at"))
        elif call["status"] in ("expired", "declined"):
            # Declined: the customer wrote instead of answering (`turn_superseded`).
            call["output_text"] = "Expired" if call["status"] == "expired" else "Declined: a message was sent instead"
        else:
            call["output_text"] = describe_output(call["output"], call["kind"])
        call["arguments_text"] = json.dumps(call["arguments"], indent=2, sort_keys=True)
    # An answered request is a receipt in the transcript; one that expired unanswered stays among the cards.
    state["expired_client_actions"] = [c for c in state["answered_client_actions"]
                                       if c["status"] == "expired" and not c.get("expired_at")]
    control = state["control"]
    # A run still finishing its step after a person took over is no longer the one answering.
    state["active"] = state["run_status"] in ACTIVE and state["conversation_status"] != "completed" and control["mode"] == "agent"
    # Send waits only for a running turn: a message sent while a card waits declines the card.
    state["busy"] = state["active"] and state["run_status"] == "running"
    state["can_continue"] = state["conversation_status"] != "completed" and state["run_status"] in CONTINUABLE
    if state["can_continue"]:
        state["interruption"] = interruption(state, by_name)
    # An unknown outcome nobody has settled yet: the card explains and offers no Continue.
    state["awaiting_team"] = state["can_continue"] and "check" in state.get("interruption", {})
    state["last_progress"] = progress_line(state, by_name) if state["active"] else ""
    handoff = handoff_settings(config)
    state["handoff_offered"] = handoff["enabled"] and control["mode"] == "agent" and state["conversation_status"] != "completed"
    state["queued_message"] = handoff["queued_message"] if control["mode"] == "queued" else ""
    if control["mode"] == "queued":
        state["control_text"] = "Waiting for a person…"
    elif control["mode"] == "human":
        state["control_text"] = f"You're chatting with {control['staff']['name']}"
    else:
        state["control_text"] = ""
    state["control_lines"] = [control_line(change, handoff) for change in state.get("control_changes", [])]
    # The offer of a person, or the wait for one, is swapped in only when it changed: a push must not
    # empty the address a waiting customer is typing.
    state["handoff_key"] = digest(state["handoff_offered"], control["mode"], control["reason"], state["conversation_status"])
    # The cards are keyed on what they show: a push replaces them when that changed (a staff
    # resolution changes only the interruption's words) and otherwise leaves them, and whatever the
    # visitor is typing into them, alone.
    state["cards_key"] = digest(
        state["run_id"], state["run_status"], state["conversation_status"], state["pending_client_actions"],
        [(c["call_id"], c["status"]) for c in state["expired_client_actions"]], state.get("interruption"),
    )
    return state


def team_status(conversation, now: datetime) -> dict[str, Any]:
    """
    What the page says of the team where a person is offered or waited for, from who is at the panel
    now and the office hours (`apps/agent/handoff.py` `team`), not from the log: `#team-status` asks for it on its
    own (`widget:team`), so the log's fragments, shared by every viewer of a head, never hold it.

    Empty where no person is offered nor waited for.
    """
    config = conversation.assistant.config
    handoff = handoff_settings(config)
    mode = conversation.control_mode
    if not handoff["enabled"] or conversation.status == "completed" or mode == "human":
        return {}
    status = {"mode": mode, **team(config, now)}
    if mode == "queued":
        status["queued_message"] = handoff["queued_message"]
        if status["promised"] and conversation.control_requested_at is not None:
            status["queue"] = queue_line(conversation.control_requested_at, now)
    return status


def queue_line(requested_at: datetime, now: datetime) -> str:
    """The waiting customer's place in the queue and the expected wait, in words ("You're 2nd in line · usually about 3 minutes")."""
    place = queue_place(requested_at, now)
    position = place["position"]
    line = "You're next in line" if position == 1 else f"You're {_ordinal(position)} in line"
    expected = place["expected_seconds"]
    if expected is not None:
        minutes = max(1, round(expected / 60))
        line += f" · usually about {minutes} minute{'s' if minutes != 1 else ''}" if minutes < 90 \
            else f" · usually about {round(minutes / 60)} hours"
    return line


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def masked_email(address: str) -> str:
    """An address a customer left, shown so they recognise it and others in a shared conversation cannot read it: j•••@example.com."""
    local, _, domain = address.partition("@")
    return f"{local[:1]}•••@{domain}" if domain else ""


def control_line(change: dict[str, Any], handoff: dict[str, Any]) -> dict[str, Any]:
    """A change of control as the transcript's system line ("Dana joined"), where the log has it."""
    text = control_words(change["kind"], name=change["staff"]["name"] if change["staff"] else "", text=change["text"],
                         unavailable_message=handoff["unavailable_message"])
    return {"block": "control", "seq": change["seq"], "kind": change["kind"], "dom_id": f"control-{change['seq']}",
            "text": text, "detail": ""}


def digest(*shown: Any) -> str:
    """A short digest of what a fragment shows, for its `data-key`."""
    return hashlib.sha256(json.dumps(shown, sort_keys=True, default=str).encode()).hexdigest()[:20]


def attributed(state: dict[str, Any], *, viewer: str) -> dict[str, Any]:
    """
    A copy of `state` that names, for `viewer`, the author of each user message they did not write
    (in a shared conversation) and who answered each card.

    A private conversation has one writer, so naming it would only repeat "you". A copy: one
    state read is shared by the pushes of every viewer of the conversation.
    """
    shared = state.get("visibility") == "shared"
    messages = []
    for message in state["messages"]:
        author = message["author"]["id"]
        if message["role"] == "staff":
            shown = message["author"]["name"]  # a person's reply is always under their name
        else:
            shown = persona_name(author) if shared and message["role"] == "user" and author != viewer else ""
        messages.append({**message, "shown_author": shown})
    answered, expired, receipts = ([{**call, "answered_by_name": answerer(call.get("answered_by") or "", viewer=viewer)}
                                    for call in state[key]]
                                   for key in ("answered_client_actions", "expired_client_actions", "receipts"))
    return {**state, "messages": messages, "answered_client_actions": answered, "expired_client_actions": expired,
            "receipts": receipts, "transcript": in_log_order(messages, receipts, state.get("control_lines", []))}


def in_log_order(messages: list[dict[str, Any]], receipts: list[dict[str, Any]],
                 lines: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The transcript's blocks: messages, receipts of answered requests and changes of control, by the `seq` the log gave them."""
    return sorted([*messages, *receipts, *lines], key=lambda block: block["seq"])


def conflict_notice(call: dict[str, Any], config: dict[str, Any], *, output: Any, answered_by: str, viewer: str,
                    same: bool = False) -> dict[str, Any]:
    """
    What the person whose answer did not count is told: the card in people's words, the answer that counts, and where it came from.

    `same`: the answer that counts is the one this person gave too (two windows of one link, or two
    people who agreed), so nothing failed: they are told it was already done, not that theirs lost.
    """
    tool = next((t for t in config.get("tools", []) if t.get("name") == call["tool"]), {})
    if not answered_by:
        where = ""
    elif answered_by == viewer:
        where = "in another window"  # the same link open twice: the other tab's answer came first
    else:
        where = f"by {persona_name(answered_by)}"
    words = describe_output(output, call["kind"])
    done = words.lower() if words in ("Approved", "Denied", "Skipped", "Cancelled") else "answered"
    return {"title": tools.card_title(call, tool), "where": where, "output_text": words, "same": same, "done": done,
            "decision": call["kind"] == "approval" or done != "answered"}


def answerer(persona: str, *, viewer: str) -> str:
    """Who answered a card, on its chip: "You" for the viewer, else the persona's name."""
    if not persona:
        return ""
    return "You" if persona == viewer else persona_name(persona)


def page_context(*, conversation, token: str, persona: str, embed, permissions=frozenset(), **extra: Any) -> dict[str, Any]:
    """Everything the conversation page and its live fragments render, for one viewer."""
    state = page_state(conversation_state(conversation, receipts=True), conversation.assistant.config)
    return viewer_context(state, conversation=conversation, token=token, persona=persona, embed=embed,
                          permissions=permissions, team=team_status(conversation, datetime.now(UTC)), **extra)


def viewer_context(state: dict[str, Any], *, conversation, token: str, persona: str, embed, permissions=frozenset(),
                   **extra: Any) -> dict[str, Any]:
    """`page_context` of a `page_state` that may be shared with other viewers (it is not changed)."""
    state = attributed(state, viewer=persona)
    # `who` ties a widget's stored conversation to an identified visitor (see identity.py).
    who = persona if persona.startswith("app:") else ""
    # Clearing memory is a write: a view-only token sees what is remembered but gets no Clear buttons.
    can_write = "write" in permissions and state["conversation_status"] != "completed"
    # While the facts (and what this viewer may do with them) are unchanged, a push leaves the
    # section alone, so a list the visitor opened stays open.
    memory_key = digest(can_write, [(f["fact_id"], f["text"]) for f in state["memory"]])
    contact = masked_email(conversation.control_email) if state["queued_message"] else ""
    if contact:
        state = {**state, "handoff_key": digest(state["handoff_key"], contact)}
    return {"state": state, "assistant": conversation.assistant, "token": token, "persona": persona, "who": who,
            "embed": embed, "can_write": can_write, "memory_key": memory_key, "contact": contact, **extra}
