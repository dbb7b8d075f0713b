"""History of the Spark rollups job (SPEC §3): what long-range charts and old reports read.

Each rollups run holds only its own window (``spark_jobs/jobs.py``); this table keeps their
buckets for longer. Partitions are kept at one hour only: a minute per partition would be
14 M rows a day at 10,000 partitions, and the raw history (``GroupSample``) already covers
the short ranges where minutes matter. Names are plain strings rather than foreign keys:
history outlives a deleted group.
"""

from django.db import models


class RollupLevel(models.TextChoices):
    PARTITION = "partition"
    TOPIC = "topic"
    GROUP = "group"
    CLUSTER = "cluster"


class LagRollup(models.Model):
    cluster = models.CharField(max_length=100)
    level = models.CharField(max_length=16, choices=RollupLevel.choices)
    source = models.CharField(max_length=16, blank=True)
    group = models.CharField(max_length=255, blank=True)
    topic = models.CharField(max_length=255, blank=True)
    partition = models.IntegerField(null=True)
    resolution = models.CharField(max_length=4)  # "1m" or "1h" (spark_jobs.rollups.RESOLUTIONS)
    bucket_start = models.DateTimeField()
    lag = models.BigIntegerField(null=True)  # at the end of the bucket
    max_lag = models.BigIntegerField(null=True)
    avg_lag = models.FloatField(null=True)
    max_time_lag_s = models.FloatField(null=True)
    produce_per_s = models.FloatField(null=True)
    consume_per_s = models.FloatField(null=True)
    lag_slope_per_s = models.FloatField(null=True)
    eta_s = models.FloatField(null=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["level", "resolution", "cluster", "group", "bucket_start"],
                name="rollup_series",
            ),
            models.Index(fields=["resolution", "bucket_start"], name="rollup_age"),
        ]

    def __str__(self) -> str:
        where = "/".join(str(p) for p in (self.cluster, self.group, self.topic, self.partition))
        return f"{self.level} {where} {self.resolution}@{self.bucket_start:%Y-%m-%d %H:%M}"
