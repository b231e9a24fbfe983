"""
Hybrid search against a real embeddings server: llama-cpp-python's, serving SmolLM2's embeddings
(`--embedding true`). The passages are embedded by the indexer's own pass, each with the model's
vector, and a question is answered from the fused ranking; a small chat model's embeddings say
little about meaning, so this checks the path, not the quality.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from apps.knowledge import actions, embeddings
from apps.knowledge.models import Embedding, Passage
from apps.knowledge.queries import search
from tests.knowledge.documents import HELP_CENTRE
from tests.realmodel import server

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def embedding_server():
    reason = server.missing()
    if reason:
        pytest.skip(reason)
    running = server.LlamaServer(embedding=True).start()
    yield running
    running.stop()


def test_passages_are_embedded_by_a_real_model_and_the_search_fuses_both_rankings(embedding_server, settings):
    settings.WAYPOINT_EMBEDDINGS_BASE_URL = embedding_server.base_url
    settings.WAYPOINT_EMBEDDINGS_MODEL = "smollm2"
    settings.WAYPOINT_EMBEDDINGS_TIMEOUT_SECONDS = 60
    for title, text in HELP_CENTRE.items():
        actions.add_source(upload=actions.check_upload(title=title, content=text.encode(), format="markdown"),
                           now=timezone.now())

    written = embeddings.embed_pending()

    assert written == Passage.objects.count() == Embedding.objects.filter(model="smollm2").count()
    sizes = {len(embeddings.unpack(v)) for v in Embedding.objects.values_list("vector", flat=True)}
    assert len(sizes) == 1 and sizes.pop() >= 64
    keyword_ids = {p["passage_id"] for p in search("how do I return a jacket that doesn't fit?", limit=50)}
    found = search("how do I return a jacket that doesn't fit?")
    assert found and {p["passage_id"] for p in found} <= keyword_ids
    assert "Returns" in {p["title"] for p in found}
