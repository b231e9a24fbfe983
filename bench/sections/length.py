"""
length: a turn on a 1,000-turn conversation against one on a 5-turn conversation, interleaved.
"""

from __future__ import annotations

import time

from bench.conversations import bench_assistant, new_conversation, one_turn
from bench.report import Report, Target

TARGET_LENGTH = "a turn on a 1,000-turn conversation ≤ 1.2× a turn on a 5-turn one (interleaved)"


def section_length(report: Report, *, quick: bool) -> None:
    """
    A turn's cost against the conversation's length: turns on a long conversation interleaved with turns on short ones.

    Every turn is the bench's turn (three echo rounds and a reply). The long conversation is built
    of such turns first; then each timed turn on it is followed by one on a 5-turn conversation (a
    new one every 5 turns), so both see the same machine at the same moments.
    """
    assistant = bench_assistant()
    length = 200 if quick else 1000
    pairs = 40 if quick else 120
    long_id = new_conversation(assistant)
    for i in range(length - 1):
        one_turn(long_id, i)
    long, short = [], []
    short_id = ""
    for i in range(pairs):
        if i % 5 == 0:
            short_id = new_conversation(assistant)
        for conversation, into in ((long_id, long), (short_id, short)):
            began = time.perf_counter()
            one_turn(conversation, i)
            into.append(time.perf_counter() - began)
    long_row = report.latency_row("length", f"Waypoint turn on a {length:,}-turn conversation", long)
    short_row = report.latency_row("length", "Waypoint turn on a 5-turn conversation (interleaved)", short)
    ratio = long_row.p50_ms / short_row.p50_ms
    report.figures["length_ratio"] = ratio
    quick_note = "" if length == 1000 else f"; quick: {length} turns, not 1,000"
    report.targets.append(Target(TARGET_LENGTH, f"{ratio:.2f}× (p50 {long_row.p50_ms:.1f} ms against "
                                 f"{short_row.p50_ms:.1f} ms{quick_note})", ratio <= 1.2 if length == 1000 else None))

