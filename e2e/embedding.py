"""The application that embeds Waypoint, as the browser tests need its backend: an API key and an assistant."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import httpx

from tests.conftest import SUPPORT_CONFIG


@contextlib.contextmanager
def embedding_backend(server, key_name: str, config: dict | None = None) -> Iterator[Callable[[str], dict]]:
    """
    The embedding application's backend on `server`: an API key and an assistant, by default the
    support one (its refunds need approval; it has the pick_date client tool). Yields
    `start(message)`, which starts a conversation through the API and returns its answer (id and
    token); `start.api` is the backend's own client, with the key, for what the team does.
    """
    key = server.database.manage("create_api_key", key_name).strip().splitlines()[-1]
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=10) as http:
        assistant = http.post("/v1/assistants", json=config or SUPPORT_CONFIG).json()["id"]

        def start(message: str) -> dict:
            response = http.post("/v1/agent/conversations", json={"assistant": assistant, "message": message})
            assert response.status_code == 201, response.text
            return response.json()

        start.api = http
        yield start
