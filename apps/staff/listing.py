"""
The staff panel's conversation list: its views by who answers, its filters and search, keyset pages.

Rows are read with one statement a page; counts stop at `COUNTED_UP_TO`, so nothing here reads the
whole table (docs/staff.md "Conversations").
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db import connection
from django.db.models import Exists, OuterRef, Q, Subquery
from django.db.models.expressions import RawSQL

from apps.actions.models import ActionLog
from apps.agent.models import Assistant
from apps.conversations.models import ChatMessage, Conversation, ConversationToken
from apps.knowledge.passages import terms
from apps.ledger.identities import persona_name
from apps.ledger.store import iso
from apps.runs.machine import RunStatus
from apps.runs.models import WorkflowLog
from apps.staff.queries.words import call_words, last_run

PAGE_SIZE = 50
LIFECYCLES = ("active", "completed")
RUN_STATUSES = tuple(RunStatus)
_METADATA_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_ID_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")
# The list's views by who answers (docs/staff.md): the signed-in person's own, the ones waiting for a
# person, the active ones nobody holds, and every conversation ("").
VIEWS = {"mine": "Mine", "waiting": "Waiting", "unassigned": "Unassigned", "": "All"}
COUNTED_UP_TO = 999  # a view's count stops there ("999+"): no count reads the whole table


# --- the conversation list ----------------------------------------------------------------------


@dataclass(frozen=True)
class ConversationFilters:
    status: str = ""
    run_status: str = ""
    quarantined: bool = False
    assistant: str = ""
    persona: str = ""
    since: date | None = None
    until: date | None = None
    q: str = ""
    view: str = ""  # a key of VIEWS
    me: str = ""  # the staff persona looking, whose "mine" it is; not a parameter

    def params(self) -> dict[str, str]:
        """The filters as query parameters, for links that keep them (paging)."""
        out = {
            "view": self.view, "status": self.status, "run_status": self.run_status, "quarantined": "1" if self.quarantined else "",
            "assistant": self.assistant, "persona": self.persona, "since": self.since.isoformat() if self.since else "",
            "until": self.until.isoformat() if self.until else "", "q": self.q,
        }
        return {k: v for k, v in out.items() if v}

    @property
    def active(self) -> bool:
        return bool(self.params())


def _date(raw: str, name: str, problems: list[str]) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        problems.append(f"{name}: not a date (YYYY-MM-DD)")
        return None


def check_filters(data: Any, *, me: str = "") -> tuple[ConversationFilters, list[str]]:
    """Read the list's filter form (`me`: the staff persona looking); a value that makes no sense is dropped and said why."""
    problems: list[str] = []
    view = data.get("view", "")
    if view not in VIEWS:
        problems.append(f"view: unknown value {view!r}")
        view = ""
    status = data.get("status", "")
    if status and status not in LIFECYCLES:
        problems.append(f"lifecycle: unknown value {status!r}")
        status = ""
    run_status = data.get("run_status", "")
    if run_status and run_status not in RUN_STATUSES:
        problems.append(f"run status: unknown value {run_status!r}")
        run_status = ""
    assistant = data.get("assistant", "")
    if assistant:
        try:
            assistant = str(uuid.UUID(assistant))
        except ValueError:
            problems.append("assistant: not an assistant id")
            assistant = ""
    filters = ConversationFilters(
        status=status,
        run_status=run_status,
        quarantined=data.get("quarantined") in ("1", "on", "true"),
        assistant=assistant,
        persona=data.get("persona", "").strip()[:300],
        since=_date(data.get("since", ""), "from", problems),
        until=_date(data.get("until", ""), "to", problems),
        q=data.get("q", "").strip()[:200],
        view=view,
        me=me,
    )
    return filters, problems


@dataclass(frozen=True)
class Cursor:
    """A position in the (-created_at, id) order: the keyset a page continues from."""

    created_at: datetime
    id: uuid.UUID

    def encode(self) -> str:
        return f"{iso(self.created_at)}~{self.id}"

    @classmethod
    def parse(cls, raw: str | None) -> Cursor | None:
        if not raw or "~" not in raw:
            return None
        moment, _, ident = raw.rpartition("~")
        try:
            return cls(datetime.fromisoformat(moment), uuid.UUID(ident))
        except ValueError:
            return None


@dataclass
class ConversationPage:
    rows: list[dict[str, Any]]
    filters: ConversationFilters
    problems: list[str] = field(default_factory=list)
    newer: str | None = None  # cursor for the page before this one
    older: str | None = None  # cursor for the page after this one
    assistants: list[Assistant] = field(default_factory=list)

    def link(self, **cursor: str) -> str:
        return "?" + urlencode({**self.filters.params(), **cursor})

    @property
    def newer_link(self) -> str | None:
        return self.link(before=self.newer) if self.newer else None

    @property
    def older_link(self) -> str | None:
        return self.link(after=self.older) if self.older else None


def _search(q: str) -> Q:
    try:
        return Q(id=uuid.UUID(q))
    except ValueError:
        pass
    if "=" in q:
        key, _, value = q.partition("=")
        key, value = key.strip(), value.strip()
        if _METADATA_KEY.match(key):
            # JSON containment (@>): one pass over the jsonb, no text extraction per key.
            match = Q(metadata__contains={key: value})
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = value
            if parsed != value:
                match |= Q(metadata__contains={key: parsed})
            return match
    match = Q(metadata__icontains=q) | _said(q)
    if _ID_PREFIX.match(q):
        match |= Q(id__startswith=q.lower())
    return match


def _said(q: str) -> Q:
    """
    The conversations in which one message holds every word of `q` that can decide (stemmed: "parcels" finds "parcel").

    The same machinery as knowledge search: the words without stop words (`terms`), PostgreSQL
    full-text search on `chat_messages.search`, SQLite FTS5 on `chat_message_fts` (migration 0005).
    """
    words = terms(q)
    if not words:
        return Q(pk__in=[])
    if connection.vendor == "postgresql":
        found = RawSQL("SELECT conversation_id FROM chat_messages WHERE search @@ plainto_tsquery('english', %s)",
                       [" ".join(words)])
    else:
        found = RawSQL("SELECT conversation_id FROM chat_message_fts WHERE chat_message_fts MATCH %s",
                       [" ".join(f'"{word}"' for word in words)])
    return Q(id__in=found)


def _in_view(view: str, me: str) -> Q:
    """Who answers the conversations of a view: `me`, nobody yet, or nobody (the assistant or the queue)."""
    return {
        "mine": Q(control_mode="human", control_staff=me),
        "waiting": Q(control_mode="queued", status="active"),
        "unassigned": Q(control_mode__in=("agent", "queued"), status="active"),
    }.get(view, Q())


def view_counts(filters: ConversationFilters) -> list[dict[str, Any]]:
    """
    Each view of the list with how many conversations it holds, counted up to `COUNTED_UP_TO` ("999+").

    The count is the view's alone; its link keeps the other filters.
    """
    others = {k: v for k, v in filters.params().items() if k != "view"}
    out = []
    for view, label in VIEWS.items():
        count = Conversation.objects.filter(_in_view(view, filters.me))[: COUNTED_UP_TO + 1].count()
        out.append({"view": view, "label": label, "count": count, "current": view == filters.view,
                    "shown": f"{COUNTED_UP_TO}+" if count > COUNTED_UP_TO else str(count),
                    "link": "?" + urlencode({**({"view": view} if view else {}), **others})})
    return out


def _filtered(filters: ConversationFilters):
    latest_run = WorkflowLog.objects.filter(conversation=OuterRef("pk")).order_by("-dispatched_seq")
    last_message = ChatMessage.objects.filter(conversation=OuterRef("pk")).order_by("-seq")
    query = Conversation.objects.filter(_in_view(filters.view, filters.me)).annotate(
        run_status=Subquery(latest_run.values("status")[:1]),
        quarantined=Exists(WorkflowLog.objects.filter(conversation=OuterRef("pk"), quarantined=True)),
        last_message=Subquery(last_message.values("text")[:1]),
    )
    if filters.status:
        query = query.filter(status=filters.status)
    if filters.run_status:
        # "Any run has it" first: the status index finds the few candidates of a rare status, so
        # the latest-run subquery runs for those only instead of for every conversation scanned.
        any_run = WorkflowLog.objects.filter(conversation=OuterRef("pk"), status=filters.run_status)
        query = query.filter(Exists(any_run), run_status=filters.run_status)
    if filters.quarantined:
        query = query.filter(quarantined=True)
    if filters.assistant:
        query = query.filter(assistant_id=filters.assistant)
    if filters.persona:
        holders = ConversationToken.objects.filter(persona=filters.persona).values("conversation_id")
        query = query.filter(Q(owner=filters.persona) | Q(id__in=holders))
    if filters.since:
        query = query.filter(created_at__gte=datetime.combine(filters.since, time.min, tzinfo=UTC))
    if filters.until:
        query = query.filter(created_at__lt=datetime.combine(filters.until + timedelta(days=1), time.min, tzinfo=UTC))
    if filters.q:
        query = query.filter(_search(filters.q))
    return query


_ROW_FIELDS = ("id", "created_at", "status", "owner", "message_count", "metadata", "last_turn_at", "assistant__name",
               "run_status", "quarantined", "head_seq", "last_message", "control_mode", "control_staff", "control_name",
               "control_requested_at")


def conversation_page(
    *, filters: ConversationFilters, after: str | None = None, before: str | None = None, size: int = PAGE_SIZE,
    problems: list[str] | None = None,
) -> ConversationPage:
    """
    Return one page of conversations, newest first, in (-created_at, id) order.

    Keyset paging: a page starts from its neighbour's cursor, never from an OFFSET, and nothing
    counts the table, so a page costs the same at 100k conversations as at 100 (the order is the
    `conversation_recent` index's). A malformed cursor means the first page.
    """
    query = _filtered(filters).values(*_ROW_FIELDS)
    going_back = Cursor.parse(before)
    going_on = None if going_back else Cursor.parse(after)
    if going_back:
        c = going_back
        query = query.filter(Q(created_at__gt=c.created_at) | Q(created_at=c.created_at, id__lt=c.id)).order_by("created_at", "-id")
    else:
        if going_on:
            c = going_on
            query = query.filter(Q(created_at__lt=c.created_at) | Q(created_at=c.created_at, id__gt=c.id))
        query = query.order_by("-created_at", "id")
    rows = list(query[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    if going_back:
        rows.reverse()
        if not rows:
            return conversation_page(filters=filters, size=size, problems=problems)
    page = ConversationPage(rows=rows, filters=filters, problems=problems or [],
                            assistants=list(Assistant.objects.order_by("name").only("id", "name")))
    if rows:
        first, last = Cursor(rows[0]["created_at"], rows[0]["id"]), Cursor(rows[-1]["created_at"], rows[-1]["id"])
        page.newer = first.encode() if (going_on or (going_back and more)) else None
        page.older = last.encode() if (going_back or more) else None
    for row in rows:
        row["last_run"] = last_run(row["run_status"], row["quarantined"])
        row["customer"] = persona_name(row["owner"]) if row["owner"] else ""
        row["answers"] = _who_answers(row, filters.me)
    _quarantine_reasons(rows)
    return page


def _who_answers(row: dict[str, Any], me: str) -> dict[str, Any]:
    """The list's "who answers" cell: the assistant, waiting since when, or the person (you, when it is `me`)."""
    if row["control_mode"] == "human":
        name = row["control_name"] or row["control_staff"]
        return {"mode": "human", "text": f"{name} (you)" if row["control_staff"] == me else name}
    if row["control_mode"] == "queued":
        return {"mode": "queued", "text": "Waiting for a person", "since": row["control_requested_at"]}
    return {"mode": "agent", "text": "Assistant"}


def _quarantine_reasons(rows: list[dict[str, Any]]) -> None:
    """
    Give each row the Quarantined filter matches its `quarantine`: the turn that waits for a decision, and why.

    The filter matches a quarantined run of any turn, so the row says which, even when a later turn
    has finished since (its last run then reads `completed`, beside the quarantine).
    """
    held = [row["id"] for row in rows if row["quarantined"]]
    if not held:
        return
    runs: dict[Any, WorkflowLog] = {}
    quarantined = WorkflowLog.objects.filter(conversation_id__in=held, quarantined=True)
    for run in quarantined.select_related("conversation__assistant").order_by("dispatched_seq"):
        runs.setdefault(run.conversation_id, run)
    turn_ids = [r.turn_id for r in runs.values()]
    actions = {a.turn_id: a for a in ActionLog.objects.filter(turn_id__in=turn_ids, status="ambiguous")}
    for row in rows:
        run = runs.get(row["id"])
        if run is None:
            continue
        action = actions.get(run.turn_id)
        if action is None:
            what = "an action"
        else:
            tool = next((t for t in run.conversation.assistant.config.get("tools", []) if t["name"] == action.tool), {})
            what = f"“{call_words(tool, action.tool, action.arguments) or action.tool}”"
        row["quarantine"] = {"run_id": run.run_id, "why": f"The outcome of {what} is unknown: it waits for your decision."}
