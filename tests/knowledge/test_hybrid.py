"""
Hybrid search: passages get embeddings from an OpenAI-compatible server after they commit, and a
question's keyword ranking is fused with its meaning ranking (apps/knowledge/embeddings.py).

The server here is a small fake whose vectors count words by concept, so that a test can say which
passage means what; tests/realmodel/test_embeddings.py runs the same against a real model.
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from apps.knowledge import actions, embeddings
from apps.knowledge.models import Embedding, Passage
from apps.knowledge.queries import search

pytestmark = pytest.mark.django_db

CONCEPTS = [
    {"back", "points", "point", "earn", "earns", "reward", "rewards", "loyalty", "gold", "lot", "regular"},
    {"hours", "open", "opens", "closes", "nine", "evening"},
    {"shop", "shops", "shopping"},
    {"gift", "card", "cards", "present"},
]


def meaning(text: str) -> list[float]:
    words = text.lower().replace(".", " ").replace(",", " ").replace(";", " ").split()
    return [float(sum(w in concept for w in words)) + 0.01 for concept in CONCEPTS]


class FakeEmbeddings(BaseHTTPRequestHandler):
    asked: list[list[str]] = []
    down = False

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if type(self).down or self.path != "/v1/embeddings":
            self.send_response(503)
            self.end_headers()
            return
        type(self).asked.append(body["input"])
        if any("UNTAKEABLE" in text for text in body["input"]):  # as a server refuses an input it cannot take
            self.send_response(400)
            self.end_headers()
            return
        answer = json.dumps({"object": "list", "model": body["model"], "data": [
            {"object": "embedding", "index": i, "embedding": meaning(text)} for i, text in enumerate(body["input"])]})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(answer.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def embedder(settings):
    FakeEmbeddings.asked, FakeEmbeddings.down = [], False
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddings)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.WAYPOINT_EMBEDDINGS_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.WAYPOINT_EMBEDDINGS_MODEL = "fake-concepts"
    yield FakeEmbeddings
    server.shutdown()


@pytest.fixture
def shop(add) -> dict:
    return {
        "hours": add("Opening hours", "## Shop hours\n\nOur shops open at nine; shopping online never closes, shop any hour."),
        "gifts": add("Gift cards", "## Gift cards\n\nA gift card from any shop earns points, a reward of its own."),
        "loyalty": add("Loyalty points", "## Points\n\nRegular shopping in our shops earns points: every point is a reward."),
    }


def test_each_passage_gets_an_embedding_after_it_commits(embedder, shop):
    written = embeddings.embed_pending()

    assert written == Passage.objects.count() == Embedding.objects.count() == 3
    assert embeddings.embed_pending() == 0


def test_the_meaning_of_the_question_lifts_the_passage_that_answers_it(embedder, shop):
    question = "do i get anything back for shopping with you a lot"
    keyword = [p["title"] for p in search(question)]
    embeddings.embed_pending()

    found = search(question)

    assert keyword[0] == "Opening hours" and found[0]["title"] == "Loyalty points"
    assert {p["title"] for p in found} == set(keyword)
    assert all(0 < p["score"] < 1 for p in found)


def test_a_passage_without_its_embedding_yet_is_found_by_its_words(embedder, shop):
    assert [p["title"] for p in search("shop hours")][0] == "Opening hours"


def test_when_the_server_does_not_answer_search_is_keyword_search(embedder, shop):
    keyword = search("do i get anything back for shopping with you a lot")
    embeddings.embed_pending()
    embedder.down = True

    assert search("do i get anything back for shopping with you a lot") == keyword


def test_passages_wait_for_a_server_that_is_down_and_are_embedded_when_it_answers(embedder, shop):
    embedder.down = True

    assert embeddings.embed_pending() == 0

    embedder.down = False
    assert embeddings.embed_pending() == 3


def test_a_passage_the_server_refuses_stops_neither_the_others_nor_the_next_passes(embedder, shop, add):
    add("Odd page", "## Odd\n\nUNTAKEABLE for the embeddings server.")

    written = embeddings.embed_pending()

    assert written == 3 and Embedding.objects.exclude(vector=b"").count() == 3
    embedder.asked.clear()
    assert embeddings.embed_pending() == 0 and embedder.asked == []
    assert search("odd page")[0]["title"] == "Odd page"


def test_an_embedding_goes_with_its_passage(embedder, shop):
    embeddings.embed_pending()
    upload = actions.check_upload(title="Loyalty points", content=b"## Tiers\n\nGold starts at 500 points.", format="markdown")

    actions.replace_source(source_id=str(shop["loyalty"].id), upload=upload, now=timezone.now() + timedelta(seconds=1))
    actions.delete_source(source_id=str(shop["gifts"].id), now=timezone.now() + timedelta(seconds=2))

    assert set(Embedding.objects.values_list("passage_id", flat=True)) < set(Passage.objects.values_list("id", flat=True))
    assert embeddings.embed_pending() == 1
    assert Embedding.objects.count() == Passage.objects.count() == 2


def test_fusion_adds_the_reciprocal_ranks():
    fused = embeddings.fuse([1, 2, 3], [2, 3])

    assert [key for key, _ in fused] == [2, 3, 1]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
