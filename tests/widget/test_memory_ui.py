import re

import pytest

from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations import tokens
from apps.conversations.queries import conversation_for
from apps.ledger import store
from apps.people.actions import add_participant, issue_participant_token
from apps.workspaces.queries import list_memory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

# The scripted model remembers on "email" and "invoice" and says what it was given on "know".
REMEMBERING = {
    "provider": "scripted",
    "rules": [
        {"match": "email", "steps": [{"call": "remember", "arguments": {"fact": "Prefers email"}}, {"say": "Noted."}]},
        {"match": "invoice", "steps": [{"call": "remember", "arguments": {"fact": "Invoices go to ops@acme.test"}}, {"say": "Noted."}]},
        {"match": "know", "steps": [{"say": "I remember: {memory}"}]},
        {"match": "bye", "steps": [{"say": "Goodbye!", "call": "complete_conversation", "arguments": {}}]},
    ],
    "fallback": [{"say": "You said: {message}"}],
}


@pytest.fixture
def remembering(start, make_assistant, clock):
    """A conversation (owner guest:alice) whose agent remembered two facts, oldest first."""
    started = start("I prefer email", assistant=make_assistant(model=REMEMBERING))
    actions.start_turn(conversation_id=started["conversation_id"], message="send the invoice to ops", persona="guest:alice",
                       edge="api", now=clock())
    return started


def facts(started) -> list[dict]:
    return list_memory(conversation_for(started["conversation_id"]))


def clear(client, started, token=None, htmx=False, **fields):
    headers = {"HX-Request": "true"} if htmx else {}
    return client.post(f"/c/{started['conversation_id']}/memory/clear", {"token": token or started["token"], **fields},
                       headers=headers)


def cleared_entries(started) -> list:
    return [e for e in store.read(started["conversation_id"]) if e.kind == "memory_cleared"]


def memory_section(html: str) -> str:
    return re.search(r'<section id="memory".*?</section>', html, re.S).group(0)


class TestMemorySection:
    def test_the_page_lists_each_remembered_fact_with_a_clear_button_and_clear_all(self, page, remembering):
        html = page(remembering).content.decode()

        section = memory_section(html)
        assert "What the assistant remembers" in section
        assert "Prefers email" in section and "Invoices go to ops@acme.test" in section
        assert section.count(">Clear</button>") == 2 and ">Clear all</button>" in section

    def test_a_conversation_without_memory_shows_no_section(self, page, start, make_assistant):
        started = start("hello", assistant=make_assistant(model=REMEMBERING))

        section = memory_section(page(started).content.decode())

        assert " hidden>" in section.split("\n")[0] and "Clear" not in section

    def test_a_view_only_token_sees_the_facts_without_clear_buttons(self, page, remembering):
        viewer = tokens.issue(conversation_id=remembering["conversation_id"], persona="guest:alice", permissions=["view"])

        section = memory_section(page({**remembering, "token": viewer}).content.decode())

        assert "Prefers email" in section and "Clear" not in section


class TestClearFromThePage:
    def test_clearing_one_fact_removes_it_and_records_the_viewer_as_actor(self, client, remembering):
        email, invoice = facts(remembering)

        response = clear(client, remembering, fact_id=email["fact_id"])

        assert response.status_code == 302
        assert [f["text"] for f in facts(remembering)] == [invoice["text"]]
        [entry] = cleared_entries(remembering)
        assert entry.actor == "guest:alice"
        assert entry.payload == {"fact_ids": [email["fact_id"]], "cleared_by": "guest:alice"}

    def test_a_later_turn_no_longer_gives_the_model_a_cleared_fact(self, client, remembering):
        email = facts(remembering)[0]
        clear(client, remembering, fact_id=email["fact_id"])

        client.post(f"/c/{remembering['conversation_id']}/send", {"token": remembering["token"], "message": "what do you know?"})

        state = conversation_state(conversation_for(remembering["conversation_id"]))
        assert state["messages"][-1]["text"] == "I remember: Invoices go to ops@acme.test"

    def test_clear_all_forgets_everything_in_one_entry(self, client, remembering):
        ids = [f["fact_id"] for f in facts(remembering)]

        clear(client, remembering)

        assert facts(remembering) == []
        [entry] = cleared_entries(remembering)
        assert entry.payload["fact_ids"] == ids

    def test_an_htmx_clear_answers_with_the_memory_fragment_swapped_out_of_band(self, client, remembering):
        email = facts(remembering)[0]

        response = clear(client, remembering, htmx=True, fact_id=email["fact_id"])

        assert response.status_code == 200
        section = memory_section(response.content.decode())
        assert 'hx-swap-oob="true"' in section
        assert "Prefers email" not in section and "Invoices go to ops@acme.test" in section

    def test_a_token_without_write_cannot_clear(self, client, remembering):
        viewer = tokens.issue(conversation_id=remembering["conversation_id"], persona="guest:alice", permissions=["view"])

        response = clear(client, remembering, token=viewer)

        assert response.status_code == 404
        assert len(facts(remembering)) == 2 and cleared_entries(remembering) == []

    def test_an_unknown_fact_is_a_not_found_notice_and_records_nothing(self, client, remembering):
        response = clear(client, remembering, htmx=True, fact_id="fact_nope")

        assert response.status_code == 404
        assert "no remembered fact fact_nope" in response.content.decode()
        assert len(facts(remembering)) == 2 and cleared_entries(remembering) == []


    def test_a_completed_conversation_is_read_only(self, client, page, remembering, clock):
        actions.start_turn(conversation_id=remembering["conversation_id"], message="bye", persona="guest:alice", edge="api",
                           now=clock())

        response = clear(client, remembering, htmx=True)

        assert response.status_code == 409
        assert len(facts(remembering)) == 2 and cleared_entries(remembering) == []
        assert "Clear" not in memory_section(page(remembering).content.decode())


class TestAttribution:
    def test_a_shared_transcript_names_the_author_of_messages_the_viewer_did_not_write(self, client, page, clock, start,
                                                                                      make_assistant):
        started = start("hello from alice", assistant=make_assistant(model=REMEMBERING))
        cid = started["conversation_id"]
        add_participant(conversation_id=cid, persona="guest:bob", by="guest:alice", now=clock(), permissions=["view", "write"])
        bob = issue_participant_token(conversation_id=cid, persona="guest:bob", by="guest:alice", now=clock())["token"]
        client.post(f"/c/{cid}/send", {"token": bob, "message": "hello from bob"})

        as_alice = page(started).content.decode()
        as_bob = page({**started, "token": bob}).content.decode()

        assert re.search(r'class="author">Guest bob<.*?hello from bob', as_alice, re.S)
        assert 'class="author">Guest alic<' not in as_alice
        assert re.search(r'class="author">Guest alic<.*?hello from alice', as_bob, re.S)
        assert 'class="author">Guest bob<' not in as_bob

    def test_a_private_transcript_names_nobody(self, page, remembering):
        html = page(remembering).content.decode()

        assert 'class="author"' not in html
