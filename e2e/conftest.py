from __future__ import annotations

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
