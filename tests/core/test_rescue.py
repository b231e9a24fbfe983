"""A held conversation can be rescued: taken from a colleague, handed to one, or handed back by an admin (docs/handoff.md)."""

from __future__ import annotations

import threading

import pytest

from apps.agent import handoff
from apps.conversations.errors import BadInput, ControlConflict
from apps.ledger import store
from apps.ledger.replay import replay, verify
from apps.ledger.types import ControlTaken
from tests.conftest import SUPPORT_CONFIG
from tests.core.test_concurrency import together
from tests.core.test_handoff import HANDOFF, state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


@pytest.fixture
def held_by_sam(start, make_assistant, clock):
    """A conversation whose customer asked for a person, which Sam took."""
    cid = start("hello", assistant=make_assistant(handoff=HANDOFF, model=SUPPORT_CONFIG["model"]))["conversation_id"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=clock())
    handoff.take_control(conversation_id=cid, staff="staff:sam", name="Sam", now=clock())
    return cid


def last_entry(cid: str):
    return store.read(cid)[-1]


def test_taking_over_from_a_colleague_names_them_and_the_customer_sees_the_new_name(held_by_sam, clock):
    with pytest.raises(ControlConflict) as caught:
        handoff.take_control(conversation_id=held_by_sam, staff="staff:dana", name="Dana", now=clock())
    assert caught.value.details["holder"] == {"id": "staff:sam", "name": "Sam"}

    control = handoff.take_control(conversation_id=held_by_sam, staff="staff:dana", name="Dana", from_="staff:sam", now=clock())

    assert control["staff"] == {"id": "staff:dana", "name": "Dana"}
    entry = last_entry(held_by_sam)
    assert entry.kind == "control_taken" and entry.actor == "staff:dana"
    assert entry.payload["from"] == "staff:sam" and "by" not in entry.payload
    assert state(held_by_sam)["control_changes"][-1]["staff"] == {"id": "staff:dana", "name": "Dana"}
    with pytest.raises(ControlConflict):
        handoff.staff_message(conversation_id=held_by_sam, staff="staff:sam", text="still me", now=clock())


def test_a_take_over_from_someone_who_no_longer_holds_it_is_refused_naming_who_does(held_by_sam, clock):
    handoff.take_control(conversation_id=held_by_sam, staff="staff:lee", name="Lee", from_="staff:sam", now=clock())

    with pytest.raises(ControlConflict) as caught:
        handoff.take_control(conversation_id=held_by_sam, staff="staff:dana", name="Dana", from_="staff:sam", now=clock())

    assert caught.value.details["holder"] == {"id": "staff:lee", "name": "Lee"}
    assert caught.value.message == "Lee already has this conversation."


def test_two_colleagues_rescuing_at_once_leave_exactly_one_holder(held_by_sam, clock):
    rescuers, guard = iter([("staff:dana", "Dana"), ("staff:lee", "Lee")]), threading.Lock()

    def rescue():
        with guard:
            staff, name = next(rescuers)
        return handoff.take_control(conversation_id=held_by_sam, staff=staff, name=name, from_="staff:sam", now=clock())

    outcomes = together(2, rescue)

    won = [o for o in outcomes if isinstance(o, dict)]
    lost = [o for o in outcomes if isinstance(o, ControlConflict)]
    assert len(won) == 1 and len(lost) == 1, outcomes
    assert lost[0].details["holder"] == won[0]["staff"]
    taken = [e for e in store.read(held_by_sam) if e.kind == "control_taken"]
    assert [e.payload.get("from", "") for e in taken] == ["", "staff:sam"]
    assert replay(held_by_sam).ok and verify(held_by_sam).ok


def test_the_holder_hands_it_to_a_named_colleague(held_by_sam, clock):
    control = handoff.assign_control(conversation_id=held_by_sam, staff="staff:sam", to="staff:dana", to_name="Dana", now=clock())

    assert control["mode"] == "human" and control["staff"] == {"id": "staff:dana", "name": "Dana"}
    entry = last_entry(held_by_sam)
    assert entry.kind == "control_taken" and entry.actor == "staff:sam"
    assert entry.payload == {"staff": "staff:dana", "name": "Dana", "reason": "", "from": "staff:sam", "by": "staff:sam"}
    handoff.staff_message(conversation_id=held_by_sam, staff="staff:dana", text="Dana here.", now=clock())


def test_only_the_holder_hands_it_on_unless_the_holder_is_named(held_by_sam, clock):
    with pytest.raises(ControlConflict):
        handoff.assign_control(conversation_id=held_by_sam, staff="staff:lee", to="staff:dana", now=clock())
    assert state(held_by_sam)["control"]["staff"]["id"] == "staff:sam"

    handoff.assign_control(conversation_id=held_by_sam, staff="staff:lee", to="staff:dana", from_="staff:sam", now=clock())

    assert state(held_by_sam)["control"]["staff"]["id"] == "staff:dana"


def test_a_waiting_conversation_is_handed_to_a_colleague_by_anyone(start, make_assistant, clock):
    cid = start("hello", assistant=make_assistant(handoff=HANDOFF))["conversation_id"]
    handoff.request_handoff(conversation_id=cid, source="customer", requested_by="guest:alice", now=clock())

    control = handoff.assign_control(conversation_id=cid, staff="staff:lead", to="staff:dana", to_name="Dana", now=clock())

    assert control["staff"]["id"] == "staff:dana"
    assert last_entry(cid).payload == {"staff": "staff:dana", "name": "Dana", "reason": "", "by": "staff:lead"}


def test_someone_else_hands_it_back_only_by_naming_the_holder(held_by_sam, clock):
    with pytest.raises(ControlConflict):
        handoff.return_control(conversation_id=held_by_sam, staff="staff:admin", now=clock())

    control = handoff.return_control(conversation_id=held_by_sam, staff="staff:admin", name="Ada", from_="staff:sam", now=clock())

    assert control["mode"] == "agent"
    entry = last_entry(held_by_sam)
    assert entry.kind == "control_returned" and entry.payload == {"staff": "staff:admin", "name": "Ada", "note": "", "from": "staff:sam"}


def test_a_malformed_colleague_is_bad_input_and_changes_nothing(held_by_sam, clock):
    before = len(store.read(held_by_sam))
    with pytest.raises(BadInput, match="from must be a staff persona"):
        handoff.take_control(conversation_id=held_by_sam, staff="staff:dana", from_="sam", now=clock())
    with pytest.raises(BadInput, match="to must be a staff persona"):
        handoff.assign_control(conversation_id=held_by_sam, staff="staff:sam", to="guest:bob", now=clock())
    assert len(store.read(held_by_sam)) == before


def test_agent_to_queued_to_sam_to_dana_to_agent_replays_and_verifies(held_by_sam, clock):
    handoff.staff_message(conversation_id=held_by_sam, staff="staff:sam", text="Sam here.", now=clock())
    handoff.take_control(conversation_id=held_by_sam, staff="staff:dana", name="Dana", from_="staff:sam", now=clock())
    handoff.staff_message(conversation_id=held_by_sam, staff="staff:dana", text="Dana here.", now=clock())
    handoff.return_control(conversation_id=held_by_sam, staff="staff:dana", note="sorted", now=clock())

    report = replay(held_by_sam)
    assert report.ok, report.differences
    assert verify(held_by_sam).ok
    changes = state(held_by_sam)["control_changes"]
    assert [(c["kind"], (c["staff"] or {}).get("id")) for c in changes] == [
        ("handoff_requested", None), ("control_taken", "staff:sam"), ("control_taken", "staff:dana"), ("control_returned", "staff:dana")]


def test_entries_written_before_from_existed_read_and_hash_as_they_did(held_by_sam):
    taken = next(e for e in store.read(held_by_sam) if e.kind == "control_taken")
    assert taken.payload == {"staff": "staff:sam", "name": "Sam", "reason": ""}
    assert taken.body == ControlTaken(staff="staff:sam", name="Sam")
