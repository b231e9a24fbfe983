"""
state: GET messages on a conversation of 1,000 messages, and its ETag answered 304.
"""

from __future__ import annotations

from bench.conversations import bench_assistant, long_conversation
from bench.measure import timed
from bench.report import Report, Target


def section_state(report: Report, *, quick: bool) -> None:
    from django.test import Client
    from django.urls import Resolver404, resolve

    from apps.agent.state import conversation_state
    from apps.conversations import queries

    assistant = bench_assistant()
    cid, token = long_conversation(assistant, messages=1000)
    conversation = queries.conversation_for(cid)
    assert conversation.message_count == 1000, conversation.message_count
    n = 50 if quick else 150
    client = Client()
    api = f"/v1/runner/conversation/{cid}/messages"
    try:
        resolve(api)
        has_api = client.get(api, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    except Resolver404:
        has_api = False
    report.latency_row("state", "conversation_state() on 1,000 messages (the query function)",
                       timed(lambda: conversation_state(queries.conversation_for(cid)), n))
    if has_api:
        first = client.get(api, HTTP_AUTHORIZATION=f"Bearer {token}")
        assert len(first.json()["messages"]) == 1000
        etag = first["ETag"]

        def full():
            assert client.get(api, HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200

        def cached():
            assert client.get(api, HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_IF_NONE_MATCH=etag).status_code == 304

        what = "GET /v1/runner/conversation/{id}/messages"
    else:
        live = f"/c/{cid}/live?token={token}"
        etag = client.get(live)["ETag"]
        report.notes.append("The JSON API route was not available: the state read was measured on the customer page's "
                            "live fragment (/c/<id>/live), which renders the same state as HTML.")

        def full():
            assert client.get(live).status_code == 200

        def cached():
            assert client.get(live, HTTP_IF_NONE_MATCH=etag).status_code == 304

        what = "GET /c/{id}/live (HTML fragment)"
    timed(full, 5)
    got = report.latency_row("state", f"{what}, 1,000 messages, 200", timed(full, n), note="Django test client, in process")
    not_modified = report.latency_row("state", f"{what}, If-None-Match → 304", timed(cached, n))
    report.figures.update(read_p50=got.p50_ms, read_304_p50=not_modified.p50_ms)
    report.targets.append(Target("messages read p50 ≤ 20 ms at 1,000 messages", f"{got.p50_ms:.1f} ms", got.p50_ms <= 20))
    report.targets.append(Target("304 p50 ≤ 3 ms", f"{not_modified.p50_ms:.1f} ms", not_modified.p50_ms <= 3))

