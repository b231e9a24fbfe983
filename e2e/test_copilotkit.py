"""
A real CopilotKit page in Chromium, driving a Waypoint conversation over AG-UI.

The page (e2e/copilotkit/: React, @copilotkit/react-core's v2 chat and hooks) is bundled with
esbuild from e2e/node_modules (pinned in e2e/package-lock.json) and served, with CopilotKit's
runtime (@copilotkit/runtime, telemetry off), by a Node process (e2e/copilotkit/runtime.mjs) that
forwards its runs to a real Waypoint server with the API key, as docs/ag-ui.md sets it up. The
browser may reach that process only: any other request is refused and reported, so nothing is
fetched at run time. The client tool, approvals and questions are docs/ag-ui.md's code
(e2e/copilotkit/support.jsx).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from tests.servers import DaphneServer, ServerDatabase, free_port

E2E = Path(__file__).parent
ESBUILD = E2E / "node_modules" / ".bin" / "esbuild"
PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Support</title>
<link rel="stylesheet" href="main.css"><style>#root { height: 100vh }</style></head>
<body><div id="root"></div><script type="module" src="main.js"></script></body></html>"""

CONFIG = {
    "name": "CopilotKit support",
    "model": {
        "provider": "scripted",
        "rules": [
            {"match": "refund", "steps": [
                {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
                {"when": "approved", "say": "Refund issued: $20 for order A-1."},
                {"when": "denied", "say": "The refund was declined."},
            ]},
            {"match": "when|deliver", "steps": [
                {"call": "pick_date", "arguments": {"label": "Delivery date"}},
                {"when": "declined", "say": "No delivery date is booked."},
                {"say": "Booked for {result.date}."},
            ]},
            {"match": "help", "steps": [
                {"call": "ask_question", "arguments": {"question": "Which order is this about?"}},
                {"when": "declined", "say": "No problem."},
                {"say": "Thanks, I will look into {result.answer}."},
            ]},
        ],
        "fallback": [{"say": "You said: {message}"}],
    },
    "tools": [
        {"name": "issue_refund", "kind": "server", "action": "echo", "requires_approval": True,
         "display_name": "Refund", "summary": "Refund ${amount} for order {order_id}",
         "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}}},
        {"name": "pick_date", "kind": "client", "display_name": "Delivery date",
         "parameters": {"type": "object", "properties": {"date": {"type": "string"}}}},
    ],
}


@pytest.fixture(scope="module")
def bundle():
    if shutil.which("node") is None or not ESBUILD.exists():
        pytest.fail("the CopilotKit test needs node and `npm ci --prefix e2e` (e2e/package-lock.json pins CopilotKit and esbuild)")
    out = Path(tempfile.mkdtemp(prefix="copilotkit-"))
    built = subprocess.run(
        [str(ESBUILD), "copilotkit/main.jsx", "--bundle", "--format=esm", "--jsx=automatic", f"--outdir={out}",
         "--loader:.woff2=file", "--loader:.woff=file", "--loader:.ttf=file", "--define:process.env.NODE_ENV=\"production\"",
         "--minify", "--log-level=error"],
        cwd=E2E, capture_output=True, text=True, timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (out / "index.html").write_text(PAGE)
    yield out
    shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def support():
    database = ServerDatabase("copilotkit")
    server = DaphneServer(database).start()
    try:
        key = database.manage("create_api_key", "copilotkit").strip().splitlines()[-1]
        created = httpx.post(f"{server.url}/v1/assistants", json=CONFIG, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert created.status_code == 201, created.text
        yield server, key, created.json()["id"]
    finally:
        server.kill()
        database.drop()


class Runtime:
    """The embedding application's backend: CopilotKit's runtime and the page, on a port of their own."""

    def __init__(self, env: dict[str, str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, **env, "PORT": str(self.port), "COPILOTKIT_TELEMETRY_DISABLED": "true"}

    def start(self) -> Runtime:
        self.process = subprocess.Popen(["node", "copilotkit/runtime.mjs"], cwd=E2E, env=self.env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        assert "listening" in self.process.stdout.readline(), "the CopilotKit runtime did not start"
        return self

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def runtime(bundle, support):
    server, key, assistant = support
    backend = Runtime({"WAYPOINT_URL": server.url, "WAYPOINT_API_KEY": key, "WAYPOINT_ASSISTANT_ID": assistant,
                       "PAGE_DIR": str(bundle)}).start()
    yield backend
    backend.stop()


@pytest.fixture
def chat(browser, runtime):
    """A CopilotKit page on a new thread; `.elsewhere`: the requests it tried to send anywhere but its backend."""
    context = browser.new_context()
    page = context.new_page()
    page.elsewhere = []
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)

    def route(route):
        if route.request.url.startswith(runtime.url) or route.request.url.startswith("data:"):
            route.continue_()
        else:
            page.elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page.goto(f"{runtime.url}/index.html")
    yield page
    assert page.elsewhere == []
    context.close()


def errors(page) -> list[str]:
    return page.console_errors


def send(page, text: str) -> None:
    box = page.get_by_role("textbox").last
    box.fill(text)
    box.press("Enter")


def test_a_text_turn_is_answered(chat):
    send(chat, "hello there")

    # The module's first turn also loads what the page's first request to its runtime loads: room for a busy machine.
    expect(chat.get_by_text("You said: hello there")).to_be_visible(timeout=30_000)
    assert errors(chat) == []


def test_a_client_tool_is_answered_by_its_frontend_tool(chat):
    send(chat, "when can you deliver?")

    expect(chat.get_by_text("Booked for 2026-12-24.")).to_be_visible(timeout=15_000)
    send(chat, "thanks")
    expect(chat.get_by_text("You said: thanks")).to_be_visible(timeout=15_000)
    assert errors(chat) == []


def test_an_approval_is_answered_through_use_interrupt(chat):
    send(chat, "a refund please")

    card = chat.get_by_role("group", name="Shall I refund $20 for order A-1?")
    card.get_by_role("button", name="Approve").click(timeout=15_000)
    expect(chat.get_by_text("Refund issued: $20 for order A-1.")).to_be_visible(timeout=15_000)
    expect(card).to_have_count(0)
    assert errors(chat) == []


def test_a_question_is_answered_through_use_interrupt(chat):
    send(chat, "help me")

    form = chat.get_by_role("form", name="Which order is this about?")
    form.get_by_role("textbox").fill("A-7", timeout=15_000)
    form.get_by_role("button", name="Send answer").click()
    expect(chat.get_by_text("Thanks, I will look into A-7.")).to_be_visible(timeout=15_000)
    assert errors(chat) == []


def test_a_message_while_an_approval_waits_declines_it_and_is_answered(chat):
    send(chat, "a refund please")
    expect(chat.get_by_role("group", name="Shall I refund $20 for order A-1?")).to_be_visible(timeout=15_000)

    send(chat, "never mind")

    expect(chat.get_by_text("You said: never mind")).to_be_visible(timeout=15_000)
    expect(chat.get_by_role("group", name="Shall I refund $20 for order A-1?")).to_have_count(0)
    send(chat, "still there?")
    expect(chat.get_by_text("You said: still there?")).to_be_visible(timeout=15_000)
    # Only the chat's own first try, which @ag-ui/client refused while the card was open.
    assert [e for e in errors(chat) if "pending interrupt" not in e] == []


def test_a_reload_keeps_the_conversation_and_its_waiting_approval(chat, runtime):
    send(chat, "hello there")
    expect(chat.get_by_text("You said: hello there")).to_be_visible(timeout=15_000)
    send(chat, "a refund please")
    expect(chat.get_by_role("group", name="Shall I refund $20 for order A-1?")).to_be_visible(timeout=15_000)
    runtime.stop()  # what CopilotKit's runtime kept in memory goes too: the conversation is Waypoint's
    runtime.start()

    chat.reload()

    expect(chat.get_by_text("You said: hello there")).to_be_visible(timeout=15_000)
    chat.get_by_role("group", name="Shall I refund $20 for order A-1?").get_by_role("button", name="Approve").click(timeout=15_000)
    expect(chat.get_by_text("Refund issued: $20 for order A-1.")).to_be_visible(timeout=15_000)
    assert errors(chat) == []


def test_an_approval_can_be_denied_and_a_question_skipped(chat, screenshots, accessibility):
    send(chat, "a refund please")
    card = chat.get_by_role("group", name="Shall I refund $20 for order A-1?")
    expect(card).to_be_visible(timeout=15_000)
    screenshots(chat, "copilotkit-approval")
    accessibility(chat)

    card.get_by_role("button", name="Deny").click()

    expect(chat.get_by_text("The refund was declined.")).to_be_visible(timeout=15_000)
    expect(card).to_have_count(0)
    send(chat, "help me")
    form = chat.get_by_role("form", name="Which order is this about?")
    expect(form).to_be_visible(timeout=15_000)
    screenshots(chat, "copilotkit-question")
    accessibility(chat)

    form.get_by_role("button", name="Skip").click()

    expect(chat.get_by_text("No problem.")).to_be_visible(timeout=15_000)
    expect(form).to_have_count(0)
    screenshots(chat, "copilotkit-answered")
    accessibility(chat)
    assert errors(chat) == []
