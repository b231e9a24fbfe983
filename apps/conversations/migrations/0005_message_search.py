"""
A keyword index of what was said (the `chat_messages` text), for the staff list's search.

PostgreSQL: a stored, generated tsvector (English stemming) with a GIN index, as the knowledge
passages have. SQLite (the embedded default): an FTS5 table of its own (Porter stemming) keyed by
the message id, which the triggers below write with each message, in the message's own
transaction; it does not borrow the table's implicit rowids, which a VACUUM may renumber.
"""

from django.db import migrations

POSTGRES = [
    "ALTER TABLE chat_messages ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED",
    "CREATE INDEX chat_message_search ON chat_messages USING GIN (search)",
]
POSTGRES_REVERSE = [
    "DROP INDEX IF EXISTS chat_message_search",
    "ALTER TABLE chat_messages DROP COLUMN IF EXISTS search",
]

SQLITE = [
    """
    CREATE VIRTUAL TABLE chat_message_fts USING fts5(
        message_id UNINDEXED, conversation_id UNINDEXED, text, tokenize='porter unicode61 remove_diacritics 2'
    )
    """,
    """
    INSERT INTO chat_message_fts (message_id, conversation_id, text) SELECT id, conversation_id, text FROM chat_messages
    """,
    """
    CREATE TRIGGER chat_message_fts_insert AFTER INSERT ON chat_messages BEGIN
        INSERT INTO chat_message_fts (message_id, conversation_id, text) VALUES (new.id, new.conversation_id, new.text);
    END
    """,
    """
    CREATE TRIGGER chat_message_fts_delete AFTER DELETE ON chat_messages BEGIN
        DELETE FROM chat_message_fts WHERE message_id = old.id;
    END
    """,
    """
    CREATE TRIGGER chat_message_fts_update AFTER UPDATE OF text ON chat_messages BEGIN
        DELETE FROM chat_message_fts WHERE message_id = old.id;
        INSERT INTO chat_message_fts (message_id, conversation_id, text) VALUES (new.id, new.conversation_id, new.text);
    END
    """,
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS chat_message_fts_update",
    "DROP TRIGGER IF EXISTS chat_message_fts_delete",
    "DROP TRIGGER IF EXISTS chat_message_fts_insert",
    "DROP TABLE IF EXISTS chat_message_fts",
]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("conversations", "0004_message_citations")]

    operations = [
        migrations.RunPython(
            _run({"postgresql": POSTGRES, "sqlite": SQLITE}),
            _run({"postgresql": POSTGRES_REVERSE, "sqlite": SQLITE_REVERSE}),
        ),
    ]
