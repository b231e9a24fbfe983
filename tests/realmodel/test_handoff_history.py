"""
After a person held the conversation, the real server's next request carries what happened meanwhile.

PRODUCT.md "Human handoff": when control returns, the model's next request carries the human part
of the conversation from the record: the customer's messages, the person's replies marked as a
person's, and the hand-back note. The relay keeps the request exactly as it was sent, and the
real server's 200 says that such a history (system lines between the turns) is one it accepts.
"""

import pytest

from apps.agent import actions, handoff
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger.replay import replay, verify

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

WHILE_QUEUED = "It was order A-7, and it is a birthday present."
STAFF_REPLY = "I have sent a replacement by express today."
NOTE = "Replacement shipped, tracking number TR-99; no refund needed."


@pytest.fixture
def assistant(make_assistant, relay):
    return make_assistant(
        model={"provider": "openai", "model": "smollm2", "temperature": 0, "max_output_tokens": 40, "timeout_seconds": 120},
        tools=[{"name": "lookup_order", "kind": "server", "action": "echo", "description": "Look an order up by its id",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}}}],
        handoff={"enabled": True, "model_tool": False},
        step_budget=3,
    )


def state(cid):
    return conversation_state(queries.conversation_for(cid))


def test_the_request_after_the_hand_back_carries_the_customer_the_person_and_the_note(start, assistant, relay, clock):
    cid = start("Hello, my parcel has not arrived.", assistant=assistant)["conversation_id"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice",
                            reason="I want a person", now=clock())
    queued = actions.start_turn(conversation_id=cid, message=WHILE_QUEUED, persona="guest:alice", edge="api", now=clock())
    handoff.take_control(conversation_id=cid, staff="staff:dana", name="Dana", now=clock())
    handoff.staff_message(conversation_id=cid, staff="staff:dana", text=STAFF_REPLY, now=clock())
    handoff.return_control(conversation_id=cid, staff="staff:dana", name="Dana", note=NOTE, now=clock())
    assert queued["run_id"] is None and len(relay.requests) == 1  # nothing reached the model while a person had it

    back = actions.start_turn(conversation_id=cid, message="Thanks! When will it arrive?", persona="guest:alice",
                              edge="api", now=clock())

    assert back["run_id"] is not None
    assert relay.statuses == [200, 200]
    messages = relay.requests[1]["messages"]
    customer = messages.index({"role": "user", "content": WHILE_QUEUED})
    person = messages.index({"role": "system",
                             "content": f"Dana (a person, not you) replied to the customer: {STAFF_REPLY}"})
    note = next(i for i, m in enumerate(messages) if m["role"] == "system" and NOTE in m["content"])
    assert "Dana handed the conversation back to you." in messages[note]["content"]
    assert customer < person < note < len(messages) - 1
    assert messages[-1] == {"role": "user", "content": "Thanks! When will it arrive?"}
    assert not any(STAFF_REPLY in m["content"] for m in messages if m["role"] != "system")  # never said as the assistant
    after = state(cid)
    assert after["run_status"] == "completed" and after["control"]["mode"] == "agent"
    assert after["messages"][-1]["author"]["kind"] == "assistant" and after["messages"][-1]["text"].strip()
    assert replay(cid).ok and verify(cid).ok
