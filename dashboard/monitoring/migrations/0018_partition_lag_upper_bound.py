"""``PartitionState.lag_upper_bound``: a share group's lag (KIP-932) read from a broker before
KIP-1226 is computed from its start offset to the log end, which counts records already
acknowledged above the start offset: an upper bound, stored as one. False for the rows stored
before (every one an exact or unknown lag). ``ConsumerGroup.group_type`` takes "share" with
no schema change (a free text of 16 characters)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0017_time_lag_from")]

    operations = [
        migrations.AddField(
            model_name="partitionstate",
            name="lag_upper_bound",
            field=models.BooleanField(default=False, db_default=False),
        ),
    ]
