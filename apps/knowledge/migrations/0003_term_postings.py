"""
PostgreSQL: each passage's terms as postings, `knowledge_terms` (term, passage, source, impact), and
how many passages hold each term, `knowledge_term_counts` (term, passages).

Ranking every passage that holds any of a question's terms with `ts_rank_cd` cost 333 ms at p99
over 10,000 passages: a common word ("order") matches a third of them, and each match was read
from its TOASTed tsvector and ranked. The postings let the search read, for each term, only its
best passages from an index (term, impact), and count how many passages hold it (the inverse
document frequency PostgreSQL's own ranking lacks). A posting's impact is the BM25 weight of the
term in the passage (k1 1.2, b 0.75 against a typical passage of 60 terms), a term in the title
counting 5 times and in the heading 2.5 times one in the text, as SQLite's bm25() weighs them.

Both follow the passages in the passages' own statements: triggers on insert, update, delete and
truncate (not a foreign key: Django's flush truncates only the tables it knows). The counts are
shared rows, so each trigger first takes one transaction-level advisory lock: two transactions
that write passages queue one behind the other instead of locking counts in crossing orders
(a deadlock). Writes of knowledge are a few per minute; searches take no lock.
Nothing searches the tsvector's GIN index any more, so it goes. SQLite is untouched: FTS5 has its
own index and BM25.
"""

from django.db import migrations

KNOWLEDGE_LOCK = 72_011  # the advisory lock's key: "knowledge writes"

# The postings of the passages in `{passages}`: one row per distinct lexeme of each passage.
POSTINGS = """
SELECT u.lexeme, n.id, n.source_id, knowledge_impact(f.tf, l.len)
FROM {passages} AS n
CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(v.positions)), 0) AS len FROM unnest(n.search) AS v) AS l
CROSS JOIN LATERAL unnest(n.search) AS u
CROSS JOIN LATERAL (
    SELECT coalesce(sum(CASE w WHEN 'A' THEN 5.0 WHEN 'B' THEN 2.5 ELSE 1.0 END), 1.0) AS tf FROM unnest(u.weights) AS w
) AS f
"""

# Add `{sign}` passages to the count of each lexeme of the passages in `{passages}`, in term order.
COUNT = """
INSERT INTO knowledge_term_counts AS c (term, passages)
SELECT u.lexeme, {sign} count(*) FROM {passages} AS n CROSS JOIN LATERAL unnest(n.search) AS u
GROUP BY u.lexeme ORDER BY u.lexeme
ON CONFLICT (term) DO UPDATE SET passages = c.passages + excluded.passages
"""
FORGET = "DELETE FROM knowledge_terms WHERE passage_id IN (SELECT id FROM old_passages)"
ADD = "INSERT INTO knowledge_terms (term, passage_id, source_id, impact) " + POSTINGS.format(passages="new_passages")
LOCK = f"PERFORM pg_advisory_xact_lock({KNOWLEDGE_LOCK})"
PRUNE = "DELETE FROM knowledge_term_counts WHERE passages <= 0"

POSTGRES = [
    """
    CREATE FUNCTION knowledge_impact(tf float8, len float8) RETURNS real
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * greatest(len, 1) / 60.0))
    """,
    """
    CREATE TABLE knowledge_terms (
        term text NOT NULL,
        passage_id bigint NOT NULL,
        source_id uuid NOT NULL,
        impact real NOT NULL
    )
    """,
    f"INSERT INTO knowledge_terms (term, passage_id, source_id, impact) {POSTINGS.format(passages='knowledge_passages')}",
    "CREATE INDEX knowledge_terms_best ON knowledge_terms (term, impact DESC) INCLUDE (passage_id, source_id)",
    "CREATE INDEX knowledge_terms_passage ON knowledge_terms (passage_id)",
    "CREATE TABLE knowledge_term_counts (term text PRIMARY KEY, passages integer NOT NULL)",
    COUNT.format(sign="", passages="knowledge_passages"),
    f"""
    CREATE FUNCTION knowledge_terms_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        {LOCK};
        {ADD};
        {COUNT.format(sign="", passages="new_passages")};
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION knowledge_terms_remove() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        {LOCK};
        {FORGET};
        {COUNT.format(sign="-", passages="old_passages")};
        {PRUNE};
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION knowledge_terms_replace() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        {LOCK};
        {FORGET};
        {COUNT.format(sign="-", passages="old_passages")};
        {ADD};
        {COUNT.format(sign="", passages="new_passages")};
        {PRUNE};
        RETURN NULL;
    END $$
    """,
    f"""
    CREATE FUNCTION knowledge_terms_clear() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        {LOCK};
        TRUNCATE knowledge_terms, knowledge_term_counts;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER knowledge_terms_insert AFTER INSERT ON knowledge_passages
    REFERENCING NEW TABLE AS new_passages FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_add()
    """,
    """
    CREATE TRIGGER knowledge_terms_delete AFTER DELETE ON knowledge_passages
    REFERENCING OLD TABLE AS old_passages FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_remove()
    """,
    """
    CREATE TRIGGER knowledge_terms_update AFTER UPDATE ON knowledge_passages
    REFERENCING OLD TABLE AS old_passages NEW TABLE AS new_passages FOR EACH STATEMENT
    EXECUTE FUNCTION knowledge_terms_replace()
    """,
    """
    CREATE TRIGGER knowledge_terms_truncate AFTER TRUNCATE ON knowledge_passages
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_clear()
    """,
    "DROP INDEX IF EXISTS knowledge_passage_search",
]
POSTGRES_REVERSE = [
    "CREATE INDEX IF NOT EXISTS knowledge_passage_search ON knowledge_passages USING GIN (search)",
    "DROP TRIGGER IF EXISTS knowledge_terms_truncate ON knowledge_passages",
    "DROP TRIGGER IF EXISTS knowledge_terms_update ON knowledge_passages",
    "DROP TRIGGER IF EXISTS knowledge_terms_delete ON knowledge_passages",
    "DROP TRIGGER IF EXISTS knowledge_terms_insert ON knowledge_passages",
    "DROP FUNCTION IF EXISTS knowledge_terms_clear()",
    "DROP FUNCTION IF EXISTS knowledge_terms_replace()",
    "DROP FUNCTION IF EXISTS knowledge_terms_remove()",
    "DROP FUNCTION IF EXISTS knowledge_terms_add()",
    "DROP TABLE IF EXISTS knowledge_term_counts",
    "DROP TABLE IF EXISTS knowledge_terms",
    "DROP FUNCTION IF EXISTS knowledge_impact(float8, float8)",
]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0002_keyword_index")]

    operations = [
        migrations.RunPython(_run({"postgresql": POSTGRES}), _run({"postgresql": POSTGRES_REVERSE})),
    ]
