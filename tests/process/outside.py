"""Driving and reading real server processes from the outside: a customer's form posts, plain SQL reads, polling."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from tests.servers import DaphneServer


def wait_for(predicate, *, timeout: float, what: str, interval: float = 0.05):
    """Poll `predicate` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Rows:
    """Plain-SQL reads of a server database: what the servers committed, seen from outside them."""

    def __init__(self, url: str):
        self.url = url

    def _all(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        with psycopg.connect(self.url, autocommit=True, row_factory=dict_row) as conn:
            return conn.execute(sql, params).fetchall()

    def events(self, conversation_id: str) -> list[dict[str, Any]]:
        rows = self._all(
            "SELECT seq, kind, turn_id, actor, payload FROM ledger_event WHERE conversation_id = %s ORDER BY seq", conversation_id
        )
        return [{**r, "payload": json.loads(r["payload"])} for r in rows]

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        return self._all(
            "SELECT role, text, turn_id, seq FROM chat_messages WHERE conversation_id = %s ORDER BY seq", conversation_id
        )

    def run(self, turn_id: str) -> dict[str, Any] | None:
        rows = self._all("SELECT * FROM workflow_logs WHERE turn_id = %s", turn_id)
        return rows[0] if rows else None

    def usages(self, run_id: str) -> list[dict[str, Any]]:
        return self._all("SELECT * FROM tool_usage_logs WHERE run_id = %s ORDER BY id", run_id)

    def actions(self, turn_id: str) -> list[dict[str, Any]]:
        """A turn's linked actions (`action_logs`), in the order they first started."""
        return self._all("SELECT * FROM action_logs WHERE turn_id = %s ORDER BY started_at, id", turn_id)

    def lease(self, conversation_id: str) -> dict[str, Any] | None:
        rows = self._all("SELECT holder, version, expires_at FROM conversations_lease WHERE conversation_id = %s", conversation_id)
        return rows[0] if rows else None

    def turns_after(self, conversation_id: str, seq: int) -> list[str]:
        """The turn ids dispatched after `seq`, oldest first."""
        return [e["turn_id"] for e in self.events(conversation_id) if e["seq"] > seq and e["kind"] == "turn_dispatched"]

    def turn_ended(self, turn_id: str, status: str) -> bool:
        run = self.run(turn_id)
        return run is not None and run["status"] == status


@dataclass
class Customer:
    """A person holding a conversation link: form posts to the customer page endpoints, as a browser makes them."""

    conversation_id: str
    token: str

    def _post(self, server: DaphneServer, action: str, data: dict[str, str]) -> int | None:
        """POST a form; the status code, or None when the server died before answering."""
        try:
            response = httpx.post(
                f"{server.url}/c/{self.conversation_id}/{action}", data={"token": self.token, **data}, timeout=15
            )
        except httpx.TransportError:
            return None
        return response.status_code

    def send(self, server: DaphneServer, message: str) -> int | None:
        return self._post(server, "send", {"message": message})

    def answer(self, server: DaphneServer, *, run_id: str, call_id: str, fields: dict[str, str]) -> int | None:
        return self._post(server, "answer", {"run_id": run_id, "call_id": call_id, **{f"field.{k}": v for k, v in fields.items()}})

    def continue_(self, server: DaphneServer) -> int | None:
        """
        Continue through the API, as the application may (PRODUCT.md rule 8).

        The customer's page offers no Continue while staff have an unknown outcome to settle
        (docs/durability.md, "Who may try it again"); the API keeps the contract's Continue.
        """
        try:
            response = httpx.post(f"{server.url}/v1/agent/conversations/{self.conversation_id}/continue",
                                  headers={"Authorization": f"Bearer {self.token}"}, timeout=15)
        except httpx.TransportError:
            return None
        return response.status_code

    def page(self, server: DaphneServer) -> str:
        response = httpx.get(f"{server.url}/c/{self.conversation_id}", params={"token": self.token}, timeout=15)
        response.raise_for_status()
        return response.text
