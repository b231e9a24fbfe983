"""Make the event log append-only in the database itself, not only in Python.

UPDATE and DELETE on ledger_event raise, unless the transaction opened the repair gate
(`conversation repair` only): on PostgreSQL with `SET LOCAL waypoint.repair = 'on'`, on SQLite by
a row in ledger_repair_gate inserted and removed inside the same transaction.
"""

from django.db import migrations

PG_FORWARD = """
CREATE OR REPLACE FUNCTION ledger_event_append_only() RETURNS trigger AS $$
BEGIN
  IF current_setting('waypoint.repair', true) = 'on' THEN
    RETURN COALESCE(NEW, OLD);
  END IF;
  RAISE EXCEPTION 'ledger_event is append-only (% refused)', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_event_append_only BEFORE UPDATE OR DELETE ON ledger_event
  FOR EACH ROW EXECUTE FUNCTION ledger_event_append_only();
"""
PG_BACKWARD = """
DROP TRIGGER IF EXISTS ledger_event_append_only ON ledger_event;
DROP FUNCTION IF EXISTS ledger_event_append_only();
"""
SQLITE_FORWARD = [
    "CREATE TABLE ledger_repair_gate (id INTEGER PRIMARY KEY)",
    """CREATE TRIGGER ledger_event_no_update BEFORE UPDATE ON ledger_event
       WHEN NOT EXISTS (SELECT 1 FROM ledger_repair_gate)
       BEGIN SELECT RAISE(ABORT, 'ledger_event is append-only (UPDATE refused)'); END""",
    """CREATE TRIGGER ledger_event_no_delete BEFORE DELETE ON ledger_event
       WHEN NOT EXISTS (SELECT 1 FROM ledger_repair_gate)
       BEGIN SELECT RAISE(ABORT, 'ledger_event is append-only (DELETE refused)'); END""",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS ledger_event_no_update",
    "DROP TRIGGER IF EXISTS ledger_event_no_delete",
    "DROP TABLE IF EXISTS ledger_repair_gate",
]


def forward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARD, params=None)
    elif vendor == "sqlite":
        for sql in SQLITE_FORWARD:
            schema_editor.execute(sql)


def backward(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_BACKWARD, params=None)
    elif vendor == "sqlite":
        for sql in SQLITE_BACKWARD:
            schema_editor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]
    operations = [migrations.RunPython(forward, backward)]
