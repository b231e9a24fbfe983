"""
The real AG-UI client (@ag-ui/client, from e2e/package-lock.json) against a real Daphne process,
and an AG-UI thread whose server is killed (SIGKILL) mid-run.

The Node script (e2e/agui-client.mjs) runs each scenario with the client's own checks of the
stream: a stream that broke the protocol's order would fail there, not here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.process import probe
from tests.process.outside import Rows
from tests.servers import ROOT, DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

SCRIPT = ROOT / "e2e" / "agui-client.mjs"
CLIENT = ROOT / "e2e" / "node_modules" / "@ag-ui" / "client"

CONFIG = {
    "name": "AG-UI lab",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "refund", "steps": [
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund issued for {result}."},
            ]},
            {"match": "when", "steps": [
                {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                {"say": "Booked for {result}."},
            ]},
            {"match": "story", "steps": [{"say": "Once upon a time a run outlived its connection.", "stream": True}]},
            {"match": "slowly", "steps": [
                {"call": "slow_check", "arguments": {"seconds": 1.5}},
                {"call": "slow_check", "arguments": {"seconds": 1.5}},
                {"say": "Checked twice."},
            ]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [
        {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
         "display_name": "Refund", "summary": "Refund {amount} for order {order_id}",
         "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}},
        {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
        {"name": "slow_check", "kind": "server", "action": "sleep", "display_name": "Careful check"},
    ],
}


class Lab:
    def __init__(self, server: DaphneServer, key: str, assistant: str):
        self.server, self.key, self.assistant = server, key, assistant

    def client(self, scenario: str) -> dict:
        done = subprocess.run(["node", str(SCRIPT), self.server.url, self.key, self.assistant, scenario],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert done.stdout.strip(), f"no output from the client:\n{done.stderr}"
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["ok"], f"{result.get('error')}\n{done.stderr}\n{self.server.output()[-3000:]}"
        return result

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.server.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=30)


@pytest.fixture(scope="module")
def lab():
    if shutil.which("node") is None or not CLIENT.exists():
        pytest.fail("the AG-UI client test needs node and `npm ci --prefix e2e` (e2e/package-lock.json pins @ag-ui/client)")
    database = ServerDatabase("agui")
    server = DaphneServer(database, env={"WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS": "0.05"}).start()
    try:
        key = database.manage("create_api_key", "agui-lab").strip().splitlines()[-1]
        created = httpx.post(f"{server.url}/v1/assistants", json=CONFIG, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert created.status_code == 201, created.text
        yield Lab(server, key, created.json()["id"])
    finally:
        server.kill()
        database.drop()


def texts(run: dict) -> list[str]:
    return [e["delta"] for e in run["events"] if e["type"] == "TEXT_MESSAGE_CONTENT"]


def test_plain_text_streams_the_reply_into_the_clients_messages(lab: Lab):
    result = lab.client("plain")

    first = result["first"]
    assert first["types"][0] == "RUN_STARTED" and first["types"][-1] == "RUN_FINISHED"
    assert texts(first) == ["You said: hello there"]
    assert [(m["role"], m["content"]) for m in result["messages"]] == [("user", "hello there"), ("assistant", "You said: hello there")]
    assert result["state"]["run_status"] == "completed"


def test_a_streaming_model_arrives_as_text_deltas_inside_a_model_round_step(lab: Lab):
    result = lab.client("streamed")

    types = result["first"]["types"]
    assert len(texts(result["first"])) > 1
    assert "".join(texts(result["first"])) == "Once upon a time a run outlived its connection."
    assert types.index("STEP_STARTED") < types.index("TEXT_MESSAGE_START") < types.index("TEXT_MESSAGE_END")
    assert [m["content"] for m in result["messages"] if m["role"] == "assistant"] == ["Once upon a time a run outlived its connection."]


def test_an_approval_is_an_interrupt_and_its_resume_finishes_the_run(lab: Lab):
    result = lab.client("approval")

    paused = result["paused"]["finished"]
    assert paused["outcome"] == "interrupt"
    [interrupt] = paused["interrupts"]
    assert interrupt["reason"] == "approval" and interrupt["message"] == "Shall I refund 20 for order A-1?"
    start = next(e for e in result["paused"]["events"] if e["type"] == "TOOL_CALL_START")
    assert start["toolCallId"] == interrupt["toolCallId"] and start["metadata"]["waypoint"]["displayName"] == "Refund"
    assert result["resumed"]["finished"]["outcome"] == "success"
    assert texts(result["resumed"]) == ['Refund issued for {"amount": 20, "order_id": "A-1"}.']
    assert result["state"]["run_status"] == "completed"


def test_a_client_tool_is_a_frontend_tool_answered_by_a_tool_message(lab: Lab):
    result = lab.client("frontendTool")

    [finished] = [e for e in result["paused"]["events"] if e["type"] == "RUN_FINISHED"]
    assert "outcome" not in finished and "pendingToolCallIds" not in finished  # plain, as strict clients need
    assert texts(result["resumed"]) == ['Booked for {"label": "2026-12-24"}.']


def test_a_dropped_stream_is_picked_up_with_every_message_once_and_one_completed_run(lab: Lab):
    result = lab.client("dropped")

    assert "RUN_FINISHED" not in result["cut"]["types"]
    resumed = result["resumed"]["types"]
    assert resumed[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and resumed[-1] == "RUN_FINISHED"
    assert texts(result["resumed"]) == ["Checked twice."]
    assert [(m["role"], m["content"]) for m in result["messages"] if m["role"] in ("user", "assistant") and m["content"]] == [
        ("user", "check slowly"), ("assistant", "Checked twice.")]
    assert len({m["id"] for m in result["messages"]}) == len(result["messages"])
    conversation = result["state"]["conversation_id"]
    checked = probe.run(lab.server.database, "check", conversation_ids=[conversation])[conversation]
    assert checked["replay"]["ok"] and checked["verify"]["ok"], checked
    kinds = [e["kind"] for e in Rows(lab.server.database.url).events(conversation)]
    assert kinds.count("turn_dispatched") == 1 and kinds.count("turn_complete") == 1
    with lab.http() as http:
        state = http.get(f"/v1/runner/conversation/{conversation}/messages").json()
    assert state["message_count"] == 2 and state["run_status"] == "completed"


def read_events(response: httpx.Response) -> list[dict]:
    return [json.loads(line.removeprefix("data: ")) for line in response.iter_lines() if line.startswith("data: ")]


def test_after_a_kill_9_recovery_finishes_the_run_and_the_next_request_sees_it(tmp_path: Path):
    database = ServerDatabase("agui_crash")
    server = DaphneServer(database).start()
    try:
        key = database.manage("create_api_key", "agui-crash").strip().splitlines()[-1]
        headers = {"Authorization": f"Bearer {key}"}
        assistant = httpx.post(f"{server.url}/v1/assistants", json=CONFIG, headers=headers, timeout=30).json()["id"]
        thread, message = f"thread-{uuid.uuid4().hex[:8]}", {"id": "m-1", "role": "user", "content": "check slowly"}
        body = {"threadId": thread, "runId": "r-1", "messages": [message]}
        with httpx.stream("POST", f"{server.url}/v1/ag-ui/{assistant}", json=body, headers=headers, timeout=30) as response:
            for line in response.iter_lines():
                if '"STEP_STARTED"' in line and "Careful check" in line:
                    break  # the first slow action is under way

        server.kill()
        server.start()
        deadline = time.monotonic() + 30
        with httpx.stream("POST", f"{server.url}/v1/ag-ui/{assistant}", json={**body, "runId": "r-2"}, headers=headers,
                          timeout=60) as response:
            events = read_events(response)

        assert time.monotonic() < deadline
        assert [e["type"] for e in events][:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and events[-1]["type"] == "RUN_FINISHED"
        state = events[-2]["snapshot"]
        assert state["run_status"] == "completed"
        messages = httpx.get(f"{server.url}/v1/runner/conversation/{state['conversation_id']}/messages", headers=headers,
                             timeout=30).json()["messages"]
        assert [(m["role"], m["text"]) for m in messages] == [("user", "check slowly"), ("assistant", "Checked twice.")]
    finally:
        server.kill()
        database.drop()


def test_two_identical_first_requests_at_once_start_one_conversation_and_one_turn(lab: Lab):
    from concurrent.futures import ThreadPoolExecutor

    thread = f"thread-{uuid.uuid4().hex[:8]}"
    body = {"threadId": thread, "runId": "r-1", "messages": [{"id": "m-1", "role": "user", "content": "hello twins"}]}

    def post() -> list[dict]:
        with lab.http() as http, http.stream("POST", f"/v1/ag-ui/{lab.assistant}", json=body) as response:
            assert response.status_code == 200, response.read()
            return read_events(response)

    with ThreadPoolExecutor(2) as pool:
        both = list(pool.map(lambda _: post(), range(2)))

    conversations = {[e for e in events if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"] for events in both}
    assert len(conversations) == 1
    assert all(events[-1]["type"] == "RUN_FINISHED" for events in both)
    kinds = [e["kind"] for e in Rows(lab.server.database.url).events(conversations.pop())]
    assert kinds.count("turn_dispatched") == 1 and kinds.count("turn_complete") == 1


def test_a_second_server_follows_a_run_another_server_drives_to_its_end(lab: Lab):
    other = DaphneServer(lab.server.database).start()
    try:
        thread = f"thread-{uuid.uuid4().hex[:8]}"
        body = {"threadId": thread, "runId": "r-1", "messages": [{"id": "m-1", "role": "user", "content": "check slowly"}]}
        headers = {"Authorization": f"Bearer {lab.key}"}
        with httpx.stream("POST", f"{lab.server.url}/v1/ag-ui/{lab.assistant}", json=body, headers=headers, timeout=30) as first:
            for line in first.iter_lines():
                if '"STEP_STARTED"' in line and "Careful check" in line:
                    break

        with httpx.stream("POST", f"{other.url}/v1/ag-ui/{lab.assistant}", json={**body, "runId": "r-2"}, headers=headers,
                          timeout=60) as response:
            events = read_events(response)

        kinds = [e["type"] for e in events]
        assert kinds[:2] == ["RUN_STARTED", "MESSAGES_SNAPSHOT"] and kinds[-1] == "RUN_FINISHED"
        assert "TOOL_CALL_RESULT" in kinds
        assert [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["Checked twice."]
    finally:
        other.kill()


def test_the_client_code_of_docs_ag_ui_md_runs_as_written(lab: Lab):
    docs = (ROOT / "docs" / "ag-ui.md").read_text()
    [snippet] = [block for block in re.findall(r"^```js\n(.*?)^```", docs, re.DOTALL | re.MULTILINE)
                 if "agent.pendingInterrupts" in block]
    imports, code = snippet.split("\n", 1)
    # Beside e2e/node_modules, so that Node finds the pinned @ag-ui/client; the docs' free names are given.
    script = ROOT / "e2e" / f".docs-snippet-{uuid.uuid4().hex[:8]}.mjs"
    script.write_text(f"{imports}\nconst [base, key, assistantId] = process.argv.slice(2);\n{code}\n"
                      "console.log(JSON.stringify(agent.messages.map((m) => m.content ?? null)));\n")
    try:
        done = subprocess.run(["node", str(script), lab.server.url, lab.key, lab.assistant], capture_output=True, text=True,
                              timeout=120, cwd=ROOT)
    finally:
        script.unlink()

    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said[0] == "refund please" and said[-1].startswith("Refund issued for"), said
