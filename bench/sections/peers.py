"""
peers: the same turn shape on LangGraph and DBOS, each run by bench/peers.py in a process of its own
on a database of its own, against Waypoint's turns of the turns section.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from bench.conversations import CONCURRENCY
from bench.environment import ROOT
from bench.report import Report, Row, Target
from devservers.processes import ServerDatabase

TARGET_PEER = "core turn ≥ 2× {name}, sequential and at 8 concurrent"
PEERS = (("LangGraph", "LangGraph + PostgresSaver (durability=sync)"), ("DBOS", "DBOS workflow, 7 steps"))


def section_peers(report: Report, database: ServerDatabase, *, quick: bool) -> None:
    turns = 80 if quick else 120
    waypoint = report.figures.get("waypoint1")
    waypoint8 = report.figures.get("waypoint8")
    for name, label in PEERS:
        peer = name.lower()
        label_db = f"wp_bench_{peer}_{uuid.uuid4().hex[:6]}"
        base = database.url.rsplit("/", 1)[0]
        url = f"{base}/{label_db}"
        database._admin(f'CREATE DATABASE "{label_db}"')
        try:
            done = subprocess.run([sys.executable, "-m", "bench.peers", peer, url, str(turns), str(CONCURRENCY)],
                                  cwd=ROOT, capture_output=True, text=True, timeout=400)
        except subprocess.TimeoutExpired:
            done = None
        finally:
            database._admin(f'DROP DATABASE IF EXISTS "{label_db}" WITH (FORCE)')
        line = next((x for x in (done.stdout.splitlines() if done else []) if x.startswith("RESULT ")), None)
        if line is None:
            why = "timed out" if done is None else (done.stderr.strip().splitlines() or ["no output"])[-1]
            report.rows.append(Row("peers", label, note=f"could not run: {why}"))
            report.notes.append(f"{label} could not run here: {why}")
            report.targets.append(Target(TARGET_PEER.format(name=name), "not measured", None))
            continue
        result = json.loads(line[len("RESULT "):])
        s = report.latency_row("peers", f"{label}, sequential", result["sequential"]["latencies"], wall=result["sequential"]["wall"])
        c = report.latency_row("peers", f"{label}, {CONCURRENCY} concurrent", result["concurrent"]["latencies"],
                               wall=result["concurrent"]["wall"])
        report.figures[f"{peer}1"], report.figures[f"{peer}8"] = s.rate, c.rate
        turns_run = len(result["sequential"]["latencies"]) or 1
        s.note = f"Python CPU {result['sequential'].get('cpu', 0) / turns_run * 1000:.1f} ms/turn"
        if waypoint:
            s.note = f"Waypoint/{name} = {waypoint / s.rate:.1f}×; " + s.note
            c.note = f"Waypoint/{name} = {waypoint8 / c.rate:.1f}×"
            report.targets.append(Target(
                TARGET_PEER.format(name=name),
                f"{waypoint / s.rate:.1f}× sequential, {waypoint8 / c.rate:.1f}× at {CONCURRENCY} concurrent",
                waypoint / s.rate >= 2 and waypoint8 / c.rate >= 2,
            ))
            report.headline.append(Row("core turn", f"Waypoint ÷ {label}", note=(
                f"{waypoint / s.rate:.2f}× sequential, {waypoint8 / c.rate:.2f}× at {CONCURRENCY} concurrent")))

