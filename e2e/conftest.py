from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.servers import PYTHON, ROOT, DaphneServer, ServerDatabase, free_port

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
# axe-core from npm (e2e/package.json; `make test` runs `npm ci` for it).
AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
# What people with a disability are blocked by; "moderate" and "minor" findings are reported by axe, not failed on.
AXE_FAILS_ON = ("serious", "critical")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = pytest.mark.e2e

# Playwright's sync API keeps an event loop running in the test thread; these tests reach the
# database only through the server processes they start, so Django's guard does not apply.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    if not os.path.exists(CHROMIUM):
        skip = pytest.mark.skip(reason=f"needs Debian chromium at {CHROMIUM} (.ci/run installs it)")
        for item in items:
            if "e2e" in str(item.fspath):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def waypoint_server():
    database = ServerDatabase("e2e")
    server = DaphneServer(database)
    database.manage("load_demo", "--base-url", f"http://127.0.0.1:{server.port}")
    server.start()
    yield server
    server.stop()
    database.drop()


@pytest.fixture
def screenshot():
    """Save the whole page as it is now: `e2e/artifacts/screenshots/<name>.png`."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> None:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)

    return take


@pytest.fixture
def screenshots():
    """
    Save what a 375 px phone and a 1280 px desktop show (800 px high), in light and dark mode.

    `e2e/artifacts/screenshots/<name>-<375|1280>-<light|dark>.png`; the page gets its own size and
    colour scheme back afterwards.
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> None:
        size = page.viewport_size
        dark = page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            for width in (375, 1280):
                page.set_viewport_size({"width": width, "height": 800})
                # Two frames: the host page and any iframe lay out again at the new size before the capture.
                page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
                page.screenshot(path=str(SCREENSHOTS / f"{name}-{width}-{scheme}.png"))
        page.emulate_media(color_scheme="dark" if dark else "light")
        page.set_viewport_size(size)

    return take


@pytest.fixture
def accessibility():
    """
    Check a page with axe-core in light and dark mode: `check(page)` fails on any serious or critical violation.

    Every frame with a document of its own (the widget's iframe) is checked too, each on its own; the
    page gets its colour scheme back afterwards. Without axe-core the check skips and says how to get
    it, except in CI (`WAYPOINT_REQUIRE_AXE=1` or `CI`), where it fails.
    """
    if not AXE.exists():
        reason = f"axe-core is not installed at {AXE.relative_to(ROOT)}: `make test` runs `npm ci --prefix e2e` for it"
        if os.environ.get("WAYPOINT_REQUIRE_AXE") or os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)

    source = AXE.read_text()

    def check(page) -> None:
        dark = page.evaluate("() => matchMedia('(prefers-color-scheme: dark)').matches")
        found = []
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            for frame in page.frames:
                if frame.url in ("", "about:blank"):
                    continue
                if not frame.evaluate("() => typeof window.axe === 'object'"):
                    # Evaluated, not added as a <script> (add_script_tag): the pages' CSP (script-src 'self')
                    # refuses inline scripts, and it stays on so the pages are checked as people get them.
                    frame.evaluate(source)
                violations = frame.evaluate(
                    "(impacts) => axe.run(document, {iframes: false, resultTypes: ['violations']})"
                    ".then((r) => r.violations.filter((v) => impacts.includes(v.impact)).map((v) => ({"
                    "id: v.id, impact: v.impact, help: v.help,"
                    "nodes: v.nodes.map((n) => n.target.join(' ') + ': ' + n.failureSummary.replace(/\\s+/g, ' '))})))",
                    list(AXE_FAILS_ON),
                )
                found += [f"{scheme} {frame.url}\n  {v['impact']} {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"])
                          for v in violations]
        page.emulate_media(color_scheme="dark" if dark else "light")
        assert not found, "axe-core found serious or critical violations:\n" + "\n".join(found)

    return check


@pytest.fixture(scope="session")
def shop_origin() -> str:
    """Where the demo shop will listen: another origin (and site) than the widget's 127.0.0.1."""
    return f"http://localhost:{free_port()}"


@pytest.fixture(scope="session")
def widget_server(shop_origin):
    """One demo server for the widget modules (their tests share no data), embeddable by the demo shop."""
    database = ServerDatabase("e2e_widget")
    server = DaphneServer(database)
    database.manage("load_demo", "--base-url", server.url, "--allowed-origin", shop_origin)
    server.start()
    yield server
    server.stop()
    database.drop()


@pytest.fixture(scope="session")
def demo_shop(widget_server, shop_origin):
    """The demo shop (`manage.py demo_shop`) at `shop_origin`, embedding the demo assistant's widget."""
    port = shop_origin.rsplit(":", 1)[1]
    proc = subprocess.Popen(
        [PYTHON, "manage.py", "demo_shop", "--port", port, "--widget-url", widget_server.url],
        cwd=ROOT, env={**os.environ, **widget_server.database.env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 90
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the demo shop did not start") from None
            time.sleep(0.1)
    yield shop_origin
    proc.terminate()
    proc.wait(timeout=10)


# Runs in a separate `manage.py shell` process that crashes for real: the customer asks for a refund
# and approves it; the refund webhook (the demo shop in the server) is called, and the process dies
# (WAYPOINT_FAULT_AT=during_action) before it records the outcome. The server's recovery then finds
# the orphaned turn and quarantines it.
CRASHING_CUSTOMER = """
import json
from django.utils import timezone
from apps.agent.actions import create_assistant
from apps.agent import actions, answers
from apps.agent.state import conversation_state
from apps.conversations import queries

config = {
    "name": "Refund desk",
    "model": {"provider": "scripted", "rules": [{"match": "refund", "steps": [
        {"call": "issue_refund", "arguments": {"order_id": "A-1", "amount": 20}},
        {"say": "Refund issued: {result}."}]}]},
    "tools": [{"name": "issue_refund", "kind": "server", "action": "webhook", "url": HOOK, "requires_approval": True}],
}
assistant = create_assistant(config=config)
started = actions.start_conversation(assistant_id=str(assistant.id), message="I want a refund for order A-1",
                                     persona="guest:alice", edge="link", now=timezone.now())
print(json.dumps(started), flush=True)
state = conversation_state(queries.conversation_for(started["conversation_id"]))
[call] = state["pending_client_actions"]
answers.accept_results(conversation_id=started["conversation_id"], run_id=state["run_id"], persona="guest:alice",
                       now=timezone.now(), results=[{"call_id": call["call_id"], "output": {
                           "decision": "approve", "reviewed": {"tool": call["tool"], "arguments": call["arguments"]}}}])
"""


@pytest.fixture(scope="module")
def crash_a_refund():
    """
    `crash(server)` leaves a conversation on `server` whose approved refund was sent by a process that then died.

    Returns the start answer (`conversation_id`, `turn_id`, `run_id`, `token`); the server's recovery
    then quarantines the turn, and the customer sees it interrupted with its outcome unknown.
    """

    def crash(server) -> dict:
        code = f"HOOK = {server.url + '/demo/hooks/refund'!r}\n" + CRASHING_CUSTOMER
        env = {**os.environ, **server.database.env, "WAYPOINT_RUNNER": "inline", "WAYPOINT_FAULT_AT": "during_action"}
        result = subprocess.run([PYTHON, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 137, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    return crash


@pytest.fixture
def start_conversation():
    """Start a conversation from the home page as a customer: `start(page, server, message, assistant=…)` returns its link."""

    def start(page, server, message: str, assistant: str = "Waypoint demo support") -> str:
        page.goto(server.url + "/")
        card = page.get_by_role("region", name=assistant)
        card.get_by_label("Your first message").fill(message)
        card.get_by_role("button", name="Start a conversation").click()
        page.wait_for_url("**/c/*?token=*")
        return page.url

    return start


STAFF_PASSWORD = "a long staff password"


def staff_login(browser, server, username: str, name: str = "", *, create: bool = True):
    """A staff member's panel page, logged in (created first unless `create=False`): its presence socket makes them online."""
    if create:
        server.database.manage("shell", "-c", "from django.contrib.auth import get_user_model; "
                               f"get_user_model().objects.create_user({username!r}, '{username}@example.com', "
                               f"{STAFF_PASSWORD!r}, is_staff=True, first_name={name!r})")
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.goto(server.url + "/staff/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(STAFF_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Conversations").wait_for()
    return page


@pytest.fixture(scope="module")
def staff_at_the_panel(browser, waypoint_server):
    """A member of the team with a panel page open for the module's tests: customers who ask for a person are promised one."""
    page = staff_login(browser, waypoint_server, "desk", "Desk")
    page.locator("#presence.online").wait_for()
    yield page
    page.context.close()
