"""A share group's partition (KIP-932) gets what ``__share_group_state`` says of it: the highest
delivery count, the record delivered most often and come back, records archived (a count and
the newest one's offset, delivery count and time) and the group's delivery count limit. Null
for every row stored before, and for every partition that is not a share group's."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0019_cluster_identity"),
    ]

    operations = [
        migrations.AddField(
            model_name="partitionstate",
            name="share_archived",
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_archived_count",
            field=models.IntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_archived_ms",
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_archived_offset",
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_delivery_limit",
            field=models.IntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_max_deliveries",
            field=models.IntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_redelivered_count",
            field=models.IntegerField(null=True),
        ),
        migrations.AddField(
            model_name="partitionstate",
            name="share_redelivered_offset",
            field=models.BigIntegerField(null=True),
        ),
    ]
