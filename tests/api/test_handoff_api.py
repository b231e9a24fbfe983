"""The handoff endpoints (PRODUCT.md "Human handoff"): …/handoff, …/control, …/staff-messages, and control in the state."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api
from tests.conftest import SUPPORT_CONFIG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

HANDOFF = {"enabled": True, "model_tool": True}


def path(cid: str, what: str) -> str:
    return f"/v1/agent/conversations/{cid}/{what}"


@pytest.fixture
def handoff_assistant(api: Api) -> str:
    return api.create_assistant(handoff=HANDOFF)


def take(api: Api, cid: str, staff: str = "staff:dana", name: str = "Dana"):
    return api.post(path(cid, "control"), {"action": "take", "staff": staff, "name": name})


class TestAskingForAPerson:
    def test_a_token_asks_for_a_person_and_the_state_says_queued(self, api: Api, handoff_assistant):
        started = api.start("refund please", assistant=handoff_assistant)
        customer = api.as_(started["token"])
        waiting = api.state(started["conversation_id"])
        assert waiting["run_status"] == "waiting"

        response = customer.post(path(started["conversation_id"], "handoff"), {"reason": "I'd rather talk to someone"})

        assert response.status_code == 200, response.content
        control = response.json()["control"]
        assert control["mode"] == "queued" and control["reason"] == "I'd rather talk to someone"
        state = api.state(started["conversation_id"])
        assert state["control"] == control
        assert state["run_status"] == "handed_off" and state["pending_client_actions"] == []
        assert [a["status"] for a in state["answered_client_actions"]] == ["withdrawn"]

    def test_a_late_answer_to_the_withdrawn_approval_gets_409(self, api: Api, handoff_assistant):
        started = api.start("refund please", assistant=handoff_assistant)
        cid = started["conversation_id"]
        pending = api.state(cid)["pending_client_actions"][0]
        run_id = api.state(cid)["run_id"]
        api.post(path(cid, "handoff"), {})

        late = api.post(path(cid, f"runs/{run_id}/results"), {"results": [{"call_id": pending["call_id"], "output": {
            "decision": "approve", "reviewed": {"tool": pending["tool"], "arguments": pending["arguments"]}}}]})

        assert late.status_code == 409 and late.json()["error"]["code"] == "run_not_waiting"

    def test_asking_twice_answers_with_the_same_control(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]
        first = api.post(path(cid, "handoff"), {"reason": "x"}).json()
        head = api.state(cid)["seq"]

        again = api.post(path(cid, "handoff"), {"reason": "y"})

        assert again.status_code == 200 and again.json() == first and api.state(cid)["seq"] == head

    def test_an_assistant_without_handoff_refuses_with_handoff_unavailable(self, api: Api):
        cid = api.start("hello")["conversation_id"]

        response = api.post(path(cid, "handoff"), {})

        assert response.status_code == 409 and response.json()["error"]["code"] == "handoff_unavailable"
        assert api.state(cid)["control"]["mode"] == "agent"

    def test_a_completed_conversation_refuses_every_change_of_control(self, api: Api, handoff_assistant):
        cid = api.start("bye", assistant=handoff_assistant)["conversation_id"]

        for response in (api.post(path(cid, "handoff"), {}), take(api, cid)):
            assert response.status_code == 409 and response.json()["error"]["code"] == "conversation_completed"

    def test_bad_input_gets_the_error_shape(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]

        assert api.post(path(cid, "handoff"), {"reason": 5}).status_code == 422
        assert api.post(path(cid, "handoff"), {"reason": "x" * 501}).status_code == 422
        assert api.post(path(cid, "control"), {"action": "steal", "staff": "staff:dana"}).status_code == 422
        assert api.post(path(cid, "control"), {"action": "take", "staff": "shop:dana"}).status_code == 422
        assert api.post(path(cid, "staff-messages"), {"staff": "staff:dana", "text": "   "}).status_code == 422
        assert api.state(cid)["control"]["mode"] == "agent"


class TestTakingOverAndHandingBack:
    def test_exactly_one_taker_wins_and_the_other_is_told_who_holds_it(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]

        won, lost = take(api, cid), take(api, cid, "staff:sam", "Sam")

        assert won.status_code == 200 and won.json()["control"]["staff"] == {"id": "staff:dana", "name": "Dana"}
        assert lost.status_code == 409
        error = lost.json()["error"]
        assert error["code"] == "control_conflict" and error["holder"] == {"id": "staff:dana", "name": "Dana"}
        assert "Dana" in error["message"]

    def test_a_token_cannot_take_control(self, api: Api, handoff_assistant):
        started = api.start("hello", assistant=handoff_assistant)

        response = take(api.as_(started["token"]), started["conversation_id"])

        assert response.status_code == 403

    def test_the_holder_replies_the_customer_writes_and_control_returns_with_a_note(self, api: Api, handoff_assistant):
        started = api.start("hello", assistant=handoff_assistant)
        cid, customer = started["conversation_id"], api.as_(started["token"])
        take(api, cid)

        other = api.post(path(cid, "staff-messages"), {"staff": "staff:sam", "text": "hi"})
        reply = api.post(path(cid, "staff-messages"), {"staff": "staff:dana", "text": "Dana here, how can I help?"})
        written = customer.post(path(cid, "turns"), {"message": "my parcel is lost"})
        not_holder = api.post(path(cid, "control"), {"action": "return", "staff": "staff:sam"})
        back = api.post(path(cid, "control"), {"action": "return", "staff": "staff:dana", "note": "new parcel sent"})

        assert other.status_code == 409 and other.json()["error"]["code"] == "control_conflict"
        assert reply.status_code == 201
        assert reply.json()["message"]["author"] == {"kind": "staff", "id": "staff:dana", "name": "Dana"}
        assert written.status_code == 202 and written.json()["run_id"] is None
        assert not_holder.status_code == 409
        assert back.status_code == 200 and back.json()["control"]["mode"] == "agent"
        state = api.state(cid)
        assert [(m["role"], m["author"]["kind"]) for m in state["messages"]] == [
            ("user", "customer"), ("assistant", "assistant"), ("staff", "staff"), ("user", "customer")]
        assert [c["kind"] for c in state["control_changes"]] == ["control_taken", "control_returned"]
        assert state["control_changes"][-1]["text"] == "new parcel sent"

        # The agent answers again once control is back.
        again = customer.post(path(cid, "turns"), {"message": "thanks"})
        assert again.status_code == 202 and again.json()["run_id"]
        assert api.state(cid)["messages"][-1]["text"] == "You said: thanks"


def test_the_scripted_handoff_step_hands_off(api: Api):
    rules = [{"match": "person", "steps": [{"handoff": "asked for a person"}]}, *SUPPORT_CONFIG["model"]["rules"]]
    assistant = api.create_assistant(handoff=HANDOFF, model={**SUPPORT_CONFIG["model"], "rules": rules})

    cid = api.start("a person please", assistant=assistant)["conversation_id"]

    state = api.state(cid)
    assert state["control"]["mode"] == "queued" and state["control"]["reason"] == "asked for a person"
    assert state["run_status"] == "handed_off"


def test_the_handoff_configuration_is_checked(api: Api):
    bad = api.post("/v1/assistants", {**SUPPORT_CONFIG, "handoff": {"enabled": "yes", "queue_timeout_seconds": 0}})

    assert bad.status_code == 422
    problems = " ".join(bad.json()["error"]["problems"])
    assert "handoff.enabled" in problems and "handoff.queue_timeout_seconds" in problems


def test_the_openapi_document_describes_handoff(api: Api):
    document = api.get("/v1/openapi.json").json()

    assert {"/v1/agent/conversations/{id}/handoff", "/v1/agent/conversations/{id}/control",
            "/v1/agent/conversations/{id}/staff-messages"} <= set(document["paths"])
    schemas = document["components"]["schemas"]
    assert "control" in schemas["StateOut"]["required"]
    assert schemas["Control"]["properties"]["mode"]["enum"] == ["agent", "queued", "human"]
    assert set(schemas["Author"]["properties"]["kind"]["enum"]) == {"customer", "assistant", "staff"}


class TestRescueAndReassign:
    """A held conversation is taken from, handed to, or handed back for a colleague named in `from` (docs/handoff.md)."""

    def test_a_take_over_from_the_holder_named_in_from_wins_and_a_stale_one_is_409(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]
        take(api, cid, "staff:sam", "Sam")

        without = take(api, cid)
        rescued = api.post(path(cid, "control"), {"action": "take", "staff": "staff:dana", "name": "Dana", "from": "staff:sam"})
        stale = api.post(path(cid, "control"), {"action": "take", "staff": "staff:lee", "from": "staff:sam"})

        assert without.status_code == 409 and without.json()["error"]["holder"]["id"] == "staff:sam"
        assert rescued.status_code == 200 and rescued.json()["control"]["staff"] == {"id": "staff:dana", "name": "Dana"}
        assert stale.status_code == 409
        assert stale.json()["error"] == {"code": "control_conflict", "message": "Dana already has this conversation.",
                                         "holder": {"id": "staff:dana", "name": "Dana"}}

    def test_assign_hands_it_to_a_colleague_who_then_replies(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]
        take(api, cid, "staff:sam", "Sam")

        handed = api.post(path(cid, "control"), {"action": "assign", "staff": "staff:sam", "to": "staff:dana", "to_name": "Dana"})
        reply = api.post(path(cid, "staff-messages"), {"staff": "staff:dana", "text": "Dana here."})

        assert handed.status_code == 200 and handed.json()["control"]["staff"] == {"id": "staff:dana", "name": "Dana"}
        assert reply.status_code == 201

    def test_an_admin_hands_back_for_the_holder_named_in_from(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]
        take(api, cid, "staff:sam", "Sam")

        refused = api.post(path(cid, "control"), {"action": "return", "staff": "staff:ada"})
        back = api.post(path(cid, "control"), {"action": "return", "staff": "staff:ada", "from": "staff:sam", "note": "Sam left"})

        assert refused.status_code == 409
        assert back.status_code == 200 and back.json()["control"]["mode"] == "agent"

    @pytest.mark.parametrize("body", [
        {"action": "assign", "staff": "staff:sam"},
        {"action": "assign", "staff": "staff:sam", "to": "guest:bob"},
        {"action": "take", "staff": "staff:dana", "from": "sam"},
    ], ids=["assign without to", "to not a staff persona", "from not a staff persona"])
    def test_a_malformed_change_is_422_and_changes_nothing(self, api: Api, handoff_assistant, body):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]
        take(api, cid, "staff:sam", "Sam")

        response = api.post(path(cid, "control"), body)

        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"
        assert api.state(cid)["control"]["staff"]["id"] == "staff:sam"


class TestWhileWaiting:
    def test_the_customer_leaves_an_address_and_a_reason_then_goes_back_to_the_assistant(self, api: Api, handoff_assistant):
        started = api.start("hello", assistant=handoff_assistant)
        cid, customer = started["conversation_id"], api.as_(started["token"])
        customer.post(path(cid, "handoff"), {})

        left = customer.post(path(cid, "handoff/details"), {"email": "alice@example.com", "reason": "my parcel"})
        back = customer.delete(path(cid, "handoff"))

        assert left.status_code == 200 and left.json()["control"]["reason"] == "my parcel"
        assert back.status_code == 200 and back.json()["control"]["mode"] == "agent"
        assert api.state(cid)["control"]["mode"] == "agent"
        # The address is the staff's to see: no state carries it.
        assert "alice@example.com" not in str(api.state(cid))

    def test_going_back_after_a_person_took_it_is_409_with_the_holder(self, api: Api, handoff_assistant):
        started = api.start("hello", assistant=handoff_assistant)
        cid, customer = started["conversation_id"], api.as_(started["token"])
        customer.post(path(cid, "handoff"), {})
        take(api, cid)

        refused = customer.delete(path(cid, "handoff"))

        assert refused.status_code == 409 and refused.json()["error"]["code"] == "control_conflict"
        assert api.state(cid)["control"]["staff"]["name"] == "Dana"

    @pytest.mark.parametrize("body", [{"email": "not an address"}, {}, {"email": "a@example.com", "extra": 1}])
    def test_bad_details_are_refused_and_nothing_is_recorded(self, api: Api, handoff_assistant, body):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]
        api.post(path(cid, "handoff"), {})
        head = api.state(cid)["seq"]

        refused = api.post(path(cid, "handoff/details"), body)

        assert refused.status_code in (400, 422) and "error" in refused.json()
        assert api.state(cid)["seq"] == head

    def test_details_while_nobody_is_waited_for_is_409(self, api: Api, handoff_assistant):
        cid = api.start("hello", assistant=handoff_assistant)["conversation_id"]

        refused = api.post(path(cid, "handoff/details"), {"reason": "x"})

        assert refused.status_code == 409 and refused.json()["error"]["code"] == "control_conflict"
