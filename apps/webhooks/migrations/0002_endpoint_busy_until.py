from django.db import migrations, models

# Every process's dispatcher LISTENs on this channel: a commit that wrote deliveries, or made one due
# now (a resend), wakes them all; claims and retries move it into the future and wake nobody.
# PostgreSQL sends a transaction's identical notifications once, at its commit.
NOTIFY = """
CREATE FUNCTION webhook_deliveries_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('waypoint_webhooks', '');
    RETURN NULL;
END $$;
CREATE TRIGGER webhook_deliveries_notify AFTER INSERT ON webhook_deliveries
    FOR EACH ROW EXECUTE FUNCTION webhook_deliveries_notify();
CREATE TRIGGER webhook_deliveries_notify_due AFTER UPDATE OF next_attempt_at ON webhook_deliveries
    FOR EACH ROW WHEN (NEW.status = 'pending' AND NEW.next_attempt_at <= clock_timestamp())
    EXECUTE FUNCTION webhook_deliveries_notify();
"""
UNDO = """
DROP TRIGGER IF EXISTS webhook_deliveries_notify ON webhook_deliveries;
DROP TRIGGER IF EXISTS webhook_deliveries_notify_due ON webhook_deliveries;
DROP FUNCTION IF EXISTS webhook_deliveries_notify();
"""


def notify(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(NOTIFY)


def unnotify(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNDO)


class Migration(migrations.Migration):

    dependencies = [
        ("webhooks", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="webhookendpoint",
            name="busy_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(notify, unnotify),
    ]
