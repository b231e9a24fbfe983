"""A check that one statement changed exactly one row, raised by PostgreSQL itself.

An append committed in one round trip (`store.commit_optimistic`) is one implicit transaction of
several statements: the head update that finds the head moved, or an update that finds no row, must
fail that transaction in the server, as a row count read afterwards can no longer roll it back.
"""

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION ledger_one_row(changed bigint, failure text) RETURNS boolean AS $$
BEGIN
  IF changed <> 1 THEN
    RAISE EXCEPTION USING MESSAGE = failure, ERRCODE = 'P0001';
  END IF;
  RETURN true;
END;
$$ LANGUAGE plpgsql;
"""
PG_BACKWARD = "DROP FUNCTION IF EXISTS ledger_one_row(bigint, text);"


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0002_append_only")]
    operations = [migrations.RunPython(forward, backward)]
