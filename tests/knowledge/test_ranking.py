"""BM25 on both databases: rare words weigh more, and PostgreSQL's postings follow the passages."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.knowledge import actions
from apps.knowledge.queries import search

pytestmark = pytest.mark.django_db


def test_a_rare_word_of_the_question_weighs_more_than_a_common_one(add):
    for n in range(6):
        add(f"Orders {n}", "## Your order\n\nYour order, its order number and your order history, order by order.")
    add("Paying later", "## Instalments\n\nKlarna splits the payment into three.")

    found = search("my order with klarna")

    assert found[0]["title"] == "Paying later"


def test_a_word_in_many_passages_still_finds_them_all(add):
    for n in range(8):
        add(f"Orders {n}", "## Your order\n\nYour order history.")

    assert len(search("order", limit=20)) == 8


def _postings() -> tuple[set, dict, dict]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT passage_id FROM knowledge_terms")
        held = {row[0] for row in cursor.fetchall()}
        cursor.execute("SELECT term, passages FROM knowledge_term_counts")
        counts = dict(cursor.fetchall())
        cursor.execute("SELECT u.lexeme, count(*) FROM knowledge_passages AS p, unnest(p.search) AS u GROUP BY u.lexeme "
                       "UNION ALL SELECT '', count(*) FROM knowledge_passages")
        recounted = dict(cursor.fetchall())
    return held, counts, recounted


@pytest.mark.postgres
def test_the_postings_and_counts_follow_the_passages_written_replaced_and_deleted(add):
    from apps.knowledge.models import Passage

    returns = add("Returns", "## Window\n\nReturns are accepted within 14 days.\n\n## Labels\n\nPrint the prepaid label.")
    kept = add("Delivery", "## Times\n\nStandard delivery takes three days.")
    upload = actions.check_upload(title="Returns", content=b"## Window\n\nReturns within 60 days.", format="markdown")
    actions.replace_source(source_id=str(returns.id), upload=upload, now=timezone.now() + timedelta(seconds=1))
    actions.delete_source(source_id=str(kept.id), now=timezone.now() + timedelta(seconds=2))

    held, counts, recounted = _postings()

    assert held == set(Passage.objects.values_list("id", flat=True)) and len(held) == 1
    assert counts == recounted and counts[""] == 1 and "label" not in counts and "deliveri" not in counts
    assert search("label delivery") == []
    assert search("returns")[0]["version"] == 2
