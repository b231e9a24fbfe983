"""
turns: what a turn commits, the database's raw limit for that many commits, and Waypoint's turns
sequential and on 8 concurrent conversations; with --profile, 40 turns and 40 page pushes profiled.
"""

from __future__ import annotations

import json
import time
import uuid

from bench.conversations import (
    CONCURRENCY,
    CONVERSATION_TURNS,
    bench_assistant,
    new_conversation,
    one_turn,
    waypoint_turns,
)
from bench.environment import ROOT
from bench.peers import fan_out
from bench.report import Report, Row, Target
from devservers.processes import ServerDatabase

PROFILE = ROOT / "bench" / "profile.txt"
PUSH_PROFILE = ROOT / "bench" / "profile-push.txt"


class QueryCounter:
    """Count statements, transactions and write commits of one thread's Django connection."""

    def __init__(self):
        self.queries = 0
        self.round_trips = 0  # statements sent at once count once
        self.commits = 0  # transactions that wrote something, committed
        self.statements: dict[str, int] = {}
        self._writes = False

    def __call__(self, execute, sql, params, many, context):
        from django.db import connection

        from apps.ledger.sql import STATEMENT_SEPARATOR

        self.round_trips += 1
        write = False
        for one in sql.split(STATEMENT_SEPARATOR):  # the store sends an append's statements together
            # an update whose one row the server checks is sent inside a WITH (store.commit_optimistic)
            verb = one.lstrip().removeprefix("WITH changed AS (").split(None, 1)[0].upper()
            self.queries += 1
            self.statements[verb] = self.statements.get(verb, 0) + 1
            write |= verb in ("INSERT", "UPDATE", "DELETE")
        if connection.in_atomic_block:
            self._writes |= write
        elif write:
            self.commits += 1  # autocommit: the statement is its own transaction
        return execute(sql, params, many, context)

    def committed(self) -> None:
        if self._writes:
            self.commits += 1
        self._writes = False


def count_turn(make_turn) -> QueryCounter:
    """Run one turn with every statement and commit of this thread counted."""
    from django.db import connection

    counter = QueryCounter()
    original = connection.commit

    def commit():
        original()
        counter.committed()

    connection.commit = commit
    try:
        with connection.execute_wrapper(counter):
            make_turn()
    finally:
        del connection.commit
    return counter


def check_turns_completed(expected: int) -> None:
    from apps.runs.models import WorkflowLog

    done = WorkflowLog.objects.filter(status="completed").count()
    if done < expected:
        raise RuntimeError(f"only {done} of {expected} bench turns completed")


def raw_limit(url: str, *, commits_per_turn: int, turns: int, connections: int) -> dict:
    """
    The database's limit for this turn shape: psycopg, `commits_per_turn` single-row commits per turn.

    Each commit inserts one event-sized row (~600 bytes, unique (conversation, seq)), the smallest
    durable write a turn step can make.
    """
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS raw_limit (id bigserial PRIMARY KEY, conversation uuid NOT NULL, "
                     "seq integer NOT NULL, payload text NOT NULL, UNIQUE (conversation, seq))")
    payload = json.dumps({"run_id": "run_" + "0" * 20, "text": "x" * 500})

    def worker() -> list[float]:
        mine = []
        with psycopg.connect(url) as conn:
            for _ in range(turns // connections):
                conversation = uuid.uuid4()
                began = time.perf_counter()
                for seq in range(commits_per_turn):
                    conn.execute("INSERT INTO raw_limit (conversation, seq, payload) VALUES (%s, %s, %s)",
                                 (conversation, seq, payload))
                    conn.commit()
                mine.append(time.perf_counter() - began)
        return mine

    return fan_out(worker, threads=connections)


def section_turns(report: Report, database: ServerDatabase, *, quick: bool, profile: bool) -> None:
    assistant = bench_assistant()
    warm = new_conversation(assistant)
    for i in range(3):
        one_turn(warm, i)
    counted = count_turn(lambda: one_turn(warm, 99))
    report.figures["queries_per_turn"] = counted.queries
    report.figures["commits_per_turn"] = counted.commits
    report.facts["statements per turn"] = ", ".join(f"{v} {k}" for k, v in sorted(counted.statements.items()))
    report.facts["statements per turn"] += f" in {counted.round_trips} round trips"
    print(f"one turn: {counted.queries} statements, {counted.commits} write commits ({report.facts['statements per turn']})")

    if profile:
        run_profile(assistant)
        run_push_profile(assistant)

    turns = 80 if quick else 160
    raw1 = raw_limit(database.url, commits_per_turn=counted.commits, turns=turns, connections=1)
    raw8 = raw_limit(database.url, commits_per_turn=counted.commits, turns=turns, connections=CONCURRENCY)
    seq = waypoint_turns(assistant, turns=turns, concurrency=1)
    conc = waypoint_turns(assistant, turns=turns, concurrency=CONCURRENCY)
    check_turns_completed(2 * turns)
    commits = counted.commits
    r1 = report.latency_row("turns", f"raw limit: psycopg, {commits} commits/turn, 1 connection", raw1["latencies"], wall=raw1["wall"])
    r8 = report.latency_row("turns", f"raw limit: psycopg, {commits} commits/turn, {CONCURRENCY} connections", raw8["latencies"], wall=raw8["wall"])
    w1 = report.latency_row("turns", "Waypoint turn (3 echo rounds + reply), sequential", seq["latencies"], wall=seq["wall"],
                            note=f"{counted.queries} statements in {counted.round_trips} round trips/turn, "
                                 f"Python CPU {seq['cpu'] / turns * 1000:.1f} ms/turn")
    w8 = report.latency_row("turns", f"Waypoint turn, {CONCURRENCY} concurrent conversations", conc["latencies"], wall=conc["wall"])
    report.figures.update(raw1=r1.rate, raw8=r8.rate, waypoint1=w1.rate, waypoint8=w8.rate)
    w1.note += f"; {w1.rate / r1.rate:.0%} of the raw limit"
    w8.note = f"{w8.rate / r8.rate:.0%} of the raw limit with {CONCURRENCY} connections"
    best = max(w1.rate, w8.rate)
    report.headline.append(Row("core turn", f"Waypoint ÷ the raw limit ({commits} psycopg commits per turn)", note=(
        f"{w1.rate / r1.rate:.2f}× sequential, {w8.rate / r8.rate:.2f}× at {CONCURRENCY} connections")))
    report.targets.append(Target("Waypoint ≥ 50 % of the raw limit (same commits per turn, one connection)",
                                 f"{w1.rate / r1.rate:.0%} sequential ({w1.rate:.1f} vs {r1.rate:.1f} turns/s)",
                                 w1.rate / r1.rate >= 0.5))
    report.figures["waypoint_best"] = best


def run_profile(assistant) -> None:
    """Profile sequential turns with pyinstrument; the text report goes to bench/profile.txt."""
    from pyinstrument import Profiler

    conversation = new_conversation(assistant)
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for i in range(40):
        if i and i % CONVERSATION_TURNS == 0:
            conversation = new_conversation(assistant)
        one_turn(conversation, i)
    profiler.stop()
    PROFILE.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    print(f"profile of 40 turns written to {PROFILE.relative_to(ROOT)}")


def run_push_profile(assistant) -> None:
    """
    Profile the push a page socket is sent after each of 40 turns (format=html, the state after the
    head it showed, rendered), in this process, with the push caches emptied before each: what a
    page socket costs Daphne besides the turn. The text report goes to bench/profile-push.txt.
    """
    from pyinstrument import Profiler

    from apps.conversations import queries, tokens
    from apps.widget import pushes

    conversation = new_conversation(assistant)
    token = tokens.issue(conversation_id=conversation, persona="guest:bench", edge="link")
    viewer = pushes.Viewer(token=token, persona="guest:bench", permissions=frozenset(tokens.PERMISSIONS), embed=None)

    def load():
        return queries.conversation_for(conversation)

    shown = pushes.html(conversation, viewer=viewer, since=None, announced=queries.conversation_head(conversation), load=load).shown
    profiler = Profiler(interval=0.0001)
    for i in range(40):
        one_turn(conversation, i)
        head = queries.conversation_head(conversation)
        pushes._pushes.held.clear()
        pushes._states.held.clear()
        profiler.start()
        tokens.resolve(token)  # every push checks the socket's token first (consumers.py)
        shown = pushes.html(conversation, viewer=viewer, since=shown, announced=head, load=load).shown
        profiler.stop()
    PUSH_PROFILE.write_text(profiler.output_text(unicode=True, color=False, show_all=False))
    print(f"profile of 40 pushes written to {PUSH_PROFILE.relative_to(ROOT)}")
