import pytest

from apps.agent import actions, answers
from apps.conversations import tokens
from apps.conversations.errors import BadInput, Forbidden
from apps.conversations.models import Conversation
from apps.ledger.replay import verify
from apps.people import actions as people
from tests.people.conftest import assert_replays, events_of, rules, state, turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def head(cid):
    return Conversation.objects.get(id=cid).head_seq


class TestPrivateAndShared:
    def test_a_new_conversation_is_private_to_its_owner(self, start, clock):
        cid = start()["conversation_id"]

        s = state(cid)

        assert s["visibility"] == "private"
        assert [p["persona"] for p in s["participants"]] == ["guest:alice"]

    def test_a_private_conversation_refuses_a_token_for_anyone_but_its_owner(self, start, clock):
        cid = start()["conversation_id"]
        before = head(cid)

        with pytest.raises(Forbidden, match="private"):
            people.issue_participant_token(conversation_id=cid, persona="guest:mallory", by="api:backend", now=clock())

        assert head(cid) == before

    def test_adding_a_participant_shares_the_conversation_with_a_signed_entry(self, start, clock):
        cid = start()["conversation_id"]

        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock(),
                               permissions=["view", "write"])

        s = state(cid)
        assert s["visibility"] == "shared"
        assert s["participants"][1] == {**s["participants"][1], "persona": "shop:bob", "permissions": ["view", "write"]}
        [added] = events_of(cid, "participant_added")
        assert added.actor == "api:backend" and added.payload["persona"] == "shop:bob"
        assert verify(cid).ok
        assert_replays(cid)

    def test_adding_the_same_participant_again_records_nothing(self, start, clock):
        cid = start()["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())
        before = head(cid)

        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())

        assert head(cid) == before

    def test_a_participant_token_carries_only_the_permissions_it_was_admitted_with(self, start, clock):
        cid = start()["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock(),
                               permissions=["view", "answer_client_actions"])

        issued = people.issue_participant_token(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())

        grant = tokens.resolve(issued["token"])
        assert (grant.persona, grant.conversation_id) == ("shop:bob", cid)
        assert grant.permissions == frozenset({"view", "answer_client_actions"})
        [logged] = events_of(cid, "participant_token_issued")
        assert logged.payload["token_id"] == grant.token_id and issued["token"] not in str(logged.payload)

    def test_a_participant_cannot_be_given_more_than_it_was_admitted_with(self, start, clock):
        cid = start()["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock(), permissions=["view"])

        with pytest.raises(Forbidden, match="approve"):
            people.issue_participant_token(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock(),
                                           permissions=["view", "approve"])

    def test_removing_a_participant_revokes_its_tokens(self, start, clock):
        cid = start()["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())
        raw = people.issue_participant_token(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())["token"]

        people.remove_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())

        assert tokens.resolve(raw) is None
        assert [p["persona"] for p in state(cid)["participants"]] == ["guest:alice"]
        assert_replays(cid)

    def test_a_removed_participant_can_be_admitted_again(self, start, clock):
        cid = start()["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())
        people.remove_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())

        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock(), permissions=["view"])

        assert [p["permissions"] for p in state(cid)["participants"]][1] == ["view"]
        assert_replays(cid)

    def test_a_malformed_persona_is_refused(self, start, clock):
        cid = start()["conversation_id"]

        with pytest.raises(BadInput, match="provider:external_id"):
            people.add_participant(conversation_id=cid, persona="bob", by="api:backend", now=clock())


APPROVER = {"name": "Refunds", "required_approver": "shop:manager"}


class TestRequiredApprover:
    def test_an_approval_by_anyone_else_is_refused_and_nothing_is_recorded(self, start, make_assistant, clock):
        started = start("refund please", assistant=make_assistant(**APPROVER))
        cid = started["conversation_id"]
        pending = state(cid)["pending_client_actions"][0]
        before = head(cid)

        with pytest.raises(Forbidden) as refused:
            answers.accept_results(
                conversation_id=cid, run_id=started["run_id"], persona="guest:alice", now=clock(),
                results=[{"call_id": pending["call_id"],
                          "output": {"decision": "approve", "reviewed": {"tool": pending["tool"], "arguments": pending["arguments"]}}}],
            )

        assert refused.value.status == 403
        assert head(cid) == before
        assert state(cid)["pending_client_actions"] == [pending] and state(cid)["answered_client_actions"] == []

    def test_the_required_approver_approves_and_is_recorded_as_the_one_who_answered(self, start, make_assistant, clock):
        started = start("refund please", assistant=make_assistant(**APPROVER))
        cid = started["conversation_id"]
        pending = state(cid)["pending_client_actions"][0]

        answers.accept_results(
            conversation_id=cid, run_id=started["run_id"], persona="shop:manager", now=clock(),
            results=[{"call_id": pending["call_id"],
                      "output": {"decision": "approve", "reviewed": {"tool": pending["tool"], "arguments": pending["arguments"]}}}],
        )

        answered = state(cid)["answered_client_actions"][0]
        assert (answered["status"], answered["answered_by"]) == ("approved", "shop:manager")
        [response] = events_of(cid, "approval_response")
        assert response.actor == "shop:manager" and response.payload["answered_by"] == "shop:manager"


class TestIngressDirectives:
    def test_a_directive_requires_its_approver_even_when_the_assistant_does_not(self, start, clock):
        started = start("refund please", directive={"required_approver": "shop:lead"})
        cid = started["conversation_id"]
        pending = state(cid)["pending_client_actions"][0]
        answer = {"call_id": pending["call_id"],
                  "output": {"decision": "deny", "reviewed": {"tool": pending["tool"], "arguments": pending["arguments"]}}}

        with pytest.raises(Forbidden):
            answers.accept_results(conversation_id=cid, run_id=started["run_id"], persona="guest:alice", now=clock(), results=[answer])

        assert events_of(cid, "approval_request")[0].payload["required_approver"] == "shop:lead"
        assert events_of(cid, "approval_response") == []

    def test_a_lower_step_budget_stops_the_loop_early(self, start, make_assistant, clock):
        looping = make_assistant(model=rules(("look", [{"call": "lookup_order", "arguments": {"n": i}} for i in range(6)]
                                             + [{"say": "Looked six times."}])))

        started = start("look it up", assistant=looping, directive={"step_budget": 2})

        cid = started["conversation_id"]
        rounds = events_of(cid, "model_round")
        assert [r.payload["closing"] for r in rounds] == [False, False, True]
        assert state(cid)["messages"][-1]["text"] == "I could not finish this. I tried: lookup_order."

    def test_without_a_directive_the_assistant_budget_applies(self, start, make_assistant, clock):
        looping = make_assistant(model=rules(("look", [{"call": "lookup_order", "arguments": {"n": i}} for i in range(6)]
                                             + [{"say": "Looked six times."}])))

        started = start("look it up", assistant=looping)

        assert state(started["conversation_id"])["messages"][-1]["text"] == "Looked six times."

    def test_the_directive_is_recorded_in_batch_one(self, start, clock):
        started = start(directive={"step_budget": 3, "required_approver": "shop:lead"})

        entries = events_of(started["conversation_id"], "turn_dispatched") + events_of(started["conversation_id"], "ingress_directive")
        dispatched, directive = entries
        assert directive.seq == dispatched.seq + 1 and directive.turn_id == dispatched.turn_id
        assert (directive.payload["step_budget"], directive.payload["required_approver"]) == (3, "shop:lead")


class TestAttribution:
    def test_batch_one_records_the_edge_the_caller_and_the_participants(self, start, clock):
        cid = start()["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())

        actions.start_turn(conversation_id=cid, message="hi from bob", persona="shop:bob", edge="widget", now=clock())

        dispatched = events_of(cid, "turn_dispatched")[-1]
        assert (dispatched.payload["edge"], dispatched.payload["caller"]) == ("widget", "shop:bob")
        assert dispatched.payload["participants"] == ["guest:alice", "shop:bob"]
        assert dispatched.actor == "shop:bob"

    def test_each_user_message_shows_its_author(self, start, clock):
        cid = start("hello")["conversation_id"]
        people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())

        turn(cid, "bob here", clock, persona="shop:bob")

        users = [(m["author"]["id"], m["text"]) for m in state(cid)["messages"] if m["role"] == "user"]
        assert users == [("guest:alice", "hello"), ("shop:bob", "bob here")]

    def test_a_client_result_records_who_answered(self, start, clock):
        started = start("when can you deliver?")
        cid = started["conversation_id"]
        call_id = state(cid)["pending_client_actions"][0]["call_id"]

        answers.accept_results(conversation_id=cid, run_id=started["run_id"], persona="shop:bob", now=clock(),
                               results=[{"call_id": call_id, "output": "2026-12-24"}])

        answered = state(cid)["answered_client_actions"][0]
        assert (answered["answered_by"], answered["output"]) == ("shop:bob", "2026-12-24")
        assert events_of(cid, "client_result_accepted")[0].payload["answered_by"] == "shop:bob"

    def test_a_question_answer_records_who_answered(self, start, make_assistant, clock):
        asking = make_assistant(model=rules(("help", [{"call": "ask_question", "arguments": {"question": "Which order?"}},
                                                      {"say": "Thanks: {result}"}])))
        started = start("help me", assistant=asking)
        cid = started["conversation_id"]
        call_id = state(cid)["pending_client_actions"][0]["call_id"]

        answers.accept_results(conversation_id=cid, run_id=started["run_id"], persona="shop:bob", now=clock(),
                               results=[{"call_id": call_id, "output": {"answer": "A-7"}}])

        answered = state(cid)["answered_client_actions"][0]
        assert (answered["kind"], answered["answered_by"]) == ("question", "shop:bob")
