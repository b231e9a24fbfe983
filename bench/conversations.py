"""
The bench's assistant and the conversations it measures on: its turn (three echo rounds and a reply),
run through the real turn code in this process, and conversations built long without running turns.
"""

from __future__ import annotations

import json
import time

from bench.peers import fan_out
from devservers.processes import ServerDatabase

ROUNDS = 3
CONCURRENCY = 8
CONVERSATION_TURNS = 10  # turns per conversation before the next one starts (as the peers do)

BENCH_CONFIG = {
    "name": "Bench",
    "step_budget": 8,
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "order", "steps": [
                {"call": "lookup_order", "arguments": {"order_id": "A-1", "round": 1}},
                {"call": "lookup_order", "arguments": {"order_id": "A-1", "round": 2}},
                {"call": "lookup_order", "arguments": {"order_id": "A-1", "round": 3}},
                {"say": "Done: {result}"},
            ]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [{"name": "lookup_order", "kind": "server", "action": "echo"}],
}


def bench_assistant():
    from apps.agent.actions import create_assistant

    return create_assistant(config=BENCH_CONFIG)


def assistant_in(database: ServerDatabase) -> str:
    """Create the bench assistant in a database of the servers' (not this process's); its id."""
    text = json.dumps(BENCH_CONFIG)
    out = database.manage("shell", "-c", "import json; from apps.agent.actions import create_assistant; "
                                         f"print(create_assistant(config=json.loads({text!r})).id)")
    return out.strip().splitlines()[-1]


def new_conversation(assistant) -> str:
    from django.utils import timezone

    from apps.agent import actions

    started = actions.start_conversation(assistant_id=str(assistant.id), message="hello", persona="guest:bench",
                                         edge="api", now=timezone.now())
    return started["conversation_id"]


def one_turn(conversation_id: str, i: int) -> None:
    from django.utils import timezone

    from apps.agent import actions

    actions.start_turn(conversation_id=conversation_id, message=f"where is my order ({i})", persona="guest:bench",
                       edge="api", now=timezone.now())


def waypoint_turns(assistant, *, turns: int, concurrency: int) -> dict:
    """`turns` turns over `concurrency` threads, each on its own conversations of CONVERSATION_TURNS turns."""
    from django.db import connection

    failures: list[BaseException] = []

    def worker() -> list[float]:
        mine = []
        try:
            conversation = ""
            for i in range(turns // concurrency):
                if i % CONVERSATION_TURNS == 0:
                    conversation = new_conversation(assistant)
                began = time.perf_counter()
                one_turn(conversation, i)
                mine.append(time.perf_counter() - began)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            failures.append(exc)
        finally:
            connection.close()
        return mine

    measured = fan_out(worker, threads=concurrency)
    if failures:
        raise failures[0]
    return measured


def new_conversations(n: int, assistant, *, threads: int = 1) -> list[tuple[str, str]]:
    """`n` new conversations (a first turn each) and a token for each; made on `threads` threads."""
    from django.db import connection

    from apps.conversations import tokens

    def worker() -> list[float]:
        try:
            for _ in range(n // threads):
                cid = new_conversation(assistant)
                made.append((cid, tokens.issue(conversation_id=cid, persona="guest:bench", edge="api")))
        finally:
            connection.close()
        return []

    made: list[tuple[str, str]] = []
    fan_out(worker, threads=threads)
    return made


def long_conversation(assistant, *, messages: int) -> tuple[str, str]:
    """A conversation of `messages` chat messages (committed turns of a fallback reply); returns (id, token)."""
    from django.db import transaction
    from django.utils import timezone

    from apps.conversations import tokens
    from apps.conversations.actions import new_id
    from apps.conversations.models import Conversation
    from apps.ledger import store
    from apps.ledger.types import ModelRound, TurnComplete, TurnDispatched

    cid = new_conversation(assistant)  # 2 messages
    with transaction.atomic():  # one commit for all the turns: only their entries matter here
        for n in range((messages - 2) // 2):
            run_id, turn_id = new_id("run"), new_id("turn")
            text = f"message {n}: " + "lorem ipsum dolor sit amet " * 4
            conversation = Conversation.objects.select_for_update(no_key=True).get(id=cid)
            store.append(conversation, turn_id=turn_id, actor="guest:bench", now=timezone.now(), events=[
                             TurnDispatched(run_id=run_id, message_id=new_id("msg"), text=text, edge="api", caller="guest:bench",
                                            participants=["guest:bench"]),
                             ModelRound(run_id=run_id, round=1, text=f"You said: {text}", usage={"rounds": 1}),
                             TurnComplete(run_id=run_id, message_id=new_id("msg"), text=f"You said: {text}"),
                         ])
    return cid, tokens.issue(conversation_id=cid, persona="guest:bench", edge="api")


def ten_thousand_events(assistant) -> str:
    """A conversation of >= 10,000 log entries shaped like real turns (3 echo rounds and a reply each)."""
    from django.db import transaction
    from django.utils import timezone

    from apps.conversations.actions import new_id
    from apps.conversations.models import Conversation
    from apps.ledger import store
    from apps.ledger.types import ActionFinished, ActionStarted, ModelRound, TurnComplete, TurnDispatched

    cid = new_conversation(assistant)
    while Conversation.objects.get(id=cid).head_seq < 10_000:
        run_id, turn_id = new_id("run"), new_id("turn")
        events = [TurnDispatched(run_id=run_id, message_id=new_id("msg"), text="where is my order", edge="api",
                                 caller="guest:bench", participants=["guest:bench"])]
        for r in range(1, ROUNDS + 1):
            call = {"call_id": f"call_{r}_1", "tool": "lookup_order", "arguments": {"order_id": "A-1", "round": r}}
            events += [
                ModelRound(run_id=run_id, round=r, calls=[call], usage={"rounds": 1}),
                ActionStarted(run_id=run_id, call_id=call["call_id"], tool="lookup_order", action="echo",
                              arguments=call["arguments"], side_effecting=False, idempotency_key=f"{turn_id}:{call['call_id']}"),
                ActionFinished(run_id=run_id, call_id=call["call_id"], tool="lookup_order", ok=True, output=call["arguments"]),
            ]
        events += [ModelRound(run_id=run_id, round=ROUNDS + 1, text="Done", usage={"rounds": 1}),
                   TurnComplete(run_id=run_id, message_id=new_id("msg"), text="Done")]
        with transaction.atomic():
            conversation = Conversation.objects.select_for_update(no_key=True).get(id=cid)
            store.append(conversation, turn_id=turn_id, actor="agent", now=timezone.now(), events=events)
    return cid
