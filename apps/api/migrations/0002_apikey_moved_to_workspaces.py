# The API key now belongs to apps.workspaces (its migration 0002 takes the model over); the table
# is left in place.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("api", "0001_initial"),
        ("workspaces", "0002_apikey"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ApiKey")],
            database_operations=[],
        ),
    ]
