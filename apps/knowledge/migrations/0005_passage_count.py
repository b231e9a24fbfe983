"""
PostgreSQL: `knowledge_term_counts` also counts the passages, as the term '' (no lexeme is empty).

The search's inverse document frequency needs how many passages there are; summing the sources'
`chunks` read every source on every search (2 ms at 2,400 sources, and more with each). The
triggers of 0003 keep the count in the transaction that writes the passages, under the same lock.
"""

import importlib

from django.db import migrations

_0003 = importlib.import_module("apps.knowledge.migrations.0003_term_postings")

# 0003's count of each lexeme of the passages in `{passages}`, and of the passages themselves.
COUNT = """
INSERT INTO knowledge_term_counts AS c (term, passages)
SELECT t.term, t.passages FROM (
    SELECT u.lexeme AS term, {sign} count(*) AS passages FROM {passages} AS n CROSS JOIN LATERAL unnest(n.search) AS u
    GROUP BY u.lexeme
    UNION ALL
    SELECT '', {sign} count(*) FROM {passages}
) AS t
ORDER BY t.term
ON CONFLICT (term) DO UPDATE SET passages = c.passages + excluded.passages
"""


def _functions(count: str) -> list[str]:
    """0003's trigger functions, counting with `count`."""
    lock, forget, add, prune = _0003.LOCK, _0003.FORGET, _0003.ADD, _0003.PRUNE
    return [
        f"""
        CREATE OR REPLACE FUNCTION knowledge_terms_add() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {lock};
            {add};
            {count.format(sign="", passages="new_passages")};
            RETURN NULL;
        END $$
        """,
        f"""
        CREATE OR REPLACE FUNCTION knowledge_terms_remove() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {lock};
            {forget};
            {count.format(sign="-", passages="old_passages")};
            {prune};
            RETURN NULL;
        END $$
        """,
        f"""
        CREATE OR REPLACE FUNCTION knowledge_terms_replace() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {lock};
            {forget};
            {count.format(sign="-", passages="old_passages")};
            {add};
            {count.format(sign="", passages="new_passages")};
            {prune};
            RETURN NULL;
        END $$
        """,
    ]


POSTGRES = [
    *_functions(COUNT),
    "INSERT INTO knowledge_term_counts (term, passages) SELECT '', count(*) FROM knowledge_passages "
    "ON CONFLICT (term) DO UPDATE SET passages = excluded.passages",
    "DELETE FROM knowledge_term_counts WHERE passages <= 0",
]
POSTGRES_REVERSE = [*_functions(_0003.COUNT), "DELETE FROM knowledge_term_counts WHERE term = ''"]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0004_vocabulary")]

    operations = [migrations.RunPython(_run({"postgresql": POSTGRES}), _run({"postgresql": POSTGRES_REVERSE}))]
