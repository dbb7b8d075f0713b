"""``PartitionState.present``: rows are rewritten only when a figure changed.

Until now every row of a group's latest cycle was written with that cycle's time, the
group's ``last_seen_at``; an older row is a partition that left its group."""

from django.db import migrations, models
from django.db.models import F


def mark_absent(apps, schema_editor) -> None:
    states = apps.get_model("monitoring", "PartitionState").objects
    states.filter(sampled_at__lt=F("group__last_seen_at")).update(present=False)


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0015_packed_history")]

    operations = [
        migrations.AddField(
            model_name="partitionstate",
            name="present",
            field=models.BooleanField(db_default=True, default=True),
        ),
        migrations.RunPython(mark_absent, migrations.RunPython.noop),
    ]
