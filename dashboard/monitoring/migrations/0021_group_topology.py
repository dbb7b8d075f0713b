"""A streams group's topology (KIP-1071), as its coordinator describes it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0020_partition_share_state"),
    ]

    operations = [
        migrations.AddField(
            model_name="consumergroup",
            name="topology",
            field=models.JSONField(blank=True, null=True),
        ),
    ]
