"""
The keyword search, one whole statement per database (apps/ledger/sql.py).

Both rank the passages of current versions of live, ready sources that contain any of the
question's terms (an OR: a customer's question is not a query, and a passage need not hold every
word of it) by BM25: a term counts more the rarer it is among the passages, with diminishing
returns for repeating it, and a term in the title (5) or the heading (2.5) more than one in the text.

PostgreSQL reads the postings of migration 0003 (`knowledge_terms`: term, passage, source and the
term's BM25 weight in the passage) and the count of passages that hold each term
(`knowledge_term_counts`, whose term '' counts the passages). For each of the question's terms it takes its CHAMPIONS best postings
from the (term, impact) index; the passages found are scored by the sum of their terms' weights
times the terms' inverse document frequencies. Reading a bounded number of index entries per term,
instead of ranking every passage that holds a common word, is what keeps a search over 10,000
passages within a few milliseconds. SQLite ranks with FTS5's own bm25(). Both scores are mapped
into [0, 1) as r / (r + 1).
"""

from __future__ import annotations

from functools import cache

from apps.knowledge.models import Passage, Source
from apps.ledger.sql import Statement

# bm25's weights, in the FTS5 table's column order: title, anchor, text.
SQLITE_WEIGHTS = "5.0, 2.5, 1.0"
# The postings read per term: its passages of highest weight. Rarer terms are read whole.
CHAMPIONS = 300
# Passages kept from the postings (SQLite: from FTS5's ranking) before the join that checks each
# is current (they all are). On PostgreSQL each, and its source, is looked up by its key in a
# subquery the planner cannot flatten (LIMIT 1): where the tables' statistics are stale (right
# after a large ingest, or with autovacuum off) a plan that joined every passage to its source
# first, or found a source through another index, cost 40 ms.
SLACK = 10
TABLES = {"p": Passage, "s": Source}
_COLUMNS = "p.{p.id}, p.{p.source_id}, p.{p.version}, p.{p.ordinal}, p.{p.title}, p.{p.anchor}, p.{p.text}, s.{s.url}"

# Parameters: the question's terms as the index holds them (TERMS_POSTGRES), [the source ids], the
# limit + SLACK, the limit. Terms, not words: stemming them here made the planner expect ten terms
# per word, and a plan that costly is compiled by JIT first (20 ms and more).
_POSTGRES = f"""
WITH question (term) AS (
    SELECT DISTINCT unnest(%s::text[])
),
corpus (n) AS (
    SELECT greatest(coalesce(max(k.passages), 0), 1)::float8 FROM knowledge_term_counts AS k WHERE k.term = ''
),
weighed (term, idf) AS (
    SELECT q.term, ln(1 + (c.n - k.passages + 0.5) / (k.passages + 0.5))
    FROM question AS q JOIN knowledge_term_counts AS k ON k.term = q.term CROSS JOIN corpus AS c
),
best (id, score) AS (
    SELECT h.passage_id, sum(w.idf * h.impact)
    FROM weighed AS w
    CROSS JOIN LATERAL (
        SELECT t.passage_id, t.impact FROM knowledge_terms AS t
        WHERE t.term = w.term {{only_terms}}
        ORDER BY t.impact DESC LIMIT {CHAMPIONS}
    ) AS h
    GROUP BY h.passage_id
    ORDER BY 2 DESC, 1
    LIMIT %s
)
SELECT {_COLUMNS}, b.score
FROM best AS b
CROSS JOIN LATERAL (SELECT * FROM {{p}} AS p WHERE p.{{p.id}} = b.id LIMIT 1) AS p
CROSS JOIN LATERAL (SELECT * FROM {{s}} AS s WHERE s.{{s.id}} = p.{{p.source_id}} LIMIT 1) AS s
WHERE s.{{s.version}} = p.{{p.version}} AND s.{{s.deleted_at}} IS NULL AND s.{{s.status}} = 'ready'
ORDER BY b.score DESC, p.{{p.id}}
LIMIT %s
"""

# SQLite ranks in FTS5 first and joins only the best (+ SLACK) to their passages and sources:
# joining every match before ranking took twice as long (p50 11.4 → 5.8 ms at 10,000 passages).
# Parameters: the FTS5 query, the limit + SLACK, the limit.
_SQLITE = f"""
SELECT {_COLUMNS}, f.score
FROM (
    SELECT rowid AS id, -bm25(knowledge_passage_fts, {SQLITE_WEIGHTS}) AS score
    FROM knowledge_passage_fts WHERE knowledge_passage_fts MATCH %s
    ORDER BY score DESC, rowid
    LIMIT %s
) AS f
JOIN {{p}} AS p ON p.{{p.id}} = f.id
JOIN {{s}} AS s ON s.{{s.id}} = p.{{p.source_id}} AND s.{{s.version}} = p.{{p.version}}
WHERE s.{{s.deleted_at}} IS NULL AND s.{{s.status}} = 'ready'
ORDER BY f.score DESC, p.{{p.id}}
LIMIT %s
"""
# Kept to some sources, the passages are those sources' before they are ranked, or the best of
# the others would crowd them out. Parameters: the FTS5 query, the source ids as JSON, the limit.
_SQLITE_ONLY = f"""
SELECT {_COLUMNS},
       -bm25(knowledge_passage_fts, {SQLITE_WEIGHTS}) AS score
FROM knowledge_passage_fts AS f
JOIN {{p}} AS p ON p.{{p.id}} = f.rowid
JOIN {{s}} AS s ON s.{{s.id}} = p.{{p.source_id}} AND s.{{s.version}} = p.{{p.version}}
WHERE knowledge_passage_fts MATCH %s AND s.{{s.deleted_at}} IS NULL AND s.{{s.status}} = 'ready'
  AND s.{{s.id}} IN (SELECT value FROM json_each(%s))
ORDER BY score DESC, p.{{p.id}}
LIMIT %s
"""

# The question's words as the index's terms. PostgreSQL, in one statement: each word's terms that
# some passage holds (stemmed as the passages are), and for each of the words that may be
# misspelt (the second list) of which no passage holds any term, the index's terms that start
# with its letter, marked `near` (apps/knowledge/spelling.py).
TERMS_POSTGRES = """
WITH asked (word, term, held) AS MATERIALIZED (
    SELECT w.word, v.lexeme, k.passages
    FROM unnest(%s::text[]) AS w (word)
    CROSS JOIN LATERAL unnest(to_tsvector('english', w.word)) AS v
    LEFT JOIN knowledge_term_counts AS k ON k.term = v.lexeme
),
unknown (word) AS (
    SELECT w.word FROM unnest(%s::text[]) AS w (word)
    WHERE NOT EXISTS (SELECT FROM asked AS a WHERE a.word = w.word AND a.held IS NOT NULL)
)
SELECT a.word, a.term, a.held, false AS near FROM asked AS a WHERE a.held IS NOT NULL
UNION ALL
SELECT u.word, k.term, k.passages, true
FROM unknown AS u
JOIN knowledge_term_counts AS k ON k.term >= left(u.word, 1) AND k.term < chr(ascii(left(u.word, 1)) + 1)
"""
# SQLite, in two: the words no passage holds (FTS5 stems them as it stems the passages), then the
# index's terms from one letter up to the next, from FTS5's own vocabulary (migration 0004).
UNKNOWN_SQLITE = """
SELECT j.value FROM json_each(%s) AS j
WHERE NOT EXISTS (SELECT 1 FROM knowledge_passage_fts WHERE knowledge_passage_fts MATCH '"' || j.value || '"')
"""
VOCABULARY_SQLITE = "SELECT term, doc FROM knowledge_passage_vocab WHERE term >= %s AND term < %s"

@cache
def search(vendor: str, *, only: bool) -> str:
    """
    The search statement's text on `vendor`.

    PostgreSQL's parameters: the question's terms (a list), [the source ids to keep to, with
    `only`], the limit + SLACK, the limit. SQLite's: the FTS5 query, then the limit + SLACK and
    the limit, or with `only` the source ids as JSON and the limit.
    """
    if vendor == "postgresql":
        template = _POSTGRES.replace("{only_terms}", "AND t.source_id = ANY(%s::uuid[])" if only else "")
    else:
        template = _SQLITE_ONLY if only else _SQLITE
    return Statement(template, tables=TABLES).text
