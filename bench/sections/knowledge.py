"""
`make bench ARGS="--only knowledge"`: the help content's search (PRODUCT.md "Knowledge").

* **Retrieval quality.** recall@5 of the evaluation set (bench/data/knowledge: a shop's help
  centre and questions written the way customers write, each with the article that answers it):
  for each question, does a passage of its article come in the first five. Keyword search only
  (goal ≥ 0.9); then again with the same articles buried in the 10,000 passages below.
* **Ingest.** 1,000 help articles of about 300 words through `add_source`, the API's own path, one
  transaction each (goal ≤ 60 s).
* **Search at 10,000 passages**, keyword (goal p50 ≤ 20 ms, p99 ≤ 50 ms): the evaluation's questions
  against the corpus, on PostgreSQL in this process and on SQLite (the embedded default) in a
  process of its own. The floor beside it: the same statement's plan-free cost, a `SELECT 1`.
* **A turn's added cost with knowledge on**: a turn whose tool round is `search_knowledge` over the
  10,000 passages, interleaved with the same turn whose tool round is the `echo` action.

The corpus is made of the evaluation articles' own words, shuffled into sections of 60-90 words
under made-up headings: noise that shares the help centre's vocabulary, so the search has to rank.
"""

from __future__ import annotations

import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from bench.environment import ROOT
from bench.knowledge_eval import ARTICLES, QUESTIONS
from bench.report import Row, Target

TARGET_RECALL = "recall@5 ≥ 0.9 on the evaluation set, keyword search only"
TARGET_INGEST = "1,000 help articles of about 300 words ingested in ≤ 60 s"
TARGET_SEARCH = "search p50 ≤ 20 ms and p99 ≤ 50 ms at 10,000 passages, keyword ({db})"
PASSAGES = 10_000


def vocabulary() -> list[str]:
    return sorted({w.lower() for text in ARTICLES.values() for w in re.findall(r"[A-Za-z]{3,}", text)})


def article(rng: random.Random, words: list[str], n: int, sections: int, section_words: tuple[int, int]) -> tuple[str, str]:
    """A made-up help article: a title and `sections` sections of shuffled help-centre words."""
    title = f"{' '.join(rng.sample(words, 2)).capitalize()} {n}"
    parts = [f"# {title}"]
    for s in range(sections):
        parts.append(f"## {' '.join(rng.sample(words, 3)).capitalize()} {s}")
        parts.append(" ".join(rng.choices(words, k=rng.randint(*section_words))) + ".")
    return title, "\n\n".join(parts)


def corpus(seed: int = 7) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """
    1,000 articles of about 300 words (three sections each, the ingest's), then enough articles of
    five short sections to bring the passages to 10,000 with the evaluation's own.
    """
    rng, words = random.Random(seed), vocabulary()
    ingest = [article(rng, words, n, 3, (90, 110)) for n in range(1000)]
    rest = [article(rng, words, 1000 + n, 5, (60, 90)) for n in range((PASSAGES - 3000 - 2 * len(ARTICLES)) // 5)]
    return ingest, rest


def add_all(articles, *, now) -> float:
    """Add `articles` through the API's path; the seconds it took."""
    from apps.knowledge import actions

    began = time.perf_counter()
    for title, text in articles:
        actions.add_source(upload=actions.check_upload(title=title, content=text.encode(), format="markdown"), now=now)
    return time.perf_counter() - began


def recall_at_5(limit: int = 5) -> tuple[float, list[str]]:
    """The share of the evaluation's questions whose article has a passage in the first `limit`; the misses."""
    from apps.knowledge.queries import search

    misses = []
    for question, answer in QUESTIONS:
        if answer not in {p["title"] for p in search(question, limit=limit)}:
            misses.append(f"{question!r} → {answer}")
    return 1 - len(misses) / len(QUESTIONS), misses


def search_times(rounds: int) -> list[float]:
    from apps.knowledge.queries import search

    for question, _ in QUESTIONS[:10]:  # warm the statement and the caches
        search(question)
    times = []
    for _ in range(rounds):
        for question, _ in QUESTIONS:
            began = time.perf_counter()
            search(question)
            times.append(time.perf_counter() - began)
    return times


def passages() -> int:
    from apps.knowledge.models import Passage

    return Passage.objects.count()


def measure(*, quick: bool) -> dict:
    """The whole measurement on the database this process is configured with: what both databases report."""
    from django.utils import timezone

    from apps.knowledge.models import Source

    Source.objects.all().delete()
    eval_seconds = add_all(ARTICLES.items(), now=timezone.now())
    recall, misses = recall_at_5()
    ingest, rest = corpus()
    ingest_seconds = add_all(ingest, now=timezone.now())
    add_all(rest, now=timezone.now())
    recall_buried, _ = recall_at_5()
    times = search_times(2 if quick else 6)
    return {"eval_articles": len(ARTICLES), "questions": len(QUESTIONS), "eval_seconds": eval_seconds, "recall": recall,
            "misses": misses, "ingest_seconds": ingest_seconds, "ingest_articles": len(ingest),
            "ingest_words": statistics.mean(len(text.split()) for _, text in ingest), "passages": passages(),
            "recall_buried": recall_buried, "search": times}


SQLITE_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from bench.sections.knowledge import measure
print("RESULT " + json.dumps(measure(quick={quick!r})))
"""


def measure_sqlite(*, quick: bool) -> dict:
    """`measure` in a process of its own on a fresh SQLite database, the embedded default's settings."""
    import os

    with tempfile.TemporaryDirectory(prefix="waypoint-bench-") as tmp:
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3", "WAYPOINT_DATA_DIR": tmp, "DEBUG": "0",
               "DJANGO_SECRET_KEY": "bench-" + uuid.uuid4().hex, "DJANGO_SETTINGS_MODULE": "config.settings",
               "WAYPOINT_RUNNER": "inline", "LOG_LEVEL": "WARNING"}
        for args in (["migrate", "--noinput", "-v0"], ["shell", "-c", SQLITE_SCRIPT.format(root=str(ROOT), quick=quick)]):
            done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=1800)
            if done.returncode != 0:
                raise RuntimeError(f"the SQLite measurement failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.split("RESULT ", 1)[1])


def turn_cost(report, *, quick: bool) -> None:
    """A turn whose tool round searches the 10,000 passages, against the same turn with an echo round."""
    from django.utils import timezone

    from apps.agent import actions
    from apps.agent.actions import create_assistant

    def rules(call: str) -> dict:
        return {"provider": "scripted", "rules": [{"match": "", "steps": [
            {"call": call, "arguments": {"query": "{message}"}}, {"say": "Done."}]}], "fallback": [{"say": "ok"}]}

    echo = create_assistant(config={"name": "Bench echo", "model": rules("lookup"),
                                    "tools": [{"name": "lookup", "kind": "server", "action": "echo"}]})
    knows = create_assistant(config={"name": "Bench knowledge", "model": rules("search_knowledge"), "tools": [],
                                     "knowledge": {"enabled": True}})

    def turn(assistant, question: str) -> float:
        began = time.perf_counter()
        actions.start_conversation(assistant_id=str(assistant.id), message=question, persona="guest:bench", edge="api",
                                   now=timezone.now())
        return time.perf_counter() - began

    questions = [q for q, _ in QUESTIONS]
    for q in questions[:3]:
        turn(echo, q), turn(knows, q)
    echo_times, knowledge_times = [], []
    for i in range(20 if quick else 100):
        q = questions[i % len(questions)]
        echo_times.append(turn(echo, q))
        knowledge_times.append(turn(knows, q))
    echo_row = report.latency_row("knowledge", "Turn with an echo tool round (conversation start + reply)", echo_times)
    knows_row = report.latency_row("knowledge", "The same turn with a search_knowledge round over 10,000 passages", knowledge_times)
    report.rows.append(Row("knowledge", "Added by knowledge, p50", p50_ms=knows_row.p50_ms - echo_row.p50_ms))


def section_knowledge(report, *, quick: bool) -> None:
    from django.db import connection

    results = {"PostgreSQL": measure(quick=quick), "SQLite": measure_sqlite(quick=quick)}
    floor = []
    with connection.cursor() as cursor:
        for _ in range(200):
            began = time.perf_counter()
            cursor.execute("SELECT 1")
            floor.append(time.perf_counter() - began)
    report.latency_row("knowledge", "Floor: SELECT 1 on PostgreSQL", floor)
    for db, got in results.items():
        row = report.latency_row("knowledge", f"Search at {got['passages']:,} passages, keyword, {db}", got["search"])
        report.targets.append(Target(TARGET_SEARCH.format(db=db), f"p50 {row.p50_ms:.1f} ms, p99 {row.p99_ms:.1f} ms",
                                     row.p50_ms <= 20 and row.p99_ms <= 50))
        report.targets.append(Target(f"{TARGET_INGEST} ({db})", f"{got['ingest_seconds']:.1f} s for {got['ingest_articles']:,} "
                                     f"articles of {got['ingest_words']:.0f} words", got["ingest_seconds"] <= 60))
        report.rows.append(Row("knowledge", f"recall@5, keyword, {db}: {got['questions']} questions on {got['eval_articles']} "
                               f"articles", note=f"{got['recall']:.2f}; {got['recall_buried']:.2f} with them among "
                               f"{got['passages']:,} passages"))
        print(f"knowledge ({db}): recall@5 {got['recall']:.2f} ({got['recall_buried']:.2f} among {got['passages']:,} passages), "
              f"search p50 {row.p50_ms:.1f} ms p99 {row.p99_ms:.1f} ms, ingest {got['ingest_seconds']:.1f} s", flush=True)
        for miss in got["misses"]:
            print(f"  missed ({db}): {miss}", flush=True)
    recall = results["PostgreSQL"]["recall"]
    report.targets.append(Target(TARGET_RECALL, ", ".join(f"{db} {got['recall']:.2f}" for db, got in results.items()),
                                 min(got["recall"] for got in results.values()) >= 0.9))
    report.figures["knowledge_recall"] = recall
    report.notes.append("recall@5 is of keyword search: hybrid search needs an embeddings server (WAYPOINT_EMBEDDINGS_BASE_URL)")
    turn_cost(report, quick=quick)
