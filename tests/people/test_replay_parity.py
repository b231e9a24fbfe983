from datetime import timedelta

import pytest

from apps.agent import actions
from apps.conversations.models import Conversation
from apps.ledger.replay import replay, verify
from apps.people import actions as people
from apps.workspaces import actions as workspace
from tests.people.conftest import kinds, rules, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]

PEOPLE_KINDS = {
    "participant_added", "participant_removed", "participant_token_issued", "memory_remembered", "memory_cleared",
    "artifact_created", "artifact_acknowledged", "conversation_closed", "conversation_reopened",
}


def test_replaying_a_log_with_every_people_and_workspace_kind_gives_the_stored_state(start, make_assistant, clock):
    assistant = make_assistant(
        idle_timeout_seconds=60,
        model=rules(
            ("report", [{"calls": [{"call": "remember", "arguments": {"fact": "Wants CSV"}},
                                   {"call": "make_report", "arguments": {"name": "r.csv", "content": "a,b\n"}}]},
                        {"say": "Done."}]),
        ),
        tools=[{"name": "make_report", "kind": "server", "action": "write_artifact"}],
    )
    cid = start("a report please", assistant=assistant)["conversation_id"]
    people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())
    people.issue_participant_token(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())
    people.remove_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock())
    people.add_participant(conversation_id=cid, persona="shop:bob", by="api:backend", now=clock(), permissions=["view"])
    artifact = state(cid)["artifacts"][0]
    workspace.acknowledge_artifact(conversation_id=cid, artifact_id=artifact["artifact_id"], persona="api:backend", now=clock())
    workspace.clear_memory(conversation_id=cid, persona="shop:alice", now=clock())
    last = Conversation.objects.get(id=cid).last_turn_at
    workspace.close_idle_conversations(now=last + timedelta(seconds=60))
    actions.start_turn(conversation_id=cid, message="back again", persona="shop:bob", edge="widget",
                       now=last + timedelta(seconds=120))

    report = replay(cid)

    assert report.ok, report.differences
    assert verify(cid).ok
    assert set(kinds(cid)) >= PEOPLE_KINDS
