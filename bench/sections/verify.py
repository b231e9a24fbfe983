"""
verify: the hash chain and signatures of a 10,000-event conversation, and its replay.
"""

from __future__ import annotations

import time

from bench.conversations import bench_assistant, ten_thousand_events
from bench.measure import timed
from bench.report import Report, Row, Target


def section_verify(report: Report, *, quick: bool) -> None:
    from apps.conversations.models import Conversation
    from apps.ledger.replay import replay, verify

    cid = ten_thousand_events(bench_assistant())
    events = Conversation.objects.get(id=cid).head_seq
    seconds = timed(lambda: verify(cid), 3)
    result = verify(cid)
    assert result.ok, result
    row = report.latency_row("verify", f"verify a {events:,}-event conversation (hash chain + Ed25519)", seconds,
                             note="3 runs")
    began = time.perf_counter()
    replayed = replay(cid)
    replay_s = time.perf_counter() - began
    report.rows.append(Row("verify", f"replay the same conversation (fold + compare with the stores): "
                                     f"{replay_s * 1000:.0f} ms, {'identical' if replayed.ok else 'DIFFERS'}"))
    report.figures.update(verify_p50=row.p50_ms)
    report.targets.append(Target("verify of 10,000 events ≤ 1 s", f"{row.p50_ms / 1000:.2f} s ({events:,} events)",
                                 row.p50_ms <= 1000))

