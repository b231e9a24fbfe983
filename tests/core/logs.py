"""Helpers for the log tests: answering pending calls, a conversation of a few turns, tampering as an attacker."""

from __future__ import annotations

import contextlib

from django.db import connection, transaction

from apps.agent import actions, answers
from apps.agent.state import conversation_state
from apps.conversations import queries
from apps.ledger.models import Event


def state(cid: str) -> dict:
    return conversation_state(queries.conversation_for(cid))


def answer(cid: str, output: dict, clock, persona: str = "guest:alice") -> None:
    """Answer the one pending call of the conversation's latest run."""
    s = state(cid)
    [call] = s["pending_client_actions"]
    answers.accept_results(conversation_id=cid, run_id=s["run_id"], results=[{"call_id": call["call_id"], "output": output}],
                           persona=persona, now=clock())


def approve(cid: str, clock, decision: str = "approve", persona: str = "guest:alice") -> None:
    """Answer the pending approval with exactly the call it shows."""
    [call] = state(cid)["pending_client_actions"]
    answer(cid, {"decision": decision, "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}, clock, persona)


def turn(cid: str, message: str, clock, persona: str = "guest:alice") -> dict:
    return actions.start_turn(conversation_id=cid, message=message, persona=persona, edge="api", now=clock())


def few_turns(start, clock) -> str:
    """A conversation of three turns: a plain reply, a server tool with an approval, a client tool."""
    cid = start("hello")["conversation_id"]
    turn(cid, "I want a refund", clock)
    approve(cid, clock)
    turn(cid, "when can you deliver?", clock)
    answer(cid, {"label": "2026-12-24"}, clock)
    return cid


def seqs(cid: str) -> list[int]:
    return list(Event.objects.filter(conversation_id=cid).order_by("seq").values_list("seq", flat=True))


def tamper(sql: str, params: dict) -> None:
    """Change ledger_event rows with raw SQL, as someone with database access would: open the gate first."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL waypoint.repair = 'on'")
        cursor.execute(sql, params)


@contextlib.contextmanager
def undone():
    """Run the block in a transaction that is rolled back at the end, so one log serves many tamperings."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def flip(column: str, cid: str, seq: int, where: float) -> None:
    """XOR the lowest bit of one character of a text column; `where` 0 is the first character, 1 the last."""
    tamper(
        f"UPDATE ledger_event SET {column} = overlay({column} placing chr(ascii(substr({column}, p.i, 1)) # 1) from p.i for 1) "
        f"FROM (SELECT greatest(1, ceil(length({column}) * %(where)s))::int AS i FROM ledger_event "
        "      WHERE conversation_id = %(cid)s AND seq = %(seq)s) AS p "
        "WHERE conversation_id = %(cid)s AND seq = %(seq)s",
        {"cid": cid, "seq": seq, "where": where},
    )


def swap(cid: str, a: int, b: int) -> None:
    """Exchange the seq of two entries (through a free seq, since (conversation, seq) is unique)."""
    for old, new in ((a, 0), (b, a), (0, b)):
        tamper("UPDATE ledger_event SET seq = %(new)s WHERE conversation_id = %(cid)s AND seq = %(old)s",
               {"cid": cid, "old": old, "new": new})


def corrupt_payload(cid: str, seq: int) -> None:
    """Make one entry's payload unreadable: cut it so it no longer parses as JSON."""
    tamper("UPDATE ledger_event SET payload = left(payload, length(payload) / 2) WHERE conversation_id = %(cid)s AND seq = %(seq)s",
           {"cid": cid, "seq": seq})
