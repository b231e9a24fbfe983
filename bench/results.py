"""RESULTS.md: the tables of a whole run, the machine it ran on, how each figure is made, and the history below."""

from __future__ import annotations

from bench.conversations import CONCURRENCY, CONVERSATION_TURNS
from bench.environment import ROOT
from bench.report import Report, headline_table, table, targets_table
from bench.sections.pushcost import PUSH_COST_TURNS
from bench.sections.sockets import IDLE_PER_CONVERSATION, SOCKETS_AT_SCALE

RESULTS = ROOT / "bench" / "RESULTS.md"


def write_results(report: Report, *, seconds: float, argv: list[str]) -> None:
    facts = "\n".join(f"- **{k}**: {v}" for k, v in report.facts.items())
    notes = "\n".join(f"- {n}" for n in report.notes) or "- none"
    history = (ROOT / "bench" / "before-after.md").read_text() if (ROOT / "bench" / "before-after.md").exists() else ""
    RESULTS.write_text(f"""# Benchmark results

Written by `make bench` (`python -m bench.run {' '.join(argv)}`) in {seconds:.0f} s. Every figure
below comes from the same run on the same machine: the core, peer, state, push, load and verify
figures on one PostgreSQL server (a fresh database per run, dropped at the end), the end-to-end,
floor and embedded-default figures on a PostgreSQL cluster the run starts for itself (so its CPU,
its sessions and its commit times are this run's alone). Nothing here is asserted by the test
suite; the targets are goals, reported as met or not.

## Machine

{facts}

## Headline

{headline_table(report)}

## Results

{table(report)}

## Targets

{targets_table(report)}

## How each figure is made

- **Commits per turn** are counted on a real turn (`connection.execute_wrapper` and the
  connection's commit): transactions that wrote something. The **raw limit** is a psycopg loop
  making that many single-row commits (one event-sized row each) per turn, on one connection
  (and on {CONCURRENCY} for the concurrent comparison), with PostgreSQL's default synchronous commit.
- **Waypoint turns** go through the real turn code, not HTTP: `apps.agent.actions.start_turn`
  with `WAYPOINT_RUNNER=inline`, so batch one, the model rounds, the three echo actions (each
  committed with the model round that asked for it: echo is read-only) and batch two all commit
  before the call returns; each commit also publishes to Redis (the channel layer a
  multi-process deployment uses). Each conversation takes {CONVERSATION_TURNS} turns.
- **Peers** run the same turn shape in their own process: LangGraph with `PostgresSaver`
  (`durability="sync"`, a checkpoint per super-step), and a DBOS workflow of 7 steps (4 model, 3 tool).
  Neither writes a transcript, a projection or a signature; Waypoint writes all three.
- **State read** builds a conversation of 1,000 messages and reads it through Django's test client
  (in process, no network).
- **Push latency** opens 200 websockets (one per conversation) on a real Daphne process with the
  Redis channel layer and commits turns from this process; the time runs from the commit of batch
  one to the arrival of the first push that shows it.
- **Load** starts 200 customers at once against 2 Daphne processes: each posts the home page form
  and the customer page form to one process and watches its conversation over a websocket on the
  other; at the end each socket's last state is compared with the database.
- **Verify** builds a conversation of 10,000+ entries shaped like real turns and runs
  `apps.ledger.replay.verify` (every hash and Ed25519 signature, and the head).
- **End to end** runs the same page load (`bench/load.py`, `page=True`) against Waypoint and
  against the **floor** (`bench/floor`), each on 2 Daphne processes with the Redis layer and the
  same connection pool, a database of its own on the run's own cluster. Each customer does what a
  browser on the customer page does: posts the home page form, loads the conversation page, opens
  the page's socket (`format=html`), sends each message as htmx sends it (with the page's
  `expected_seq`), and counts a reply once its message block has arrived. The floor is the least the same
  stack needs for that: one transaction inserting the user's message and a reply, the new `<li>`s
  pushed to the conversation's group once it commits, a token checked on every request and socket;
  no log, no model, no markdown. Waypoint runs the bench assistant's turn (3 echo rounds + reply).
  CPU per turn is read from /proc: the Daphne processes' own, and the cluster's (its postmaster,
  live backends and exited ones); sessions are counted from the cluster's `log_connections` lines.
- **Push cost** opens page sockets (`format=html`, 1 or 5 per conversation) on one Daphne
  process, runs one turn (the fallback reply) from this process on each of {PUSH_COST_TURNS} conversations
  of 10 or 200 messages, and reads that process's CPU from /proc, less its idle CPU over the
  same time: the whole cost of pushing those turns to those sockets.
- **Commit → push on one idle Daphne** (the embedded default, in-memory layer, and the same with
  Redis): the server runs the turns itself (posted to its API, a pause between them), so the commit
  time is PostgreSQL's (`track_commit_timestamp`) and the push time this process's clock.
- **Sockets at scale** opens {SOCKETS_AT_SCALE:,} websockets on one Daphne process (the open-files
  limit raised to its hard limit first) and times commits on one of them, on a conversation of its
  own, while the others stay idle ({IDLE_PER_CONVERSATION} to a conversation, as tabs, so that making
  the conversations takes less time than the measurement).

## Notes

{notes}

{history}""")

