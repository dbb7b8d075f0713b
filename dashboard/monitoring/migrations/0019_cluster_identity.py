"""A cluster's identity per source (the Kafka cluster id, ZooKeeper roots' creation), the
events of its timeline, and when its offsets history last started over (null: never)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0018_partition_lag_upper_bound"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="history_from",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.CreateModel(
            name="ClusterEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField()),
                ("kind", models.CharField(max_length=32)),
                ("text", models.TextField()),
                ("detail", models.JSONField(default=dict)),
                (
                    "cluster",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="monitoring.cluster",
                    ),
                ),
            ],
            options={
                "ordering": ["-at"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("cluster", "at", "kind"), name="uniq_cluster_event"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="ClusterIdentity",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("source", models.CharField(max_length=16)),
                ("marks", models.JSONField(default=dict)),
                ("seen_at", models.DateTimeField()),
                (
                    "cluster",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="identities",
                        to="monitoring.cluster",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("cluster", "source"), name="uniq_cluster_identity"
                    )
                ],
            },
        ),
    ]
