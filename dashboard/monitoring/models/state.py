"""Latest state of every group and partition, plus a short raw history for live charts.

The collectors overwrite the latest state each cycle; the history is append-only, keyed by
the cycle's time so a retried task writes the same rows again instead of new ones.
"""

from django.db import models

from dashboard.monitoring.models.config import Cluster


class SourceKind(models.TextChoices):
    KAFKA = "kafka", "Kafka"
    ZOOKEEPER = "zookeeper", "ZooKeeper"
    STORM = "storm", "Storm"


class Status(models.TextChoices):
    """Burrow's status names, plus UNKNOWN until the evaluator has run."""

    UNKNOWN = "UNKNOWN"
    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    REWIND = "REWIND"
    ERR = "ERR"


class ConsumerGroup(models.Model):
    """A Kafka group, a ZooKeeper-based consumer group, or a Storm spout (name = spout id)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="groups")
    source = models.CharField(max_length=16, choices=SourceKind.choices)
    name = models.CharField(max_length=255)
    state = models.CharField(max_length=32, blank=True)
    # Kafka's group type: "classic", "consumer" (KIP-848), "share" (KIP-932: a queue, whose
    # partitions' ``committed`` is the share-partition start offset) or "streams" (KIP-1071:
    # Kafka Streams, whose commits are a consumer group's); blank where not Kafka or unknown.
    group_type = models.CharField(max_length=16, blank=True, default="", db_default="")
    generation = models.BigIntegerField(null=True)
    assignment_epoch = models.BigIntegerField(null=True)  # KIP-848 groups only
    assignor = models.CharField(max_length=100, blank=True)
    coordinator = models.CharField(max_length=255, blank=True)
    # [{member_id, instance_id, client_id, host, assignment, target_assignment, member_epoch,
    #   subscription}], and for a streams group's members {process_id, tasks, target_tasks}
    #   too, tasks as {active, standby, warmup: [[subtopology id, partition]]}
    members = models.JSONField(default=list)
    members_known = models.BooleanField(default=True)
    # The topics the source named for the group (subscribed, assigned, committed), as the
    # rebalance tracker compares them; null for a group no source described (a Storm spout).
    # With the fields above it is the group's snapshot, which another collector process
    # rebuilds its rebalance tracker from (collectors/cycle/runner.py).
    topics = models.JSONField(null=True)
    owner = models.CharField(max_length=255, blank=True)  # topology name for a spout
    topology_id = models.CharField(max_length=255, blank=True)
    # A streams group's topology (KIP-1071) as its coordinator initialised it: {epoch,
    # subtopologies: [{id, source_topics, repartition_sink_topics, state_changelog_topics}]}
    # (subtopologies null until the group is initialised); null for any other group.
    topology = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UNKNOWN)
    total_lag = models.BigIntegerField(null=True)
    max_time_lag_s = models.FloatField(null=True)
    # Set by the status job (SPEC §4): share of partitions with a full window, and when.
    complete = models.FloatField(null=True)
    evaluated_at = models.DateTimeField(null=True)
    # When the current status began: alerts' minimum duration, "stuck for 12 min" in the UI.
    status_since = models.DateTimeField(null=True)
    stale = models.BooleanField(default=False)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    # Totals of the group's partition rows as they are now, rewritten by whatever writes
    # those rows (dashboard/monitoring/group_totals.py): the overview and the groups list read
    # them instead of scanning every partition (100,000 rows in a large deployment).
    partitions_total = models.IntegerField(default=0, db_default=0)
    partitions_ok = models.IntegerField(default=0, db_default=0)
    partitions_warn = models.IntegerField(default=0, db_default=0)
    partitions_stall = models.IntegerField(default=0, db_default=0)
    partitions_stop = models.IntegerField(default=0, db_default=0)
    partitions_rewind = models.IntegerField(default=0, db_default=0)
    partitions_err = models.IntegerField(default=0, db_default=0)
    partitions_unknown = models.IntegerField(default=0, db_default=0)
    lag_sum = models.BigIntegerField(null=True)  # null: no partition has a lag
    time_lag_max_s = models.FloatField(null=True)
    retention_left_min_s = models.FloatField(null=True)
    last_commit_max_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "source", "name"], name="uniq_group")
        ]
        indexes = [models.Index(fields=["status"]), models.Index(fields=["cluster", "name"])]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.source}/{self.name}"


def seen_at(present: bool, sampled_at, group_last_seen_at):
    """A partition's last sample time from its row and its group's (see ``present``)."""
    if present and group_last_seen_at is not None and group_last_seen_at > sampled_at:
        return group_last_seen_at
    return sampled_at


class PartitionState(models.Model):
    group = models.ForeignKey(ConsumerGroup, on_delete=models.CASCADE, related_name="partitions")
    topic = models.CharField(max_length=255)
    partition = models.IntegerField()
    committed = models.BigIntegerField(null=True)
    earliest = models.BigIntegerField(null=True)
    latest = models.BigIntegerField(null=True)
    lag = models.BigIntegerField(null=True)
    # A share group's lag computed from its start offset because its broker reports none
    # (before KIP-1226): the real lag is at most ``lag``. db_default: see ``reason``.
    lag_upper_bound = models.BooleanField(default=False, db_default=False)
    time_lag_s = models.FloatField(null=True)
    time_lag_kind = models.CharField(max_length=16, blank=True)
    # When the latest offset was at ``committed`` (ms), for a time lag that grows with the
    # clock: a cycle that finds only the time lag grown recomputes it from this in one UPDATE
    # rather than rewriting the row (``store._age_time_lags``). Null when it does not grow.
    time_lag_from_ms = models.FloatField(null=True)
    owner = models.CharField(max_length=255, blank=True)
    alive = models.BooleanField(null=True)
    last_commit_at = models.DateTimeField(null=True)
    commit_version = models.BigIntegerField(null=True)
    pending = models.BigIntegerField(null=True)
    failed = models.BigIntegerField(null=True)
    acked = models.BigIntegerField(null=True)
    # A share group's partition, from ``__share_group_state`` (``ShareStateFigures``; null
    # where it was not read): the highest delivery count of the records its state holds, the
    # record delivered most often and come back (offset, count), records archived (a count,
    # and the newest: offset, delivery count, when), and the group's delivery count limit.
    share_max_deliveries = models.IntegerField(null=True)
    share_redelivered_offset = models.BigIntegerField(null=True)
    share_redelivered_count = models.IntegerField(null=True)
    share_archived = models.BigIntegerField(null=True)
    share_archived_offset = models.BigIntegerField(null=True)
    share_archived_count = models.IntegerField(null=True)
    share_archived_ms = models.BigIntegerField(null=True)
    share_delivery_limit = models.IntegerField(null=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UNKNOWN)
    diagnosis = models.JSONField(default=list)
    # Set by the status job: the evaluator's one-sentence reason, and when it was evaluated.
    # db_default: the store inserts partitions with raw SQL that does not name these columns.
    reason = models.TextField(blank=True, default="", db_default="")
    complete = models.FloatField(null=True)
    evaluated_at = models.DateTimeField(null=True)
    status_since = models.DateTimeField(null=True)
    # Set from the status run (the evaluator's forecast, spark_jobs/evaluator/retention.py):
    # seconds before time-based retention may delete this partition's oldest unconsumed
    # message; null when there is no such forecast (config unknown, infinite, compact, caught
    # up, source down).
    retention_left_s = models.FloatField(null=True)
    stale = models.BooleanField(default=False)
    # A cycle rewrites a row only when one of its figures changed (100,000 rows rewritten
    # each cycle were most of the store's time), so ``sampled_at`` is the cycle
    # that last wrote it, and the group's ``last_seen_at`` says when a partition still in
    # the group was last sampled. ``present``: the partition was in its group's latest
    # cycle; a row that left it keeps, in ``sampled_at``, the last cycle that saw it.
    sampled_at = models.DateTimeField()
    present = models.BooleanField(default=True, db_default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["group", "topic", "partition"], name="uniq_partition_state"
            )
        ]
        ordering = ["topic", "partition"]

    def __str__(self) -> str:
        return f"{self.group}:{self.topic}/{self.partition}"

    @property
    def seen_at(self):
        """When these figures were last sampled (``group`` read through the relation: a
        query unless it was selected with the row)."""
        return seen_at(self.present, self.sampled_at, self.group.last_seen_at)


class GroupSample(models.Model):
    """One group at one cycle: the short raw history (default 6 h) of the live charts, the
    API's raw points and Burrow's offsets.

    One row per group and poll, not per partition: the partitions' figures are packed in
    ``figures`` (``dashboard.store.raw_history``: topic, partition, committed, latest,
    lag, time lag, pending, failed, acked, stale), and the group's sums at that poll sit in
    columns, so a group chart reads no partition at all. As a row per partition the history
    was most of the hot database (3.79 GiB at 10,000 partitions, 10 s poll, 6 h) and of a
    cycle's writes (benchmarks/RESULTS.md).
    """

    group = models.ForeignKey(ConsumerGroup, on_delete=models.CASCADE, related_name="samples")
    at = models.DateTimeField()
    partitions = models.IntegerField()
    # Over the partitions that have the figure at this poll; null when none has it (the
    # sums and maximum SQL would have given over one row per partition).
    lag = models.BigIntegerField(null=True)
    max_time_lag_s = models.FloatField(null=True)
    pending = models.BigIntegerField(null=True)
    failed = models.BigIntegerField(null=True)
    acked = models.BigIntegerField(null=True)
    stale = models.BooleanField(default=False)  # any partition stale at this poll
    figures = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "at"], name="uniq_group_sample")]

    def __str__(self) -> str:
        return f"{self.group_id}@{self.at:%H:%M:%S}"


class BrokerOffsets(models.Model):
    """The broker's log start/end offsets a cycle read, every partition of the cluster packed
    in one row (``raw_history.BROKER_KINDS``: topic, partition, read time, earliest, latest):
    time lag's history, from which another collector process taking the cluster over builds
    the same time tables (``OrmCycleStore.broker_offsets_since``). A row per partition and
    cycle was a third of the hot database (benchmarks/RESULTS.md)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()  # the cycle's slot
    read_until = models.DateTimeField()  # the newest read time in ``figures``
    figures = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "at"], name="uniq_broker_offsets")
        ]
        indexes = [models.Index(fields=["cluster", "read_until"])]

    def __str__(self) -> str:
        return f"{self.cluster_id}@{self.at:%H:%M:%S}"


class SpoutSample(models.Model):
    """One Storm spout at one cycle: Storm UI's emitted, acked, failed and complete latency,
    and the tuples in flight against ``max.spout.pending`` from its push, else Storm UI's
    (``collectors.spout_totals``). Short raw history, pruned with ``GroupSample``."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    topology_id = models.CharField(max_length=255)
    spout_id = models.CharField(max_length=255)
    at = models.DateTimeField()
    emitted = models.BigIntegerField(null=True)
    acked = models.BigIntegerField(null=True)
    failed = models.BigIntegerField(null=True)
    complete_latency_ms = models.FloatField(null=True)
    pending = models.BigIntegerField(null=True)
    max_spout_pending = models.BigIntegerField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "topology_id", "spout_id", "at"], name="uniq_spout_sample"
            )
        ]
        indexes = [models.Index(fields=["at"])]

    def __str__(self) -> str:
        return f"{self.topology_id}/{self.spout_id}@{self.at:%H:%M:%S}"


class RebalanceEvent(models.Model):
    group = models.ForeignKey(ConsumerGroup, on_delete=models.CASCADE, related_name="rebalances")
    at = models.DateTimeField()
    generation = models.BigIntegerField(null=True)
    cause = models.CharField(max_length=64)
    detail = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "at", "cause"], name="uniq_rebalance_event")
        ]
        ordering = ["-at"]

    def __str__(self) -> str:
        return f"{self.group_id} {self.cause} @ {self.at:%H:%M:%S}"


class CollectedCycle(models.Model):
    """One stored cycle of a cluster and the collector process that ran it.

    Written in the cycle's transaction: the newest row tells the next collector process
    whether the store's groups are what its own memory holds (several collectors share the
    clusters, docs/ARCHITECTURE.md), and a cycle older than a stored one is refused rather
    than written over newer state. Short history, pruned with ``GroupSample``.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()  # the cycle's slot (cycle_ms)
    collected_by = models.CharField(max_length=255)  # host:pid

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "at"], name="uniq_collected_cycle")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}@{self.at:%H:%M:%S} by {self.collected_by}"


class StatusChange(models.Model):
    """A status run changed a partition's or a group's status: the history the partition page
    shows and alerts' durations rest on. ``partition`` is null (and ``topic`` empty) for the
    group itself. Only changes are kept, not every evaluation: a stuck partition costs one row."""

    group = models.ForeignKey(
        ConsumerGroup, on_delete=models.CASCADE, related_name="status_changes"
    )
    topic = models.CharField(max_length=255, blank=True)
    partition = models.IntegerField(null=True)
    at = models.DateTimeField()
    old_status = models.CharField(max_length=16, choices=Status.choices)
    new_status = models.CharField(max_length=16, choices=Status.choices)
    diagnosis = models.JSONField(default=list)
    reason = models.TextField(blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["group", "topic", "partition", "at"]),
            models.Index(fields=["at"]),
        ]
        ordering = ["-at"]

    def __str__(self) -> str:
        where = "" if self.partition is None else f":{self.topic}/{self.partition}"
        return f"{self.group_id}{where} {self.old_status}→{self.new_status}"


class TopicConfig(models.Model):
    """A topic's retention settings as DescribeConfigs last gave them (the retention forecast).

    Read by the Kafka source every few minutes, not every cycle (``collectors/kafka/
    topic_configs.py``); ``read_at`` says how old the reading is. A topic whose config could
    not be read has no row, or keeps its last good one: never a guessed default. Sizes stay
    as read: ``retention.bytes`` -1 is "no size limit".
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="topic_configs")
    topic = models.CharField(max_length=255)
    retention_ms = models.BigIntegerField(null=True)
    retention_bytes = models.BigIntegerField(null=True)
    cleanup_policy = models.CharField(max_length=64, blank=True)
    read_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "topic"], name="uniq_topic_config")
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}/{self.topic}"
