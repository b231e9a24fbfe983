"""
`chat_messages.offer_handoff`: the reply's knowledge searches found nothing and it offers a person.

Added with a plain ALTER TABLE on both databases: Django's SQLite schema editor would rebuild the
table for a column with a default, and the rebuild drops the triggers that keep the message search
(0005, FTS5) in step.
"""

from django.db import migrations, models

ADD = {
    "postgresql": ["ALTER TABLE chat_messages ADD COLUMN offer_handoff boolean NOT NULL DEFAULT false"],
    "sqlite": ["ALTER TABLE chat_messages ADD COLUMN offer_handoff bool NOT NULL DEFAULT 0"],
}
DROP = {vendor: ["ALTER TABLE chat_messages DROP COLUMN offer_handoff"] for vendor in ADD}


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements.get(schema_editor.connection.vendor, ()):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ('conversations', '0007_email_follow_up'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name='chatmessage',
                    name='offer_handoff',
                    field=models.BooleanField(default=False),
                ),
            ],
            database_operations=[migrations.RunPython(_run(ADD), _run(DROP))],
        ),
    ]
