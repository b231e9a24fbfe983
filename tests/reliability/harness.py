"""
The randomized crash lab: real Daphne processes killed at random points of random turns, driven
from outside through the customer page forms, and the global invariants checked afterwards.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import psycopg
from psycopg.rows import dict_row

from tests.fakes.receiver import Receiver
from tests.servers import DaphneServer, ServerDatabase

SETTLE_SECONDS = 25.0  # PRODUCT.md allows 10 s for recovery after a restart; this machine is shared
SHAPES = ("echo", "webhook", "client", "approval")
BOUNDARIES = (
    "before_batch_one", "after_batch_one", "after_model_round", "during_action",
    "after_result_accepted", "before_batch_two", "after_batch_two",
)  # apps/conversations/faults.BOUNDARIES, read without importing Django settings
MESSAGES = {"echo": "lookup my order", "webhook": "refund please", "client": "when can you deliver", "approval": "approve a refund"}
SETTLED = ("completed", "interrupted", "failed", "waiting")


def crash_config(webhook_url: str) -> dict[str, Any]:
    return {
        "name": "Crash lab",
        "model": {
            "provider": "scripted",
            "rules": [
                {"match": "lookup", "steps": [
                    {"call": "lookup", "arguments": {"n": 1}},
                    {"call": "lookup", "arguments": {"n": 2}},
                    {"say": "Found {result}"},
                ]},
                {"match": "refund please", "steps": [
                    {"say": "Refunding now.", "call": "refund", "arguments": {"order_id": "A-1"}},
                    {"say": "Refund issued: {result}"},
                ]},
                {"match": "when", "steps": [
                    {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                    {"say": "Booked for {result}."},
                ]},
                {"match": "approve", "steps": [
                    {"call": "careful_refund", "arguments": {"order_id": "A-2", "amount": 20}},
                    {"say": "Approved refund: {result}"},
                ]},
            ],
            "fallback": [{"say": "You said: {message}"}],
        },
        "tools": [
            {"name": "lookup", "kind": "server", "action": "echo"},
            {"name": "refund", "kind": "server", "action": "webhook", "url": webhook_url},
            {"name": "careful_refund", "kind": "server", "action": "webhook", "url": webhook_url, "requires_approval": True},
            {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
        ],
    }


class Rows:
    """Plain-SQL reads of the servers' database, from outside the servers."""

    def __init__(self, url: str):
        self.url = url

    def all(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with psycopg.connect(self.url, autocommit=True, row_factory=dict_row) as conn:
            return conn.execute(sql, params).fetchall()

    def latest_run(self, conversation_id: str) -> dict[str, Any] | None:
        rows = self.all("SELECT * FROM workflow_logs WHERE conversation_id = %s ORDER BY dispatched_seq DESC LIMIT 1", conversation_id)
        return rows[0] if rows else None

    def pending(self, run_id: str) -> list[dict[str, Any]]:
        return self.all("SELECT * FROM tool_usage_logs WHERE run_id = %s AND status = 'pending' ORDER BY id", run_id)

    def usage(self, run_id: str, call_id: str) -> dict[str, Any] | None:
        rows = self.all("SELECT * FROM tool_usage_logs WHERE run_id = %s AND call_id = %s", run_id, call_id)
        return rows[0] if rows else None

    def partial_answers(self) -> list[dict[str, Any]]:
        """Assistant messages whose turn has no `turn_complete` entry: text shown before its turn committed."""
        return self.all(
            "SELECT m.conversation_id, m.turn_id, m.text FROM chat_messages m WHERE m.role = 'assistant' AND NOT EXISTS ("
            "SELECT 1 FROM ledger_event e WHERE e.conversation_id = m.conversation_id AND e.turn_id = m.turn_id "
            "AND e.kind = 'turn_complete')"
        )

    def running(self) -> list[dict[str, Any]]:
        return self.all("SELECT conversation_id, run_id, turn_id FROM workflow_logs WHERE status = 'running'")


@dataclass
class Accepted:
    """A client answer the server acknowledged: it must be in the stores, unchanged, forever."""

    conversation_id: str
    run_id: str
    call_id: str
    status: str  # the tool usage status it must have: answered | approved
    output: dict[str, Any]


@dataclass
class Round:
    number: int
    shape: str
    mode: str  # fault:<boundary> | kill:<seconds>
    conversation_id: str
    token: str
    died: bool = False
    restarts: int = 0
    end: str = ""


@dataclass
class Lab:
    """One server database, one webhook receiver, one server at a time; rounds of random crashes."""

    seed: int
    database: ServerDatabase
    receiver: Receiver
    assistant_id: str = ""
    server: DaphneServer | None = None
    rows: Rows = field(init=False)
    accepted: list[Accepted] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    server_env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self.rows = Rows(self.database.url)

    # --- servers ---------------------------------------------------------------------------------

    def serve(self, env: dict[str, str] | None = None) -> DaphneServer:
        """A live server with exactly this fault environment: the running one when it fits, else a new one."""
        if self.alive() and self.server_env == (env or {}):
            return self.server
        self.stop()
        self.server_env = env or {}
        self.server = DaphneServer(self.database, env={"WAYPOINT_RATE_LIMIT_PER_IP": "0", "WAYPOINT_RATE_LIMIT_PER_CREDENTIAL": "0",
                                                       **(env or {})})
        try:
            self.server.start()
        except RuntimeError:
            # Its recovery loop met the fault while resuming an orphaned run: a crash like any other.
            if not self.server_env or self.server.proc.poll() is None:
                raise
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server = None

    def alive(self) -> bool:
        return self.server is not None and self.server.proc is not None and self.server.proc.poll() is None

    # --- customers -------------------------------------------------------------------------------

    def create_assistant(self) -> None:
        text = json.dumps(crash_config(self.receiver.url))
        out = self.database.manage(
            "shell", "-c",
            f"import json; from apps.agent.actions import create_assistant; print(create_assistant(config=json.loads({text!r})).id)",
        )
        self.assistant_id = out.strip().splitlines()[-1]

    def start_conversation(self) -> tuple[str, str]:
        """Start a conversation with the home page form, as a browser does; returns (id, token)."""
        with httpx.Client(base_url=self.server.url, timeout=20) as client:
            page = client.get("/")
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
            response = client.post("/start", data={"assistant": self.assistant_id, "message": "hello", "csrfmiddlewaretoken": csrf})
        assert response.status_code == 302, response.text[:500]
        location = urlsplit(response.headers["location"])
        return location.path.rstrip("/").split("/")[-1], parse_qs(location.query)["token"][0]

    def post(self, path: str, data: dict[str, str]) -> int | None:
        """POST a customer page form; the status, or None when the server died before answering."""
        try:
            return httpx.post(f"{self.server.url}{path}", data=data, timeout=20).status_code
        except httpx.TransportError:
            return None

    def answer(self, r: Round, run: dict[str, Any], usage: dict[str, Any]) -> None:
        path = f"/c/{r.conversation_id}/answer"
        common = {"token": r.token, "run_id": run["run_id"], "call_id": usage["call_id"]}
        if usage["kind"] == "approval":
            data = {**common, "decision": "approve", "reviewed_tool": usage["tool"],
                    "reviewed_arguments": json.dumps(usage["arguments"])}
            expected = Accepted(r.conversation_id, run["run_id"], usage["call_id"], "approved",
                                {"decision": "approve", "reviewed": {"tool": usage["tool"], "arguments": usage["arguments"]}})
        else:
            day = f"2026-12-{self.rng.randint(1, 28):02d}"
            data = {**common, "field.label": day}
            expected = Accepted(r.conversation_id, run["run_id"], usage["call_id"], "answered", {"label": day})
        status = self.post(path, data)
        if status is not None and status < 400:
            self.accepted.append(expected)

    # --- one round -------------------------------------------------------------------------------

    def crash_round(self, number: int, conversation: tuple[str, str]) -> Round:
        shape = self.rng.choice(SHAPES)
        if self.rng.random() < 0.6:
            boundary = self.rng.choice(BOUNDARIES)
            mode, env, kill_after = f"fault:{boundary}", {"WAYPOINT_FAULT_AT": boundary}, None
        else:
            kill_after = round(self.rng.uniform(0.0, 0.6), 3)
            mode, env = f"kill:{kill_after}s", {}
        r = Round(number, shape, mode, *conversation)
        self.serve(env)
        killer = None
        if kill_after is not None:
            killer = threading.Timer(kill_after, self.server.kill)
            killer.start()
        self.post(f"/c/{r.conversation_id}/send", {"token": r.token, "message": f"{MESSAGES[shape]} (round {number})"})
        self.settle(r)
        if killer is not None:
            killer.cancel()
        return r

    def settle(self, r: Round) -> None:
        """Drive a round's turn to an end: restart a dead server, answer what waits, press Continue once."""
        deadline = time.monotonic() + SETTLE_SECONDS
        continued = False
        while time.monotonic() < deadline:
            if not self.alive():
                r.died = True
                r.restarts += 1
                self.serve({})
            run = self.rows.latest_run(r.conversation_id)
            status = run["status"] if run else ""
            if status == "waiting":
                for usage in self.rows.pending(run["run_id"]):
                    self.answer(r, run, usage)
            elif status == "interrupted" and not continued:
                continued = True
                self.post(f"/c/{r.conversation_id}/continue", {"token": r.token})
            elif status in ("completed", "failed", "interrupted") and self.alive():
                r.end = status
                return
            time.sleep(0.1)
        run = self.rows.latest_run(r.conversation_id)
        r.end = f"unsettled ({run['status'] if run else 'no run'})"
        self.problems.append(f"round {r.number} ({r.shape}, {r.mode}): the turn did not settle within {SETTLE_SECONDS} s: {r.end}")

    def run(self, rounds: int) -> None:
        self.serve()
        self.create_assistant()
        conversations = [self.start_conversation() for _ in range(rounds)]
        # Their first turns run after the redirect: let them finish before any server is killed.
        deadline = time.monotonic() + SETTLE_SECONDS
        while self.rows.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        for number, conversation in enumerate(conversations, start=1):
            self.rounds.append(self.crash_round(number, conversation))

    # --- global invariants -------------------------------------------------------------------------

    def lost_results(self) -> list[str]:
        lost = []
        for a in self.accepted:
            usage = self.rows.usage(a.run_id, a.call_id)
            if usage is None or usage["status"] != a.status or usage["output"] != a.output:
                lost.append(f"{a.call_id} of {a.conversation_id}: accepted {a.output}, stored {usage and (usage['status'], usage['output'])}")
        return lost

    def duplicate_deliveries(self) -> dict[str, int]:
        """
        Keys delivered more often than attempts of them were recorded and allowed.

        A key's first attempt may be delivered once. A later delivery of the same key is allowed
        only as a re-attempt (PRODUCT.md rule 8): recorded with `reattempt_of`, after a person
        approved a card that said the earlier attempt may already have gone through.
        """
        counts = Counter(d["headers"].get("Idempotency-Key") for d in list(self.receiver.deliveries))
        starts = [json.loads(row["payload"]) for row in self.rows.all("SELECT payload FROM ledger_event WHERE kind = 'action_started'")]
        reattempts = Counter(p["idempotency_key"] for p in starts if p.get("reattempt_of"))
        return {key: n for key, n in counts.items() if n > 1 + reattempts[key]}

    def verify_failures(self) -> dict[str, Any]:
        out = self.database.manage("shell", "-c", (
            "import json\n"
            "from apps.conversations.models import Conversation\n"
            "from apps.ledger.replay import replay, verify\n"
            "bad = {}\n"
            "for cid in Conversation.objects.values_list('id', flat=True):\n"
            "    v, r = verify(str(cid)), replay(str(cid))\n"
            "    if not v.ok or not r.ok:\n"
            "        bad[str(cid)] = {'verify': str(v), 'replay': r.differences[:3]}\n"
            "print(json.dumps(bad))\n"
        ))
        return json.loads(out.strip().splitlines()[-1])

    def describe(self) -> str:
        lines = [f"seed {self.seed} (rerun with WAYPOINT_SOAK_SEED={self.seed})"]
        lines += [f"  round {r.number}: {r.shape:8} {r.mode:28} died={r.died} restarts={r.restarts} end={r.end}" for r in self.rounds]
        return "\n".join(lines)
