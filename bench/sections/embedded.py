"""
embedded: commit -> push on one idle Daphne running the turns itself, on the in-memory channel layer
(the embedded default) beside Redis, the commit time read from PostgreSQL.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from urllib.parse import parse_qs, urlsplit

from bench.conversations import assistant_in
from bench.environment import BenchCluster, serve
from bench.report import Report
from devservers.processes import ServerDatabase


def http_push_latency(database: ServerDatabase, assistant: str, *, env: dict, samples: int) -> list[float]:
    """
    Commit → push on one idle Daphne serving its own database, the turns posted to its API.

    The writer is the server itself (the embedded default's in-memory layer reaches no other
    process), so the commit time is PostgreSQL's own (`pg_xact_commit_timestamp` of the turn's
    first entry); the push time is this process's clock on the same machine.
    """
    import httpx
    import psycopg
    import websockets

    server = serve(database, env)
    try:

        async def main() -> list[float]:
            async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
                home = await http.get("/")
                csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', home.text).group(1)
                started = await http.post("/start", data={"assistant": assistant, "message": "hello", "csrfmiddlewaretoken": csrf})
                location = urlsplit(started.headers["location"])
                cid, token = location.path.rstrip("/").split("/")[-1], parse_qs(location.query)["token"][0]
                arrivals: list[tuple[int, float]] = []
                url = f"ws://127.0.0.1:{server.port}/ws/conversations/{cid}/?token={token}&format=json"
                async with websockets.connect(url, origin=server.url, open_timeout=30, max_size=None) as socket:

                    async def watch():
                        async for raw in socket:
                            message = json.loads(raw)
                            if message.get("type") == "state":
                                arrivals.append((message["seq"], time.time()))

                    watcher = asyncio.create_task(watch())
                    latencies = []
                    await asyncio.sleep(1)  # the first turn (the home form's) is done
                    with psycopg.connect(database.url, autocommit=True) as conn:
                        for n in range(samples):
                            await asyncio.sleep(0.3 + (n % 3) * 0.2)  # idle between turns, as a person types
                            head = arrivals[-1][0] if arrivals else 0
                            answered = await http.post(f"/v1/agent/conversations/{cid}/turns", json={"message": f"ping {n}"},
                                                       headers={"Authorization": f"Bearer {token}"})
                            if answered.status_code == 409:
                                continue  # the previous turn is still being pushed: not a sample
                            assert answered.status_code == 202, answered.text
                            deadline = time.monotonic() + 10
                            while not (arrivals and arrivals[-1][0] > head) and time.monotonic() < deadline:
                                await asyncio.sleep(0.001)
                            seq, committed = conn.execute(
                                "SELECT seq, extract(epoch FROM pg_xact_commit_timestamp(xmin))::float FROM ledger_event "
                                "WHERE conversation_id = %s AND seq > %s ORDER BY seq LIMIT 1", (cid, head)).fetchone()
                            shown = next((t for s, t in arrivals if s >= seq), None)
                            if shown is not None:
                                latencies.append(max(0.0, shown - committed))
                    watcher.cancel()
                    return latencies

        return asyncio.run(main())
    finally:
        server.stop()


def section_embedded(report: Report, cluster: BenchCluster, *, quick: bool) -> None:
    samples = 20 if quick else 40
    database = ServerDatabase("embedded", cluster=cluster.url)
    try:
        assistant = assistant_in(database)
        for label, env, figure in (("embedded default: in-memory channel layer", {"REDIS_URL": ""}, "embedded_p99"),
                                   ("Redis channel layer", {}, "embedded_redis_p99")):
            got = http_push_latency(database, assistant, env=env, samples=samples)
            row = report.latency_row("push", f"commit → websocket receive, {label}, 1 idle Daphne running the turns itself",
                                     got, note=f"{samples - len(got)} of {samples} turns without a timed push; commit time "
                                               "from PostgreSQL (track_commit_timestamp)")
            report.figures[figure] = row.p99_ms
    finally:
        database.drop()

