from django.db import migrations, models

import apps.conversations.models


class Migration(migrations.Migration):
    dependencies = [("conversations", "0001_initial")]

    # Tokens issued before tokens expired get a full lifetime from the migration on.
    operations = [
        migrations.AddField(
            model_name="conversationtoken", name="expires_at",
            field=models.DateTimeField(default=apps.conversations.models.token_expiry),
        ),
    ]
