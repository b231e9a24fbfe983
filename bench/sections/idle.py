"""
`make bench ARGS="--only idle"`: the CPU one Daphne process spends a second with nothing to do, with
its recovery loop and webhook dispatcher running as in production, against the same process with
both off (the floor of Daphne and Django alone), measured in one run.
"""

from __future__ import annotations

import time

from bench.environment import serve
from bench.proc import process_cpu
from bench.report import Row

IDLE_SETTLE_SECONDS = 5


def section_idle(report, database, *, quick: bool) -> None:
    seconds = 20 if quick else 60
    production = {"WAYPOINT_RECOVERY_INTERVAL_SECONDS": "1", "WAYPOINT_HOUSEKEEPING_INTERVAL_SECONDS": "15"}
    figures = {}
    for label, env in (
        ("Waypoint, recovery loop and webhook dispatcher running", production),
        ("floor: the same process with both off", {**production, "WAYPOINT_RUNNER": "inline", "WAYPOINT_WEBHOOK_WORKERS": "0"}),
    ):
        server = serve(database, env)
        try:
            time.sleep(IDLE_SETTLE_SECONDS)
            cpu, began = process_cpu(server.proc.pid), time.monotonic()
            time.sleep(seconds)
            per_second = (process_cpu(server.proc.pid) - cpu) / (time.monotonic() - began) * 1000
        finally:
            server.stop()
        figures[label] = per_second
        report.rows.append(Row("idle", f"idle CPU per process: {label}", note=f"{per_second:.2f} ms CPU a second over {seconds} s"))
    waypoint, floor = figures.values()
    report.figures["idle_cpu_ms"] = waypoint
    report.notes.append(f"idle: {waypoint:.2f} ms of CPU a second per process, the floor {floor:.2f} (goal ≤ 2 ms)")
    print(report.notes[-1])
