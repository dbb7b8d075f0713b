"""The raw history packed (``dashboard.store.raw_history``): one ``GroupSample`` row per
group and poll instead of an ``OffsetSample`` row per partition and poll, and one
``BrokerOffsets`` row per cluster and cycle instead of a ``BrokerOffsetSample`` row per
partition and cycle. The rows already stored are packed into the new tables before the old
ones are dropped, so the charts and the time tables keep their last hours across the
upgrade."""

import django.db.models.deletion
from django.db import migrations, models

from dashboard.store.raw_history import broker_row, sample_row

_FIELDS = ("committed", "latest", "lag", "time_lag_s", "pending", "failed", "acked", "stale")
_BATCH = 1_000


def _grouped(rows, width):
    """(key, [values]) of rows sorted by their first ``width`` columns."""
    key, values = None, []
    for row in rows:
        if tuple(row[:width]) != key:
            if values:
                yield key, values
            key, values = tuple(row[:width]), []
        values.append(tuple(row[width:]))
    if values:
        yield key, values


def _save(model, objects):
    batch = []
    for obj in objects:
        batch.append(obj)
        if len(batch) >= _BATCH:
            model.objects.bulk_create(batch, ignore_conflicts=True)
            batch = []
    model.objects.bulk_create(batch, ignore_conflicts=True)


def pack_history(apps, schema_editor):
    OffsetSample = apps.get_model("monitoring", "OffsetSample")
    GroupSample = apps.get_model("monitoring", "GroupSample")
    samples = (
        OffsetSample.objects.order_by("partition__group_id", "at")
        .values_list("partition__group_id", "at", "partition__topic", "partition__partition",
                     *_FIELDS)  # fmt: skip
        .iterator(chunk_size=10_000)
    )
    _save(GroupSample, (
        GroupSample(group_id=group_id, at=at, **sample_row(figures))
        for (group_id, at), figures in _grouped(samples, 2)
    ))  # fmt: skip

    BrokerOffsetSample = apps.get_model("monitoring", "BrokerOffsetSample")
    BrokerOffsets = apps.get_model("monitoring", "BrokerOffsets")
    offsets = (
        BrokerOffsetSample.objects.order_by("cluster_id", "at")
        .values_list("cluster_id", "at", "topic", "partition", "earliest", "latest")
        .iterator(chunk_size=10_000)
    )

    def rows():
        for (cluster_id, at), points in _grouped(offsets, 2):
            ms = round(at.timestamp() * 1000)
            _, figures = broker_row([(t, p, ms, e, latest) for t, p, e, latest in points])
            yield BrokerOffsets(cluster_id=cluster_id, at=at, read_until=at, figures=figures)

    _save(BrokerOffsets, rows())


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0014_group_totals"),
    ]

    operations = [
        migrations.CreateModel(
            name="GroupSample",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),  # fmt: skip
                ("at", models.DateTimeField()),
                ("partitions", models.IntegerField()),
                ("lag", models.BigIntegerField(null=True)),
                ("max_time_lag_s", models.FloatField(null=True)),
                ("pending", models.BigIntegerField(null=True)),
                ("failed", models.BigIntegerField(null=True)),
                ("acked", models.BigIntegerField(null=True)),
                ("stale", models.BooleanField(default=False)),
                ("figures", models.BinaryField()),
                ("group", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="samples",
                                            to="monitoring.consumergroup")),  # fmt: skip
            ],
        ),
        migrations.AddConstraint(
            model_name="groupsample",
            constraint=models.UniqueConstraint(fields=("group", "at"), name="uniq_group_sample"),
        ),
        migrations.CreateModel(
            name="BrokerOffsets",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),  # fmt: skip
                ("at", models.DateTimeField()),
                ("read_until", models.DateTimeField()),
                ("figures", models.BinaryField()),
                ("cluster", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="+", to="monitoring.cluster")),  # fmt: skip
            ],
        ),
        migrations.AddIndex(
            model_name="brokeroffsets",
            index=models.Index(fields=["cluster", "read_until"],
                               name="monitoring__cluster_df9f96_idx"),  # fmt: skip
        ),
        migrations.AddConstraint(
            model_name="brokeroffsets",
            constraint=models.UniqueConstraint(fields=("cluster", "at"), name="uniq_broker_offsets"),
        ),
        migrations.RunPython(pack_history, migrations.RunPython.noop),
        migrations.DeleteModel(name="OffsetSample"),
        migrations.DeleteModel(name="BrokerOffsetSample"),
    ]
