import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.conversations.models import Conversation, ConversationToken
from apps.runs.models import WorkflowLog
from apps.staff import listing

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def many(make_assistant):
    """Conversation rows straight in the store (the list reads only rows): 7 at one instant, then one a minute."""

    def make(count, assistant=None, **fields):
        assistant = assistant or make_assistant()
        rows = [
            Conversation(id=uuid.uuid4(), assistant=assistant, created_at=T0 if i < 7 else T0 + timedelta(minutes=i), **fields)
            for i in range(count)
        ]
        Conversation.objects.bulk_create(rows)
        return rows

    return make


def order(rows):
    return sorted(rows, key=lambda r: (-r.created_at.timestamp(), str(r.id)))


def ids(page):
    return [row["id"] for row in page.rows]


class TestKeysetPaging:
    def test_pages_walk_the_whole_list_in_order_without_gaps_or_repeats(self, many):
        rows = order(many(23))
        filters = listing.ConversationFilters()

        seen, page = [], listing.conversation_page(filters=filters, size=5)
        while True:
            seen += ids(page)
            if not page.older:
                break
            page = listing.conversation_page(filters=filters, after=page.older, size=5)

        assert seen == [r.id for r in rows]

    def test_newer_goes_back_to_the_page_before(self, many):
        many(12)
        filters = listing.ConversationFilters()
        first = listing.conversation_page(filters=filters, size=5)
        second = listing.conversation_page(filters=filters, after=first.older, size=5)

        back = listing.conversation_page(filters=filters, before=second.newer, size=5)

        assert ids(back) == ids(first) and back.newer is None

    def test_a_page_counts_nothing(self, many):
        many(12)

        with CaptureQueriesContext(connection) as captured:
            listing.conversation_page(filters=listing.ConversationFilters(run_status="completed", q="x"), size=5)

        assert not any("COUNT(" in q["sql"].upper() for q in captured.captured_queries)

    def test_the_page_query_is_served_by_the_recent_index(self, many):
        many(30)
        page = listing.conversation_page(filters=listing.ConversationFilters(), size=5)
        query = listing._filtered(listing.ConversationFilters()).values("id").order_by("-created_at", "id")[:6]

        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            plan = query.explain()

        assert "conversation_recent" in plan and page.older


class TestFilters:
    def test_filters_by_the_latest_runs_status_and_quarantine(self, start):
        stuck = start("hello")
        waiting = start("when can you deliver?")
        WorkflowLog.objects.filter(run_id=stuck["run_id"]).update(status="interrupted", quarantined=True)
        WorkflowLog.objects.filter(run_id=waiting["run_id"]).update(status="waiting")

        interrupted = listing.conversation_page(filters=listing.ConversationFilters(run_status="interrupted"))
        paused = listing.conversation_page(filters=listing.ConversationFilters(run_status="waiting"))
        quarantined = listing.conversation_page(filters=listing.ConversationFilters(quarantined=True))

        assert [str(i) for i in ids(interrupted)] == [stuck["conversation_id"]]
        assert [str(i) for i in ids(paused)] == [waiting["conversation_id"]]
        assert [str(i) for i in ids(quarantined)] == [stuck["conversation_id"]]
        assert quarantined.rows[0]["last_run"] == "quarantined"

    def test_filters_by_persona_owner_or_token_holder(self, start):
        alice = start("hello", persona="guest:alice")
        start("hello", persona="guest:bob")
        ConversationToken.objects.create(conversation_id=alice["conversation_id"], persona="agent:carol", permissions=["view"])

        by_owner = listing.conversation_page(filters=listing.ConversationFilters(persona="guest:alice"))
        by_token = listing.conversation_page(filters=listing.ConversationFilters(persona="agent:carol"))

        assert [str(i) for i in ids(by_owner)] == [alice["conversation_id"]]
        assert [str(i) for i in ids(by_token)] == [alice["conversation_id"]]

    def test_searches_by_id_and_by_metadata(self, start):
        one = start("hello", metadata={"order_id": "A-1", "tier": "gold"})
        two = start("hello", metadata={"order_id": "B-2", "amount": 20})

        def found(q):
            return [str(i) for i in ids(listing.conversation_page(filters=listing.ConversationFilters(q=q)))]

        assert found(one["conversation_id"]) == [one["conversation_id"]]
        assert found(two["conversation_id"][:8]) == [two["conversation_id"]]
        assert found("order_id=A-1") == [one["conversation_id"]]
        assert found("amount=20") == [two["conversation_id"]]
        assert found("GOLD") == [one["conversation_id"]]

    def test_filters_by_assistant_lifecycle_and_date(self, many, make_assistant):
        other = make_assistant(name="Other")
        mine = many(3, assistant=other, status="completed")
        many(3)

        page = listing.conversation_page(filters=listing.ConversationFilters(
            assistant=str(other.id), status="completed", since=T0.date(), until=T0.date()))

        assert sorted(ids(page)) == sorted(r.id for r in mine)

    def test_a_bad_filter_value_is_dropped_and_said(self, staff_client):
        response = staff_client.get(reverse("staff:conversations"), {"run_status": "sideways", "since": "yesterday"})

        page = response.content.decode()
        assert response.status_code == 200
        assert "run status: unknown value" in page and "from: not a date" in page


class TestTheListPage:
    def test_links_each_conversation_to_its_inspector_and_keeps_filters_when_paging(self, staff_client, many):
        rows = order(many(60, status="active"))

        page = staff_client.get(reverse("staff:conversations"), {"status": "active"}).content.decode()

        assert reverse("staff:conversation", args=[rows[0].id]) in page
        assert reverse("staff:conversation", args=[rows[50].id]) not in page
        assert "status=active&amp;after=" in page

    def test_shows_the_lifecycle_apart_from_the_latest_runs_status(self, staff_client, start):
        answered = start("hello")
        completed = start("hello")
        WorkflowLog.objects.filter(run_id__in=[answered["run_id"], completed["run_id"]]).update(status="completed")
        Conversation.objects.filter(id=completed["conversation_id"]).update(status="completed")

        page = staff_client.get(reverse("staff:conversations")).content.decode()

        assert re.findall(r'class="badge (\w+)"', row_of(page, answered["conversation_id"])) == ["active", "completed"]
        assert re.findall(r'class="badge (\w+)"', row_of(page, completed["conversation_id"])) == ["completed", "completed"]


def row_of(page: str, conversation_id: str) -> str:
    start = page.index(f'<tr id="conversation-{conversation_id}">')
    return page[start:page.index("</tr>", start)]
