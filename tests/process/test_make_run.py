"""What a newcomer types from the README: `make run` ends on the addresses to open, `make superuser` works as written."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time

import httpx
import pytest

from tests.servers import ROOT, ServerDatabase, free_port

pytestmark = pytest.mark.postgres


def newcomer_env(database: ServerDatabase) -> dict:
    """A fresh shell's environment: no DEBUG, no secret key, only where the database is."""
    env = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "DJANGO_SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    return {**env, "DATABASE_URL": database.url, "WAYPOINT_DATA_DIR": database.tmp.name, "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def database():
    db = ServerDatabase("makerun")
    yield db
    db.drop()


def read_until(proc: subprocess.Popen, marker: str, timeout: float) -> list[str]:
    """The output up to `marker` and the block it starts (ended by a blank line)."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    in_block = False
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            continue
        if line is None:
            break
        if in_block and not line.strip():
            return seen
        seen.append(line)
        in_block = in_block or marker in line
    raise AssertionError("make run never said where to go:\n" + "\n".join(seen))


class TestMakeRun:
    def test_ends_on_the_addresses_to_open_with_the_shop_where_the_readme_says(self, database):
        port, shop_port, mcp_port = free_port(), free_port(), free_port()
        proc = subprocess.Popen(["make", "--no-print-directory", "run", f"PORT={port}", f"SHOP_PORT={shop_port}", f"MCP_PORT={mcp_port}"],
                                cwd=ROOT, env=newcomer_env(database), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            lines = read_until(proc, "Waypoint is ready", timeout=90)
            # Browsers try localhost's IPv4 address too; httpx takes the first one it resolves.
            shop = httpx.get(f"http://127.0.0.1:{shop_port}/", timeout=10)
            page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)

        output = "\n".join(lines)
        assert "HTTP/2" not in output
        assert "Applying" not in output
        assert len(lines) <= 16, output
        ready = lines.index("Waypoint is ready. Open:")
        addresses = "\n".join(lines[ready:])
        assert re.search(rf"customer page +http://127\.0\.0\.1:{port}$", addresses, re.M), addresses
        assert re.search(rf"demo shop +http://localhost:{shop_port}$", addresses, re.M), addresses
        assert f"http://127.0.0.1:{port}/staff/" in addresses
        assert f"http://127.0.0.1:{port}/static/waypoint/sdk-demo.html" in addresses
        assert f"demo shop on http://localhost:{shop_port}/" in output
        assert f"demo shop MCP server on http://127.0.0.1:{mcp_port}/mcp" in output
        assert shop.status_code == 200 and page.status_code == 200

    def test_the_readme_names_the_shop_address_the_shop_prints(self):
        readme = (ROOT / "README.md").read_text()

        assert "http://localhost:8001" in readme
        assert "http://127.0.0.1:8001" not in readme


class TestMakeSuperuser:
    def test_creates_a_staff_login_from_a_fresh_shell(self, database):
        env = {**newcomer_env(database), "DJANGO_SUPERUSER_PASSWORD": "correct horse battery staple"}

        result = subprocess.run(["make", "--no-print-directory", "superuser",
                                 "ARGS=--noinput --username ops --email ops@example.com"],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

        assert result.returncode == 0, result.stdout + result.stderr
        assert "Superuser created successfully." in result.stdout
        readme = (ROOT / "README.md").read_text()
        assert "make superuser" in readme
        assert "python manage.py createsuperuser" not in readme
