"""
Every kind of AG-UI event a real Waypoint server sends parses under the strict schemas of the
`@ag-ui/core` releases its clients use: 0.0.59, which current CopilotKit pins (its run outcomes
refuse unknown keys), and 1.0.0, which `@ag-ui/client` 1.0 uses (e2e/agui-schemas.mjs; both pinned
in e2e/package-lock.json).

The streams come from a real Daphne process over HTTP: a text reply, a streamed one, a server tool
and its result, a client tool and its answer, an approval and a question and their resumes, a
conflicting answer, a failed run, a stream dropped and picked up again, and a handoff with a
person's reply.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.process import probe
from tests.servers import ROOT, DaphneServer, ServerDatabase

pytestmark = pytest.mark.postgres

SCRIPT = ROOT / "e2e" / "agui-schemas.mjs"
SCHEMAS = ROOT / "e2e" / "node_modules" / "ag-ui-core-copilotkit"

CONFIG = {
    "name": "AG-UI schemas",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "refund", "steps": [
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"say": "Refund issued for {result}."},
            ]},
            {"match": "when", "steps": [
                {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                {"say": "Booked for {result.date}."},
            ]},
            {"match": "colour", "steps": [
                {"call": "ask_question", "arguments": {"question": "Which colour?"}},
                {"say": "Painting it {result.answer}."},
            ]},
            {"match": "story", "steps": [{"say": "Once upon a time a run outlived its connection.", "stream": True}]},
            {"match": "quickly", "steps": [{"call": "slow_check", "arguments": {"seconds": 0.1}}, {"say": "Checked."}]},
            {"match": "slowly", "steps": [
                {"call": "slow_check", "arguments": {"seconds": 1.5}},
                {"say": "Checked slowly."},
            ]},
            {"match": "person", "steps": [{"say": "Of course, I'm asking a person to join.", "handoff": "asked for a person"}]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "handoff": {"enabled": True, "model_tool": True},
    "tools": [
        {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
         "display_name": "Refund", "summary": "Refund {amount} for order {order_id}",
         "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}},
        {"name": "pick_date", "kind": "client", "parameters": {"type": "object", "properties": {"label": {"type": "string"}}}},
        {"name": "slow_check", "kind": "server", "action": "sleep", "display_name": "Careful check"},
    ],
}
# Answers from the help content, citing it.
CITING = {"name": "AG-UI schemas, help content", "knowledge": {"enabled": True}, "model": {"provider": "scripted", "rules": [],
          "fallback": [{"call": "search_knowledge", "arguments": {"query": "{message}"}},
                       {"when": "found", "say": "Send it back within 30 days [1]."}, {"say": "Nothing found."}]}}
# A model endpoint nobody listens on: its runs fail after the provider's quick retries.
FAILING = {"name": "AG-UI schemas, failing model", "model": {"provider": "openai", "model": "gpt-test"}}

# Every event type Waypoint sends (docs/ag-ui.md, "Mapping").
KINDS = {
    "RUN_STARTED", "MESSAGES_SNAPSHOT", "STATE_SNAPSHOT", "STEP_STARTED", "STEP_FINISHED",
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
    "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT", "RUN_FINISHED", "RUN_ERROR", "CUSTOM",
}


class Thread:
    """One AG-UI thread as a client keeps it: its messages, sent again with every request."""

    def __init__(self, server: DaphneServer, key: str, assistant: str):
        self.url = f"{server.url}/v1/ag-ui/{assistant}"
        self.headers = {"Authorization": f"Bearer {key}"}
        self.thread_id = f"thread-{uuid.uuid4().hex[:12]}"
        self.messages: list[dict] = []

    def body(self, text: str | None, resume: list | None, extra: list | None) -> dict:
        if text is not None:
            self.messages.append({"id": f"m-{uuid.uuid4().hex[:10]}", "role": "user", "content": text})
        self.messages += extra or []
        return {"threadId": self.thread_id, "runId": f"r-{uuid.uuid4().hex[:8]}", "messages": self.messages,
                "tools": [], "context": [], "state": {}, "forwardedProps": {}, **({"resume": resume} if resume else {})}

    def send(self, text: str | None = None, *, resume: list | None = None, extra: list | None = None,
             until: str = "", meanwhile: Callable[[], Any] | None = None) -> list[dict]:
        """
        The stream's events; with `until`, only those up to the first line containing it (then the
        client leaves); `meanwhile` runs, beside the open stream, once its first STATE_SNAPSHOT came.
        """
        events, beside = [], None
        with httpx.stream("POST", self.url, json=self.body(text, resume, extra), headers=self.headers, timeout=60) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line.removeprefix("data: ")))
                    if meanwhile is not None and beside is None and events[-1]["type"] == "STATE_SNAPSHOT":
                        beside = threading.Thread(target=meanwhile)
                        beside.start()
                    if until and until in line:
                        break
        if beside is not None:
            beside.join(timeout=60)
        return events


def unanswered_call(events: list[dict]) -> str:
    answered = {e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT"}
    [call_id] = [e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_START" and e["toolCallId"] not in answered]
    return call_id


def conversation_of(events: list[dict]) -> str:
    return [e for e in events if e["type"] == "STATE_SNAPSHOT"][-1]["snapshot"]["conversation_id"]


@pytest.fixture(scope="module")
def streams() -> dict[str, list[dict]]:
    if shutil.which("node") is None or not SCHEMAS.exists():
        pytest.fail("the AG-UI schema test needs node and `npm ci --prefix e2e` (e2e/package-lock.json pins @ag-ui/core)")
    database = ServerDatabase("agui_schemas")
    server = DaphneServer(database, env={"WAYPOINT_SCRIPTED_STREAM_DELAY_SECONDS": "0.05",
                                         "WAYPOINT_OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                         "WAYPOINT_MODEL_RETRY_SECONDS": "0.01"}).start()
    try:
        key = database.manage("create_api_key", "agui-schemas").strip().splitlines()[-1]

        def assistant(config: dict) -> str:
            created = httpx.post(f"{server.url}/v1/assistants", json=config, headers={"Authorization": f"Bearer {key}"},
                                 timeout=30)
            assert created.status_code == 201, created.text
            return created.json()["id"]

        main, failing, citing = assistant(CONFIG), assistant(FAILING), assistant(CITING)
        source = httpx.post(f"{server.url}/v1/knowledge/sources", headers={"Authorization": f"Bearer {key}"}, timeout=30,
                            json={"title": "Returns", "text": "# Returns\n\nSend it back within 30 days of delivery."})
        assert source.status_code == 201, source.text
        out: dict[str, list[dict]] = {}
        out["text"] = Thread(server, key, main).send("hello there")
        out["streamed text"] = Thread(server, key, main).send("tell me a story")
        out["server tool and its result"] = Thread(server, key, main).send("check quickly")

        client = Thread(server, key, main)
        out["client tool"] = client.send("when can you deliver?")
        answer = {"id": f"tool-{uuid.uuid4().hex[:8]}", "role": "tool", "toolCallId": unanswered_call(out["client tool"]),
                  "content": json.dumps({"date": "2026-12-24"})}
        out["client tool answered"] = client.send(extra=[answer])

        approval = Thread(server, key, main)
        out["approval interrupt"] = approval.send("refund please")
        [interrupt] = out["approval interrupt"][-1]["outcome"]["interrupts"]
        reviewed = {"tool": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}}
        out["approval resumed"] = approval.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                         "payload": {"decision": "approve", "reviewed": reviewed}}])
        out["conflicting answer"] = approval.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                           "payload": {"decision": "deny", "reviewed": reviewed}}])

        question = Thread(server, key, main)
        out["question interrupt"] = question.send("what colour?")
        [interrupt] = out["question interrupt"][-1]["outcome"]["interrupts"]
        out["question resumed"] = question.send(resume=[{"interruptId": interrupt["id"], "status": "resolved",
                                                         "payload": {"answer": "blue"}}])

        out["failed run"] = Thread(server, key, failing).send("hello")
        cited = Thread(server, key, citing)
        out["cited reply"] = cited.send("how do I send it back?")
        out["cited reply again"] = cited.send()

        dropped = Thread(server, key, main)
        out["dropped stream"] = dropped.send("check slowly", until="Careful check")
        out["picked up stream"] = dropped.send()

        handoff = Thread(server, key, main)
        # The stream stays open while the staff side holds the thread: the client leaves once it was asked.
        out["handoff"] = handoff.send("can I talk to a person?", until='"handed_off"')
        held = conversation_of(out["handoff"])
        probe.run(database, "staff_reply", conversation_id=held, staff_name="Dana", text="Dana here.")
        # A request while Dana holds it: her next reply and her hand-back reach it as they happen.
        out["under a person"] = handoff.send("is my parcel lost?", meanwhile=lambda: probe.run(
            database, "staff_reply_and_return", conversation_id=held, staff_name="Dana", text="Found it: it's at the depot."))
        yield out
    finally:
        server.kill()
        database.drop()


def check(streams: dict[str, list[dict]]) -> dict:
    given = json.dumps({"streams": [{"label": label, "events": events} for label, events in streams.items()]})
    done = subprocess.run(["node", str(SCRIPT)], input=given, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_streams_cover_every_kind_of_event_and_ending(streams):
    endings = {label: (events[-1]["type"], events[-1].get("outcome", {}).get("type") or events[-1].get("code"))
               for label, events in streams.items() if label not in ("dropped stream", "handoff")}

    assert {e["type"] for events in streams.values() for e in events} == KINDS
    assert endings["client tool"] == ("RUN_FINISHED", None)
    assert endings["approval interrupt"] == endings["question interrupt"] == ("RUN_FINISHED", "interrupt")
    assert endings["conflicting answer"] == ("RUN_ERROR", "action_result_conflict")
    assert endings["failed run"] == ("RUN_ERROR", "run_failed")
    assert "TOOL_CALL_RESULT" in {e["type"] for e in streams["picked up stream"]}
    assert any(m.get("name") == "Dana" for m in streams["under a person"][1]["messages"])
    live = streams["under a person"]
    [start] = [e for e in live if e["type"] == "TEXT_MESSAGE_START"]
    assert start["name"] == "Dana" and [e["delta"] for e in live if e["type"] == "TEXT_MESSAGE_CONTENT"] == [
        "Found it: it's at the depot."]
    controls = [e["snapshot"]["control"]["mode"] for e in live if e["type"] == "STATE_SNAPSHOT"]
    assert controls[0] == "human" and controls[-1] == "agent" and endings["under a person"] == ("RUN_FINISHED", None)


def test_every_event_parses_whole_under_copilotkits_and_the_clients_ag_ui_core(streams):
    result = check(streams)

    assert result["problems"] == []
    assert set(result["checked"]) == {"@ag-ui/core 0.0.59 (CopilotKit)", "@ag-ui/core 1.0.0 (@ag-ui/client 1.0)"}
    assert all(count == sum(len(events) for events in streams.values()) for count in result["checked"].values())


def test_the_checker_refuses_the_outcome_copilotkit_refused(streams):
    old = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success", "pendingToolCallIds": ["c"]}}

    result = check({"a run waiting on a client tool, as Waypoint ended it before": [old]})

    assert [(p["schema"], p["issues"][0]["keys"]) for p in result["problems"]] == [
        ("@ag-ui/core 0.0.59 (CopilotKit)", ["pendingToolCallIds"])]
