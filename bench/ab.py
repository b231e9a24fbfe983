"""
A paired A/B of the core turn between this checkout and a git ref: `python -m bench.ab --ref main~3`.

Each side runs in a process of its own, from its own source tree (the ref is checked out into a
temporary worktree), on a database its own migrations made. The two take turns in rounds of the
same turns (A B B A …), so what drifts on the machine meanwhile (another job, the page cache)
falls on both; the figure is the median of the rounds' paired ratios, beside their spread. A
change "within noise" is one whose ratio's spread straddles 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg

from bench.conversations import BENCH_CONFIG, CONVERSATION_TURNS
from bench.environment import REDIS, ROOT

SERVER = "postgresql://postgres@127.0.0.1:5432"

# What each side runs, in its own tree: only what both sides of a change have (start_conversation,
# start_turn, the Assistant model), so an older ref runs it as it is.
WORKER = r"""
import json, os, sys, time
import django
django.setup()
from django.core.management import call_command
from django.utils import timezone
call_command("migrate", verbosity=0)
from apps.agent import actions
from apps.agent.models import Assistant
assistant = Assistant.objects.create(name="Bench", config=json.loads(os.environ["BENCH_CONFIG"]))
every = int(os.environ["CONVERSATION_TURNS"])
done = 0
conversation = ""
print("ready", flush=True)
for line in sys.stdin:
    turns = int(line)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(turns):
        if done % every == 0:
            conversation = actions.start_conversation(assistant_id=str(assistant.id), message="hello",
                                                      persona="guest:bench", edge="api", now=timezone.now())["conversation_id"]
        actions.start_turn(conversation_id=conversation, message=f"where is my order ({done})", persona="guest:bench",
                           edge="api", now=timezone.now())
        done += 1
    print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}), flush=True)
"""


class Side:
    """One source tree's worker process, on a database of its own."""

    def __init__(self, name: str, tree: Path):
        self.name, self.tree = name, tree
        self.database = f"bench_ab_{name}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')
        env = {**os.environ, "PYTHONPATH": str(tree), "DJANGO_SETTINGS_MODULE": "config.settings",
               "DATABASE_URL": f"{SERVER}/{self.database}", "WAYPOINT_RUNNER": "inline", "REDIS_URL": REDIS,
               "LOG_LEVEL": "WARNING", "DJANGO_SECRET_KEY": f"bench-ab-{uuid.uuid4().hex}", "BENCH_CONFIG": json.dumps(BENCH_CONFIG),
               "CONVERSATION_TURNS": str(CONVERSATION_TURNS)}
        self.process = subprocess.Popen([sys.executable, "-c", WORKER], cwd=tree, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if self.process.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError(f"{name}: the worker did not start (see its output above)")

    def turns(self, n: int) -> dict[str, float]:
        self.process.stdin.write(f"{n}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)
        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


def paired(ref: str, *, rounds: int, turns: int) -> dict[str, list[dict[str, float]]]:
    """Run `rounds` rounds of `turns` turns on each side, alternating which goes first; each round's figures."""
    worktree = Path(tempfile.mkdtemp(prefix="waypoint-ab-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(worktree), ref], check=True)
    sides: list[Side] = []
    try:
        for name, tree in (("before", worktree), ("after", ROOT)):
            sides.append(Side(name, tree))  # one by one, so a side that fails to start leaves the other to close
        for side in sides:
            side.turns(turns)  # warm: imports, statement caches, the first conversation
        found: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        for r in range(rounds):
            for side in (sides if r % 2 == 0 else sides[::-1]):
                found[side.name].append(side.turns(turns))
        return found
    finally:
        for side in sides:
            side.close()
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", default="HEAD~1", help="the git ref to compare this checkout with")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--turns", type=int, default=40, help="turns per round and side")
    args = parser.parse_args()

    found = paired(args.ref, rounds=args.rounds, turns=args.turns)

    print(f"core turn, {args.ref} (before) vs this checkout (after): {args.rounds} rounds × {args.turns} turns, alternated")
    for measure in ("wall", "cpu"):
        before = [r[measure] / args.turns * 1000 for r in found["before"]]
        after = [r[measure] / args.turns * 1000 for r in found["after"]]
        ratios = sorted(a / b for a, b in zip(after, before, strict=True))
        low, high = ratios[len(ratios) // 10], ratios[-1 - len(ratios) // 10]
        print(f"  {measure}: before {statistics.median(before):.2f} ms/turn, after {statistics.median(after):.2f} ms/turn; "
              f"paired ratio after/before median {statistics.median(ratios):.3f} (10th–90th percentile {low:.3f}–{high:.3f})")


if __name__ == "__main__":
    main()
