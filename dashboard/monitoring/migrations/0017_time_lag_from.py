"""``PartitionState.time_lag_from_ms``: a stopped consumer's row is no longer rewritten every
cycle only because its time lag grew. Null for the rows stored before: their next
cycle writes it."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0016_partition_present")]

    operations = [
        migrations.AddField(
            model_name="partitionstate",
            name="time_lag_from_ms",
            field=models.FloatField(null=True),
        ),
    ]
