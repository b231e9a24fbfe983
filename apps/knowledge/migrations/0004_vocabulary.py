"""
SQLite: the FTS5 index's own vocabulary, `knowledge_passage_vocab` (term, passages holding it, occurrences).

A question's misspelt word is compared with the terms the index holds (apps/knowledge/spelling.py);
fts5vocab reads them from the FTS5 index itself, so it is always the index's and needs no trigger.
PostgreSQL's are the rows of `knowledge_term_counts` (0003).
"""

from django.db import migrations

SQLITE = ["CREATE VIRTUAL TABLE knowledge_passage_vocab USING fts5vocab(knowledge_passage_fts, 'row')"]
SQLITE_REVERSE = ["DROP TABLE IF EXISTS knowledge_passage_vocab"]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_term_postings")]

    operations = [migrations.RunPython(_run({"sqlite": SQLITE}), _run({"sqlite": SQLITE_REVERSE}))]
