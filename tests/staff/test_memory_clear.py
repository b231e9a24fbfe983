import re

import pytest
from django.urls import reverse

from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations.queries import conversation_for
from apps.ledger import store
from apps.workspaces.queries import list_memory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

REMEMBERING = {
    "provider": "scripted",
    "rules": [
        {"match": "email", "steps": [{"call": "remember", "arguments": {"fact": "Prefers email"}}, {"say": "Noted."}]},
        {"match": "invoice", "steps": [{"call": "remember", "arguments": {"fact": "Invoices go to ops@acme.test"}}, {"say": "Noted."}]},
        {"match": "know", "steps": [{"say": "I remember: {memory}"}]},
    ],
    "fallback": [{"say": "You said: {message}"}],
}


@pytest.fixture
def remembering(start, make_assistant, clock):
    """A conversation whose agent remembered two facts."""
    started = start("I prefer email", assistant=make_assistant(model=REMEMBERING))
    actions.start_turn(conversation_id=started["conversation_id"], message="send the invoice to ops", persona="guest:alice",
                       edge="api", now=clock())
    return started["conversation_id"]


def clear_url(cid: str) -> str:
    return reverse("staff:clear_memory", args=[cid])


def cleared_entries(cid: str) -> list:
    return [e for e in store.read(cid) if e.kind == "memory_cleared"]


class TestStaffClearsMemory:
    def test_clear_all_records_the_staff_identity_as_actor(self, staff_client, remembering):
        ids = [f["fact_id"] for f in list_memory(conversation_for(remembering))]

        response = staff_client.post(clear_url(remembering))

        assert response.status_code == 302
        assert list_memory(conversation_for(remembering)) == []
        [entry] = cleared_entries(remembering)
        assert entry.actor == "staff:ops"
        assert entry.payload == {"fact_ids": ids, "cleared_by": "staff:ops"}

    def test_clearing_one_fact_keeps_the_others_and_the_next_turn_no_longer_sees_it(self, staff_client, remembering, clock):
        email = list_memory(conversation_for(remembering))[0]
        staff_client.post(clear_url(remembering), {"fact_id": email["fact_id"]})

        actions.start_turn(conversation_id=remembering, message="what do you know?", persona="guest:alice", edge="api", now=clock())

        state = conversation_state(conversation_for(remembering))
        assert state["messages"][-1]["text"] == "I remember: Invoices go to ops@acme.test"

    def test_the_inspector_offers_clear_buttons_and_the_timeline_summarises_the_clear(self, staff_client, remembering):
        page = staff_client.get(reverse("staff:conversation", args=[remembering])).content.decode()
        assert page.count(">Clear</button>") == 2 and ">Clear all</button>" in page

        staff_client.post(clear_url(remembering))

        page = staff_client.get(reverse("staff:conversation", args=[remembering])).content.decode()
        row = re.search(r'<tr id="event-\d+" class="[^"]*kind-memory_cleared">(.*?)</tr>', page, re.S).group(1)
        assert "2 facts cleared by staff:ops" in row
        assert "Nothing remembered." in page

    def test_the_timeline_summarises_what_was_remembered(self, staff_client, remembering):
        page = staff_client.get(reverse("staff:conversation", args=[remembering])).content.decode()

        rows = re.findall(r'<tr id="event-\d+" class="[^"]*kind-memory_remembered">(.*?)</tr>', page, re.S)
        assert "“Prefers email” for guest:alice" in rows[0]

    def test_an_htmx_clear_answers_with_the_inspector_fragments(self, staff_client, remembering):
        email = list_memory(conversation_for(remembering))[0]

        response = staff_client.post(clear_url(remembering), {"fact_id": email["fact_id"]}, headers={"HX-Request": "true"})

        assert response.status_code == 200
        section = re.search(r'<section id="participants".*?</section>', response.content.decode(), re.S).group(0)
        assert "Prefers email" not in section and "Invoices go to ops@acme.test" in section

    def test_someone_who_is_not_staff_cannot_clear(self, client, remembering):
        response = client.post(clear_url(remembering))

        assert response.status_code == 302 and "/staff/login/" in response["Location"]
        assert len(list_memory(conversation_for(remembering))) == 2 and cleared_entries(remembering) == []
