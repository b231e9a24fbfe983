"""
The keyword search, one whole statement per database (apps/ledger/sql.py).

Both rank the passages of current versions of live, ready sources that contain any of the
question's terms (an OR: a customer's question is not a query, and a passage need not hold every
word of it), weighing a term in the title above one in the heading above one in the text.
PostgreSQL ranks by cover density (`ts_rank_cd`, divided by 1 + log(length) so a long passage
does not win by length alone); SQLite by BM25, which also weighs rare terms above common ones.
Both scores are mapped into [0, 1) as r / (r + 1).
"""

from __future__ import annotations

from functools import cache

from apps.knowledge.models import Passage, Source
from apps.ledger.sql import Statement

# ts_rank_cd's weights, in the order D, C, B, A: text is C, the heading B, the title A.
POSTGRES_WEIGHTS = "ARRAY[0.1, 0.2, 0.5, 1.0]::float4[]"
# bm25's weights, in the FTS5 table's column order: title, anchor, text.
SQLITE_WEIGHTS = "5.0, 2.5, 1.0"
TABLES = {"p": Passage, "s": Source}
_COLUMNS = "p.{p.id}, p.{p.source_id}, p.{p.version}, p.{p.ordinal}, p.{p.title}, p.{p.anchor}, p.{p.text}, s.{s.url}"

_POSTGRES = f"""
SELECT {_COLUMNS},
       ts_rank_cd({POSTGRES_WEIGHTS}, p.search, q.query, 1) AS score
FROM {{p}} AS p
JOIN {{s}} AS s ON s.{{s.id}} = p.{{p.source_id}} AND s.{{s.version}} = p.{{p.version}}
CROSS JOIN websearch_to_tsquery('english', %s) AS q (query)
WHERE p.search @@ q.query AND s.{{s.deleted_at}} IS NULL AND s.{{s.status}} = 'ready'
  {{only}}
ORDER BY score DESC, p.{{p.id}}
LIMIT %s
"""

_SQLITE = f"""
SELECT {_COLUMNS},
       -bm25(knowledge_passage_fts, {SQLITE_WEIGHTS}) AS score
FROM knowledge_passage_fts AS f
JOIN {{p}} AS p ON p.{{p.id}} = f.rowid
JOIN {{s}} AS s ON s.{{s.id}} = p.{{p.source_id}} AND s.{{s.version}} = p.{{p.version}}
WHERE knowledge_passage_fts MATCH %s AND s.{{s.deleted_at}} IS NULL AND s.{{s.status}} = 'ready'
  {{only}}
ORDER BY score DESC, p.{{p.id}}
LIMIT %s
"""

_ONLY = {
    "postgresql": "AND s.{s.id} = ANY(%s::uuid[])",
    "sqlite": "AND s.{s.id} IN (SELECT value FROM json_each(%s))",
}


@cache
def search(vendor: str, *, only: bool) -> str:
    """The search statement's text on `vendor`; `only` adds a parameter: the source ids to keep to."""
    template = {"postgresql": _POSTGRES, "sqlite": _SQLITE}[vendor]
    template = template.replace("{only}", _ONLY[vendor] if only else "")
    return Statement(template, tables=TABLES).text
