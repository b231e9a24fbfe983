import threading

import pytest
from django.db import connection

from apps.agent import actions
from apps.conversations.errors import IdempotencyKeyReused, TurnConflict
from apps.ledger import store
from apps.ledger.replay import replay, verify
from tests.core.logs import state

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def together(n: int, call) -> list:
    """Run `call()` in n threads released at the same moment; return each result or raised exception."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def one(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = call()
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    return results


def dispatched(cid: str) -> list:
    return [e for e in store.read(cid) if e.kind == "turn_dispatched"]


class TestOneHead:
    def test_twenty_callers_at_one_head_open_exactly_one_turn(self, start, clock):
        cid = start("hello")["conversation_id"]
        head = state(cid)["seq"]

        results = together(20, lambda: actions.start_turn(
            conversation_id=cid, message="me first", persona="guest:alice", edge="api", now=clock(), expected_seq=head))

        won = [r for r in results if isinstance(r, dict)]
        lost = [r for r in results if isinstance(r, TurnConflict)]
        assert len(won) == 1 and len(lost) == 19, results
        assert {(e.code, e.status) for e in lost} == {("turn_conflict", 409)}
        assert [e.turn_id for e in dispatched(cid)][1:] == [won[0]["turn_id"]]
        assert state(cid)["messages"][-1]["text"] == "You said: me first"
        assert verify(cid).ok and replay(cid).ok


class TestIdempotencyKey:
    def test_ten_exact_retries_at_once_get_one_turn(self, start, clock):
        cid = start("hello")["conversation_id"]
        key = actions.Idempotency(scope=f"turn:{cid}", key="retry-me", request={"message": "once please"})

        results = together(10, lambda: actions.start_turn(
            conversation_id=cid, message="once please", persona="guest:alice", edge="api", now=clock(), idempotency=key))

        assert all(isinstance(r, dict) for r in results), results
        assert len({r["turn_id"] for r in results}) == 1
        assert [e.payload["idempotency_key"] for e in dispatched(cid)] == ["", "retry-me"]
        assert replay(cid).ok

    def test_the_same_key_with_a_different_body_is_refused(self, start, clock):
        cid = start("hello")["conversation_id"]
        first = actions.Idempotency(scope=f"turn:{cid}", key="k1", request={"message": "one"})
        actions.start_turn(conversation_id=cid, message="one", persona="guest:alice", edge="api", now=clock(), idempotency=first)
        head = state(cid)["seq"]

        with pytest.raises(IdempotencyKeyReused) as caught:
            actions.start_turn(conversation_id=cid, message="two", persona="guest:alice", edge="api", now=clock(),
                               idempotency=actions.Idempotency(scope=f"turn:{cid}", key="k1", request={"message": "two"}))

        assert (caught.value.code, caught.value.status) == ("idempotency_key_reused", 422)
        assert state(cid)["seq"] == head
