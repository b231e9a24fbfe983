from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.servers import DaphneServer, ServerDatabase

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).parent / "artifacts"
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
    ARTIFACTS.mkdir(exist_ok=True)

    def take(page, name: str) -> None:
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    return take
