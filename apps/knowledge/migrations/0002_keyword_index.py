"""
The keyword index of passages, in each database's own full-text search.

PostgreSQL: a stored, generated tsvector (title A, anchor B, text C; English stemming) with a GIN
index. SQLite (the embedded default): an FTS5 table over the same three columns (Porter stemming)
whose rows the triggers below write with each passage, in the passage's own transaction.
"""

from django.db import migrations

POSTGRES = [
    """
    ALTER TABLE knowledge_passages ADD COLUMN search tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, title), 'A') ||
        setweight(to_tsvector('english'::regconfig, anchor), 'B') ||
        setweight(to_tsvector('english'::regconfig, text), 'C')
    ) STORED
    """,
    "CREATE INDEX knowledge_passage_search ON knowledge_passages USING GIN (search)",
]
POSTGRES_REVERSE = [
    "DROP INDEX IF EXISTS knowledge_passage_search",
    "ALTER TABLE knowledge_passages DROP COLUMN IF EXISTS search",
]

SQLITE = [
    """
    CREATE VIRTUAL TABLE knowledge_passage_fts USING fts5(
        title, anchor, text, content='knowledge_passages', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    """
    CREATE TRIGGER knowledge_passage_fts_insert AFTER INSERT ON knowledge_passages BEGIN
        INSERT INTO knowledge_passage_fts (rowid, title, anchor, text) VALUES (new.id, new.title, new.anchor, new.text);
    END
    """,
    """
    CREATE TRIGGER knowledge_passage_fts_delete AFTER DELETE ON knowledge_passages BEGIN
        INSERT INTO knowledge_passage_fts (knowledge_passage_fts, rowid, title, anchor, text)
        VALUES ('delete', old.id, old.title, old.anchor, old.text);
    END
    """,
    """
    CREATE TRIGGER knowledge_passage_fts_update AFTER UPDATE ON knowledge_passages BEGIN
        INSERT INTO knowledge_passage_fts (knowledge_passage_fts, rowid, title, anchor, text)
        VALUES ('delete', old.id, old.title, old.anchor, old.text);
        INSERT INTO knowledge_passage_fts (rowid, title, anchor, text) VALUES (new.id, new.title, new.anchor, new.text);
    END
    """,
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS knowledge_passage_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_passage_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_passage_fts_insert",
    "DROP TABLE IF EXISTS knowledge_passage_fts",
]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES, "sqlite": SQLITE}),
            _run({"postgresql": POSTGRES_REVERSE, "sqlite": SQLITE_REVERSE}),
        ),
    ]
