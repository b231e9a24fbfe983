"""A large source survives its server: a claim left by a dead process lapses and a restarted server indexes it."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.servers import DaphneServer, ServerDatabase

GUIDE = "\n\n".join(f"## Warranty part {n}\n\n" + "Warranty claims are answered within two weeks. " * 20 for n in range(30))


@pytest.fixture
def database():
    db = ServerDatabase("knowledge")
    yield db
    db.drop()


def test_a_pending_source_claimed_by_a_process_that_died_is_indexed_after_a_restart(database):
    key = database.manage("create_api_key", "backend").strip().splitlines()[-1]
    headers = {"Authorization": f"Bearer {key}"}
    env = {"WAYPOINT_KNOWLEDGE_INLINE_BYTES": "1000", "WAYPOINT_KNOWLEDGE_CLAIM_SECONDS": "2",
           "WAYPOINT_KNOWLEDGE_POLL_SECONDS": "0.5"}
    server = DaphneServer(database, env={**env, "WAYPOINT_KNOWLEDGE_INDEXER": "0"}).start()
    try:
        added = httpx.post(f"{server.url}/v1/knowledge/sources", headers=headers, timeout=30,
                           files={"file": ("warranty.md", GUIDE.encode(), "text/markdown")})
        assert added.status_code == 202, added.text
        source = f"{server.url}/v1/knowledge/sources/{added.json()['id']}"
        server.kill()
        # A process takes the source and dies before writing it: its claim holds for 2 s.
        database.manage("shell", "-c", "from apps.knowledge import indexing; assert indexing.claim() is not None", env=env)

        server.start(env={"WAYPOINT_KNOWLEDGE_INDEXER": "1"})
        deadline = time.monotonic() + 60
        while (status := httpx.get(source, headers=headers, timeout=10).json()["status"]) == "indexing":
            assert time.monotonic() < deadline, server.output()
            time.sleep(0.2)

        assert status == "ready"
        found = httpx.post(f"{server.url}/v1/knowledge/search", headers=headers, json={"query": "warranty claims", "limit": 20},
                           timeout=10).json()["passages"]
        assert len(found) == 20 and {p["version"] for p in found} == {1}
    finally:
        server.kill()
