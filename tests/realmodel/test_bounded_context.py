"""
A conversation longer than the real server's context window still gets answers (docs/api.md, "Bounded context").

The server runs with a 4,096-token context. The conversation's earlier turns hold about five times
that; with `context_tokens` the request keeps the newest turns that fit and says what it left out,
and without it the same request is too long for the server.
"""

import pytest
from django.db import transaction
from django.utils import timezone

from apps.agent import actions
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.conversations.actions import new_id
from apps.conversations.models import Conversation
from apps.ledger import store
from apps.ledger.types import ModelRound, TurnComplete, TurnDispatched

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

CONTEXT = 4096  # the server's --n_ctx (tests/realmodel/server.py)


def long_history(cid: str, turns: int) -> None:
    """Earlier turns written straight into the log: only what the next request carries matters here."""
    with transaction.atomic():
        for n in range(turns):
            run_id, turn_id = new_id("run"), new_id("turn")
            text = f"Question {n}: " + "please tell me about the parcel and its delivery " * 8
            conversation = Conversation.objects.select_for_update(no_key=True).get(id=cid)
            store.append(conversation, turn_id=turn_id, actor="guest:alice", now=timezone.now(), events=[
                TurnDispatched(run_id=run_id, message_id=new_id("msg"), text=text, edge="api", caller="guest:alice",
                               participants=["guest:alice"]),
                ModelRound(run_id=run_id, round=1, text=f"Answer {n}: it is on its way " * 6),
                TurnComplete(run_id=run_id, message_id=new_id("msg"), text=f"Answer {n}: it is on its way " * 6),
            ])


@pytest.mark.parametrize("bounded", [True, False], ids=["context_tokens", "unbounded"])
def test_a_conversation_longer_than_the_context_still_gets_answers(start, make_assistant, relay, clock, bounded):
    model = {"provider": "openai", "model": "smollm2", "temperature": 0, "max_output_tokens": 40, "timeout_seconds": 120}
    if bounded:
        model["context_tokens"] = CONTEXT
    assistant = make_assistant(model=model, tools=[], step_budget=2)
    cid = start("Hello!", assistant=assistant)["conversation_id"]
    long_history(cid, 60)
    relay.requests.clear()
    relay.statuses.clear()

    actions.start_turn(conversation_id=cid, message="Where is my parcel?", persona="guest:alice", edge="api", now=clock())

    state = conversation_state(queries.conversation_for(cid))
    sent = relay.requests[0]["messages"]
    if bounded:
        assert relay.statuses[0] == 200
        assert state["run_status"] == "completed" and state["messages"][-1]["role"] == "assistant"
        assert sent[-1] == {"role": "user", "content": "Where is my parcel?"}
        assert sent[0]["content"].startswith("Left out here to fit the model's context:")
        assert "Question 59:" in str(sent) and "Question 0:" not in str(sent)
    else:
        # The whole history does not fit: the real server refuses it, which is what the bound prevents.
        assert relay.statuses and all(status >= 400 for status in relay.statuses)
        assert state["run_status"] == "failed"
