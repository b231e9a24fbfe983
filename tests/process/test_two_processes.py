"""
Two real Daphne processes on one PostgreSQL database and one Redis channel layer behave as one service:
pushes cross processes, and each conversation has exactly one writer, by the database lease.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest
import redis
from websockets.sync.client import connect

from tests.process import probe
from tests.process.outside import Customer, Rows, wait_for
from tests.servers import DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"

NAPPER = {
    "name": "Napper",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "marathon", "steps": [{"call": "nap", "arguments": {"seconds": 4.5}}, {"say": "Rested long."}]},
            {"match": "long", "steps": [{"call": "nap", "arguments": {"seconds": 1.5}}, {"say": "Rested a while."}]},
            {"match": "nap", "steps": [{"call": "nap", "arguments": {"seconds": 0.3}}, {"say": "Rested: {message}"}]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [{"name": "nap", "kind": "server", "action": "sleep"}],
}


def holder_pid(holder: str) -> int:
    """The process id inside a lease holder name (`host:pid:nonce`)."""
    return int(holder.split(":")[1])


class Pair:
    """Two servers on one database and one Redis, and the conversations the tests use."""

    def __init__(self):
        try:
            redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
        except redis.RedisError as exc:
            pytest.skip(f"needs Redis at {REDIS_URL} for the channel layer (set REDIS_URL): {exc}")
        self.database = ServerDatabase("pair")
        self.rows = Rows(self.database.url)
        made = probe.run(self.database, "lab", config=NAPPER, conversations=5, message="hello")
        self.customers = [Customer(c["conversation_id"], c["token"]) for c in made["conversations"]]
        self.servers = [DaphneServer(self.database, env={"REDIS_URL": REDIS_URL}) for _ in range(2)]
        for server in self.servers:
            server.start(wait=False)
        for server in self.servers:
            server.wait_ready()

    def close(self) -> None:
        for server in self.servers:
            server.kill()
        self.database.drop()


@pytest.fixture(scope="module")
def pair():
    made = Pair()
    try:
        yield made
    finally:
        made.close()


class LeaseWatcher(threading.Thread):
    """Samples one conversation's lease row until stopped: (holder, version) as other readers see it."""

    def __init__(self, rows: Rows, conversation_id: str):
        super().__init__(daemon=True)
        self.rows, self.conversation_id = rows, conversation_id
        self.samples: list[tuple[str, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.01):
            row = self.rows.lease(self.conversation_id)
            if row is not None:
                self.samples.append((row["holder"], row["version"]))

    def stop(self) -> list[tuple[str, int]]:
        self.stopped.set()
        self.join()
        return self.samples


def turn_blocks(events: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Each turn's positions in the log, in order."""
    blocks: dict[str, list[int]] = {}
    for position, event in enumerate(events):
        if event["turn_id"]:
            blocks.setdefault(event["turn_id"], []).append(position)
    return blocks


def send_until_accepted(customer: Customer, server: DaphneServer, messages: list[str], deadline: float) -> list[int]:
    """Post each message until the server accepts it (302); a turn still open answers 409 turn_conflict."""
    statuses = []
    for message in messages:
        while True:
            status = customer.send(server, message)
            statuses.append(status)
            if status == 302 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    return statuses


class TestPushAcrossProcesses:
    def test_a_message_sent_to_one_process_is_pushed_to_a_socket_on_the_other(self, pair):
        customer = pair.customers[0]
        a, b = pair.servers
        url = f"ws://127.0.0.1:{b.port}/ws/conversations/{customer.conversation_id}/?token={customer.token}&format=json"
        seen: list[dict[str, Any]] = []

        with connect(url, origin=f"http://127.0.0.1:{b.port}", open_timeout=10) as socket:
            seen.append(json.loads(socket.recv(timeout=10)))
            assert customer.send(a, "ping across processes") == 302
            deadline = time.monotonic() + 10
            while not any(m["text"] == "You said: ping across processes" for m in seen[-1].get("state", {}).get("messages", [])):
                seen.append(json.loads(socket.recv(timeout=max(0.1, deadline - time.monotonic()))))

        assert seen[0]["type"] == "state"
        assert seen[-1]["state"]["run_status"] == "completed"


class TestOneWriter:
    def test_turns_started_through_both_processes_never_interleave(self, pair):
        customer = pair.customers[1]
        seeded = pair.rows.events(customer.conversation_id)[-1]["seq"]
        watcher = LeaseWatcher(pair.rows, customer.conversation_id)
        watcher.start()
        deadline = time.monotonic() + 60
        statuses: dict[int, list[int]] = {}
        senders = [
            threading.Thread(target=lambda i=i, s=s: statuses.__setitem__(
                i, send_until_accepted(customer, s, [f"nap {i}.{n}" for n in range(3)], deadline)))
            for i, s in enumerate(pair.servers)
        ]

        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        turns = wait_for(lambda: (t := pair.rows.turns_after(customer.conversation_id, seeded)) and len(t) == 6 and t,
                         timeout=10, what="six turns")
        wait_for(lambda: all(pair.rows.turn_ended(t, "completed") for t in turns), timeout=20, what="every turn to complete")
        samples = watcher.stop()

        events = [e for e in pair.rows.events(customer.conversation_id) if e["seq"] > seeded]
        assert all(set(s) <= {302, 409} for s in statuses.values()) and [s.count(302) for s in statuses.values()] == [3, 3]
        for positions in turn_blocks(events).values():
            assert positions == list(range(positions[0], positions[-1] + 1))
        for turn_id in turns:
            kinds = [e["kind"] for e in events if e["turn_id"] == turn_id]
            assert kinds == ["turn_dispatched", "model_round", "action_started", "action_finished", "model_round", "turn_complete"]
        assert not [e for e in events if e["kind"] == "turn_retried"]
        versions = [v for _, v in samples]
        assert versions == sorted(versions)
        holders: dict[int, set[str]] = {}
        for holder, version in samples:
            if holder:
                holders.setdefault(version, set()).add(holder)
        assert all(len(h) == 1 for h in holders.values())
        assert {holder_pid(h) for hs in holders.values() for h in hs} == {s.proc.pid for s in pair.servers}

    def test_a_step_longer_than_the_lease_keeps_its_writer_while_the_heartbeat_renews_it(self, pair):
        customer = pair.customers[2]
        seeded = pair.rows.events(customer.conversation_id)[-1]["seq"]
        watcher = LeaseWatcher(pair.rows, customer.conversation_id)
        watcher.start()

        assert customer.send(pair.servers[0], "marathon") == 302
        [turn_id] = wait_for(lambda: pair.rows.turns_after(customer.conversation_id, seeded), timeout=10, what="the turn")
        wait_for(lambda: pair.rows.turn_ended(turn_id, "completed"), timeout=20, what="the turn to complete")
        samples = watcher.stop()

        kinds = [e["kind"] for e in pair.rows.events(customer.conversation_id) if e["turn_id"] == turn_id]
        assert kinds == ["turn_dispatched", "model_round", "action_started", "action_finished", "model_round", "turn_complete"]
        assert {holder_pid(h) for h, _ in samples if h} == {pair.servers[0].proc.pid}
        assert len({v for h, v in samples if h}) == 1


    def test_a_writer_releases_the_lease_when_its_drive_ends(self, pair):
        customer = pair.customers[4]
        seeded = pair.rows.events(customer.conversation_id)[-1]["seq"]

        assert customer.send(pair.servers[1], "nap once") == 302
        [turn_id] = wait_for(lambda: pair.rows.turns_after(customer.conversation_id, seeded), timeout=10, what="the turn")
        wait_for(lambda: pair.rows.turn_ended(turn_id, "completed"), timeout=10, what="the turn to complete")

        released = wait_for(lambda: (row := pair.rows.lease(customer.conversation_id)) and row["holder"] == "" and row,
                            timeout=5, what="the lease to be released")
        assert released["expires_at"] is None


class TestTakeover:
    def test_killing_the_lease_holder_mid_turn_lets_one_of_the_others_finish_the_turn(self, pair):
        customer = pair.customers[3]
        seeded = pair.rows.events(customer.conversation_id)[-1]["seq"]
        third = DaphneServer(pair.database, env={"REDIS_URL": REDIS_URL}).start(wait=False)
        everyone = [*pair.servers, third]
        try:
            third.wait_ready()
            watcher = LeaseWatcher(pair.rows, customer.conversation_id)
            watcher.start()
            assert customer.send(pair.servers[0], "long nap") == 302
            [turn_id] = wait_for(lambda: pair.rows.turns_after(customer.conversation_id, seeded), timeout=10, what="the turn")
            started = wait_for(
                lambda: [e for e in pair.rows.events(customer.conversation_id)
                         if e["turn_id"] == turn_id and e["kind"] == "action_started"],
                timeout=10, what="the action to start",
            )[0]
            before = pair.rows.lease(customer.conversation_id)
            holder = next(s for s in everyone if s.proc.pid == holder_pid(before["holder"]))

            holder.kill()
            killed_at = time.monotonic()
            wait_for(lambda: pair.rows.turn_ended(turn_id, "completed"), timeout=15, what="another process to finish the turn")
            took = time.monotonic() - killed_at
            samples = watcher.stop()
        finally:
            third.kill()

        events = [e for e in pair.rows.events(customer.conversation_id) if e["seq"] > seeded]
        assert {e["turn_id"] for e in events} == {turn_id}
        assert [e["kind"] for e in events] == [
            "turn_dispatched", "model_round", "action_started",
            "turn_retried", "action_started", "action_finished", "model_round", "turn_complete",
        ]
        retried = next(e for e in events if e["kind"] == "turn_retried")["payload"]
        assert (retried["attempt"], retried["after_seq"]) == (1, started["seq"])
        assert [e["payload"]["attempt"] for e in events if e["kind"] == "action_started"] == [1, 2]
        assert took < 10
        holders: dict[int, set[str]] = {}
        for name, version in samples:
            if name:
                holders.setdefault(version, set()).add(name)
        assert all(len(names) == 1 for names in holders.values())
        [taken_over] = holders[min(v for v in holders if v > before["version"])]
        assert holder_pid(taken_over) in {s.proc.pid for s in everyone if s is not holder}
