"""``/metrics``: a Prometheus collector that reads the database at each scrape (SPEC §9).

Nothing is kept in process memory: with several gunicorn workers, in-process gauges would
answer differently per worker. Per scrape: one query for groups, one for partitions (plain
tuples, ``values_list``), a few small ones for sources and Spark jobs, so 20,000 partitions
cost a few tens of milliseconds of database and most of the time goes to formatting.

Status values, as numbers (Burrow's ``StatusConstant`` order, 0 = no verdict):
UNKNOWN 0, OK 1, WARN 2, ERR 3, STOP 4, STALL 5, REWIND 6. Groups also get one-hot series
``lagwatch_group_status_is{status="…"}`` (1 for the current status, 0 for the others).
Label values (group, topic names) are escaped by ``prometheus_client``.

Brokers (DOMAIN §5): ``lagwatch_broker_purgatory_size{cluster,broker,operation}`` (fetch,
produce), ``lagwatch_broker_purgatory_watched``,
``lagwatch_broker_purgatory_expirations_per_second`` and
``lagwatch_broker_metrics_up{cluster,broker}``, from ``BrokerPurgatory``.

Membership: ``lagwatch_group_generation`` (labelled with Kafka's group type, ``""`` where not
Kafka or unknown), ``lagwatch_group_last_commit_timestamp_seconds`` and the counter
``lagwatch_group_rebalances_total``. The counter counts the group's stored rebalance events:
they are append-only (written idempotently per cycle, never pruned; deleted only with their
group), so the count never goes down while the group exists, and its ``_created`` is the
group's ``first_seen_at`` so that a group deleted and seen again reads as a new counter. Should
rebalance events ever get a retention, this count must come from a running total kept when
they are written instead: a count that drops reads as a counter reset, and ``increase()``
would then count every kept event again.

Storm spouts (``collectors.spout_totals``, the latest row of each spout reported lately):
``lagwatch_spout_emitted_total``, ``_acked_total``, ``_failed_total`` (Storm UI's counters,
which start again when a worker restarts: a reset to ``rate()``),
``lagwatch_spout_complete_latency_ms``, and from the spout's push (else Storm UI's)
``lagwatch_spout_pending`` (the tuples in flight) and ``lagwatch_spout_max_pending`` (their
cap): BACKPRESSURE is the first sitting at the second.

**Why one module of some 580 lines**: one collector class whose families all read the same
few queries of a scrape; split, each part would run its own queries or pass the rows around.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Collection, Iterator

from django.db.models import Count, Max
from django.utils import timezone
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)

from collectors.rebalance import LIFECYCLE_CAUSES
from dashboard.ingest.store import stored_producers
from dashboard.monitoring import trends
from dashboard.monitoring.membership import group_type
from dashboard.monitoring.models import (
    BrokerPurgatory,
    Cluster,
    CollectedCycle,
    CollectionError,
    ConsumerGroup,
    PartitionState,
    RebalanceEvent,
    ServiceHeartbeat,
    SourceHealth,
    SparkJobOutcome,
    SparkJobRun,
)
from dashboard.monitoring.producers import topic_expiry
from dashboard.monitoring.spouts import latest_spouts
from dashboard.status.runs import JOBS
from spark_jobs.evaluator.retention import at_risk

STATUS_CODES = {"UNKNOWN": 0, "OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}
GROUP = ["cluster", "source", "group"]
PARTITION = [*GROUP, "topic", "partition"]
SOURCE = ["cluster", "source"]
SPOUT = ["cluster", "topology_id", "spout_id"]
OUTCOMES = (SparkJobOutcome.OK, SparkJobOutcome.FAILED, SparkJobOutcome.SKIPPED)
GROUP_COLUMNS = (
    "id", "cluster__name", "source", "name", "status", "complete", "stale", "members",
    "generation", "group_type", "first_seen_at",
)  # fmt: skip
# Sources whose groups have members and therefore rebalances (a spout has neither).
WITH_MEMBERS = ("kafka", "zookeeper")


def _gauge(name: str, doc: str, labels: list[str], unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=labels, unit=unit)


class LagwatchCollector:
    """Yields every Lagwatch series from the database; registered on a private registry.

    ``partitions=False`` leaves out the per-partition series (three per partition): the
    scrape's cost is mostly formatting them, and a large installation may want group totals
    only (``/metrics?partitions=false``).
    """

    def __init__(self, partitions: bool = True, clusters: Collection[str] | None = None) -> None:
        self.partitions = partitions
        # The bulk families of these clusters only (a build after one cluster's cycle: pieces.py).
        self.clusters = None if clusters is None else set(clusters)

    def _mine(self, queryset, field: str = "group__cluster__name"):  # noqa: ANN001, ANN202
        return (
            queryset
            if self.clusters is None
            else queryset.filter(**{f"{field}__in": self.clusters})
        )

    def describe(self) -> list[Metric]:
        return []  # not probed at registration: no database access at import time

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        now = timezone.now()
        yield from self.bulk(now)
        yield from self.live(now, started)

    def bulk(self, now) -> Iterator[Metric]:
        """The families that grow with groups and partitions. They change when a cycle is
        stored or a Spark run applied, so ``dashboard/api/metrics/exposition.py`` encodes them once
        then; every family named ``lagwatch_partition_*`` is per partition."""
        groups = self._groups()
        yield from self._lag(groups)
        yield from self._membership(groups)
        yield from self._trends(now)

    def live(self, now, started: float, exposition_age_s: float = 0.0) -> Iterator[Metric]:
        """The small families, read at each scrape: ages run with the clock, and sources,
        clusters, spouts, producers and jobs change between cycles."""
        yield from self._spouts(now)
        yield from self._clusters()
        yield from self._sources(now)
        yield from self._brokers()
        yield from self._spark_jobs(now)
        yield from self._heartbeats(now)
        yield from self._producers(now)
        age = _gauge(
            "lagwatch_metrics_exposition_age_seconds",
            "Age of the per-group and per-partition series served (built after each stored "
            "cycle or Spark run; 0: built by this scrape).",
            [],
        )
        age.add_metric([], exposition_age_s)
        yield age
        took = _gauge(
            "lagwatch_metrics_collect_seconds",
            "Time this scrape spent reading the database and building the series.",
            [],
        )
        took.add_metric([], time.perf_counter() - started)
        yield took

    def _groups(self) -> dict[int, tuple]:
        """Every group in one query: id -> (labels, status, complete, stale, members,
        generation, group type, first seen)."""
        groups = {}
        mine = self._mine(ConsumerGroup.objects.order_by(), "cluster__name")
        for pk, cluster, source, name, *rest in mine.values_list(*GROUP_COLUMNS).iterator(
            chunk_size=5000
        ):
            groups[pk] = ((cluster, source, name), *rest)
        return groups

    def _lag(self, groups: dict[int, tuple]) -> Iterator[Metric]:
        p_lag = _gauge("lagwatch_partition_lag", "Latest offset minus committed offset.",
                       PARTITION)  # fmt: skip
        p_time = _gauge(
            "lagwatch_partition_time_lag_seconds",
            "How long ago the message at the committed offset was produced.", PARTITION,
        )  # fmt: skip
        p_status = _gauge(
            "lagwatch_partition_status",
            "Partition status: 0 UNKNOWN, 1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND.",
            PARTITION,
        )
        p_left = _gauge(
            "lagwatch_partition_retention_seconds_left",
            "Seconds before time-based retention may delete the oldest unconsumed message "
            "(absent: no forecast).", PARTITION,
        )  # fmt: skip
        # A share group's partition (KIP-932) where __share_group_state was read.
        p_archived = _gauge(
            "lagwatch_partition_share_archived_records",
            "A share group's records archived (given up: rejected, or at the delivery count "
            "limit), as the collector remembers them from __share_group_state.", PARTITION,
        )  # fmt: skip
        p_deliveries = _gauge(
            "lagwatch_partition_share_max_delivery_count",
            "The highest delivery count of the records a share-partition's state holds.",
            PARTITION,
        )
        thresholds = dict(Cluster.objects.values_list("name", "retention_risk_s"))
        # lag, time lag, count, soonest retention deadline, partitions at risk
        totals: dict[int, list] = defaultdict(lambda: [0, None, 0, None, 0])
        each = self.partitions
        for group_id, topic, partition, lag, time_lag, status, left, archived, most in (
            self._mine(PartitionState.objects.order_by())
            .values_list(
                "group_id", "topic", "partition", "lag", "time_lag_s", "status",
                "retention_left_s", "share_archived", "share_max_deliveries",
            )
            .iterator(chunk_size=5000)
        ):  # fmt: skip
            group = groups.get(group_id)
            if group is None:
                continue
            labels = [*group[0], topic, str(partition)] if each else None
            total = totals[group_id]
            total[2] += 1
            if lag is not None:
                total[0] += lag
                if each:
                    p_lag.add_metric(labels, lag)
            if time_lag is not None:
                total[1] = time_lag if total[1] is None else max(total[1], time_lag)
                if each:
                    p_time.add_metric(labels, time_lag)
            if each:
                p_status.add_metric(labels, STATUS_CODES.get(status, 0))
                if archived is not None:
                    p_archived.add_metric(labels, archived)
                if most is not None:
                    p_deliveries.add_metric(labels, most)
            if left is not None:
                total[3] = left if total[3] is None else min(total[3], left)
                if at_risk(left, thresholds.get(group[0][0])):
                    total[4] += 1
                if each:
                    p_left.add_metric(labels, left)

        g_lag = _gauge("lagwatch_group_lag", "Sum of the group's partition lags.", GROUP)
        g_time = _gauge("lagwatch_group_max_time_lag_seconds",
                        "Largest time lag among the group's partitions.", GROUP)  # fmt: skip
        g_status = _gauge(
            "lagwatch_group_status",
            "Group status: 0 UNKNOWN, 1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND.", GROUP,
        )  # fmt: skip
        g_is = _gauge("lagwatch_group_status_is",
                      "1 for the group's current status, 0 for the others.",
                      [*GROUP, "status"])  # fmt: skip
        g_parts = _gauge("lagwatch_group_partitions", "Partitions the group consumes.", GROUP)
        g_complete = _gauge("lagwatch_group_complete_ratio",
                            "Share of partitions with a full status window.", GROUP)  # fmt: skip
        g_stale = _gauge("lagwatch_group_stale",
                         "1 while the group's source is unreachable (last figures kept).",
                         GROUP)  # fmt: skip
        g_members = _gauge("lagwatch_group_members", "Members of the group as last seen.", GROUP)
        g_left = _gauge(
            "lagwatch_group_retention_seconds_left",
            "Soonest retention deadline among the group's partitions (absent: no forecast).",
            GROUP,
        )
        g_risk = _gauge(
            "lagwatch_group_retention_risk_partitions",
            "Partitions whose retention deadline is under the cluster's retention_risk_s "
            "(the RETENTION_RISK diagnosis).", GROUP,
        )  # fmt: skip
        per_cluster: dict[tuple[str, str], int] = defaultdict(int)
        for group_id, (labels, status, complete, stale, members, *_) in groups.items():
            lag, time_lag, count, left, risky = totals[group_id]
            labels = list(labels)
            if left is not None:
                g_left.add_metric(labels, left)
            g_risk.add_metric(labels, risky)
            if count:
                g_lag.add_metric(labels, lag)
            if time_lag is not None:
                g_time.add_metric(labels, time_lag)
            g_status.add_metric(labels, STATUS_CODES.get(status, 0))
            for name in STATUS_CODES:
                g_is.add_metric([*labels, name], 1.0 if name == status else 0.0)
            g_parts.add_metric(labels, count)
            if complete is not None:
                g_complete.add_metric(labels, complete)
            g_stale.add_metric(labels, 1.0 if stale else 0.0)
            g_members.add_metric(labels, len(members) if isinstance(members, list) else 0)
            per_cluster[(labels[0], status)] += 1
        groups_by_status = _gauge("lagwatch_groups", "Groups per cluster and status.",
                                  ["cluster", "status"])  # fmt: skip
        for (cluster, status), n in sorted(per_cluster.items()):
            groups_by_status.add_metric([cluster, status], n)
        if each:
            yield from (p_lag, p_time, p_status, p_left, p_archived, p_deliveries)
        yield from (g_lag, g_time, g_status, g_is, g_parts,
                    g_complete, g_stale, g_members, g_left, g_risk, groups_by_status)  # fmt: skip

    def _trends(self, now) -> Iterator[Metric]:
        """The newest rollup of each group (and partition), as the rollups job computed it:
        rates, lag slope and time to drain (``dashboard/monitoring/trends.py``)."""
        levels = [("group", GROUP)] + ([("partition", PARTITION)] if self.partitions else [])
        for level, labels in levels:
            produce = _gauge(f"lagwatch_{level}_produce_messages_per_second",
                             "Messages produced per second (newest rollup).", labels)  # fmt: skip
            consume = _gauge(f"lagwatch_{level}_consume_messages_per_second",
                             "Messages consumed per second (newest rollup).", labels)  # fmt: skip
            slope = _gauge(
                f"lagwatch_{level}_lag_slope_messages_per_second",
                "Change of the lag per second (newest rollup): > 0 falling behind.", labels,
            )  # fmt: skip
            eta = _gauge(
                f"lagwatch_{level}_eta_seconds",
                "Seconds to drain the lag at current rates (absent: not draining, unknown).",
                labels,
            )  # fmt: skip
            for key, trend in sorted(trends.everyone_s_trends(level, now).items()):
                if self.clusters is not None and key[0] not in self.clusters:
                    continue
                values = [str(v) for v in key]
                pairs = (
                    (produce, trend.produce_per_s), (consume, trend.consume_per_s),
                    (slope, trend.lag_slope_per_s), (eta, trend.eta_s),
                )  # fmt: skip
                for gauge, value in pairs:
                    if value is not None:
                        gauge.add_metric(values, value)
            yield from (produce, consume, slope, eta)

    def _membership(self, groups: dict[int, tuple]) -> Iterator[Metric]:
        """Generation, last commit and rebalances per group: two grouped queries, one row
        per group, whatever the number of partitions or events."""
        generation = _gauge(
            "lagwatch_group_generation",
            "Kafka: classic generation or KIP-848 group epoch; ZooKeeper: cversion of /ids.",
            [*GROUP, "type"],
        )
        last_commit = _gauge(
            "lagwatch_group_last_commit_timestamp_seconds",
            "Newest commit among the group's partitions (Unix time).", GROUP,
        )  # fmt: skip
        rebalances = CounterMetricFamily(
            "lagwatch_group_rebalances",
            "Rebalances Lagwatch observed in the group (its stored rebalance events).",
            labels=GROUP,
        )
        commits = dict(
            self._mine(PartitionState.objects.filter(last_commit_at__isnull=False))
            .order_by()
            .values_list("group_id")
            .annotate(at=Max("last_commit_at"))
        )
        counts = dict(
            self._mine(RebalanceEvent.objects.exclude(cause__in=LIFECYCLE_CAUSES))
            .order_by()
            .values_list("group_id")
            .annotate(n=Count("id"))
        )
        for group_id, (labels, *_, gen, gtype, first_seen) in groups.items():
            labels = list(labels)
            if gen is not None:
                kind = group_type(labels[1], gtype) or ""
                generation.add_metric([*labels, kind], gen)
            if (at := commits.get(group_id)) is not None:
                last_commit.add_metric(labels, at.timestamp())
            if labels[1] in WITH_MEMBERS:
                rebalances.add_metric(
                    labels, counts.get(group_id, 0), created=first_seen.timestamp()
                )
        yield from (generation, last_commit, rebalances)

    def _spouts(self, now) -> Iterator[Metric]:
        """Each Storm spout's latest whole figures (one query; spouts reported within the
        last ``FRESH`` only): Storm UI's counters and complete latency, the task's tuples in
        flight and its ``max.spout.pending`` from the push."""
        counters = {
            key: CounterMetricFamily(f"lagwatch_spout_{key}", doc, labels=SPOUT)
            for key, doc in (
                ("emitted", "Tuples the spout emitted (Storm UI; restarts with the worker)."),
                ("acked", "Tuples fully processed (Storm UI; restarts with the worker)."),
                ("failed", "Tuples failed or timed out (Storm UI; restarts with the worker)."),
            )
        }
        latency = _gauge(
            "lagwatch_spout_complete_latency_ms",
            "Storm UI's complete latency of the spout, milliseconds.",
            SPOUT,
        )
        pending = _gauge(
            "lagwatch_spout_pending", "The spout task's tuples in flight (its push).", SPOUT
        )
        cap = _gauge("lagwatch_spout_max_pending",
                     "topology.max.spout.pending of the spout (its push).", SPOUT)  # fmt: skip
        for row in latest_spouts(now):
            labels = [row["cluster__name"], row["topology_id"], row["spout_id"]]
            for key, family in counters.items():
                if row[key] is not None:
                    family.add_metric(labels, row[key])
            for family, key in ((latency, "complete_latency_ms"), (pending, "pending"),
                                (cap, "max_spout_pending")):  # fmt: skip
                if row[key] is not None:
                    family.add_metric(labels, row[key])
        yield from (*counters.values(), latency, pending, cap)

    @staticmethod
    def _clusters() -> Iterator[Metric]:
        """When each cluster's newest cycle was stored, beside its poll interval: collection
        that stopped altogether (collectors, beat or Redis down) leaves no failure on any
        source's row, since nobody is there to record one, and shows only as a stored cycle
        growing old in poll intervals (the sources page's "collection stopped"). Two grouped
        queries; a disabled cluster, which is not collected, has no poll interval here."""
        interval = _gauge(
            "lagwatch_cluster_poll_interval_seconds",
            "How often an enabled cluster is collected (its poll_interval_s).", ["cluster"],
        )  # fmt: skip
        last = _gauge(
            "lagwatch_cluster_last_cycle_timestamp_seconds",
            "When the cluster's newest stored cycle was due (its poll slot, Unix time).",
            ["cluster"],
        )
        for name, seconds in (
            Cluster.objects.filter(enabled=True).order_by("name").values_list(
                "name", "poll_interval_s"
            )
        ):  # fmt: skip
            interval.add_metric([name], seconds)
        for name, at in (
            CollectedCycle.objects.order_by("cluster__name")
            .values_list("cluster__name")
            .annotate(at=Max("at"))
        ):
            last.add_metric([name], at.timestamp())
        yield from (interval, last)

    def _sources(self, now) -> Iterator[Metric]:
        up = _gauge("lagwatch_source_up", "1 if the source answered at its last poll.", SOURCE)
        age = _gauge("lagwatch_source_last_success_age_seconds",
                     "Seconds since the source last answered.", SOURCE)  # fmt: skip
        last = _gauge("lagwatch_source_last_success_timestamp_seconds",
                      "When the source last answered (Unix time).", SOURCE)  # fmt: skip
        duration = _gauge("lagwatch_source_last_duration_seconds",
                          "How long the source's last poll took.", SOURCE)  # fmt: skip
        failures = _gauge("lagwatch_source_consecutive_failures",
                          "Polls of the source that failed in a row.", SOURCE)  # fmt: skip
        errors = _gauge(
            "lagwatch_source_collection_errors",
            "Problems recorded in the source's latest cycles (bad znodes, lost groups).", SOURCE,
        )  # fmt: skip
        for cluster, source, reachable, success_at, took, failed in (
            SourceHealth.objects.order_by("cluster__name", "source").values_list(
                "cluster__name", "source", "reachable", "last_success_at", "last_duration_s",
                "consecutive_failures",
            )
        ):  # fmt: skip
            labels = [cluster, source]
            up.add_metric(labels, 1.0 if reachable else 0.0)
            if success_at is not None:
                age.add_metric(labels, max((now - success_at).total_seconds(), 0.0))
                last.add_metric(labels, success_at.timestamp())
            if took is not None:
                duration.add_metric(labels, took)
            failures.add_metric(labels, failed)
        for cluster, source, n in (
            CollectionError.objects.values_list("cluster__name", "source")
            .annotate(n=Count("id"))
            .order_by("cluster__name", "source")
        ):
            errors.add_metric([cluster, source], n)
        yield from (up, age, last, duration, failures, errors)

    def _brokers(self) -> Iterator[Metric]:
        """Brokers' delayed operations (DOMAIN §5), from their metrics endpoints. A broker
        whose latest scrape failed keeps its last figures here, with ``up`` 0 and the time
        they were read, as the pages show them."""
        broker = ["cluster", "broker"]
        operation = [*broker, "operation"]
        size = _gauge("lagwatch_broker_purgatory_size",
                      "Delayed operations waiting in the broker's purgatory "
                      "(Kafka's NumDelayedOperations).", operation)  # fmt: skip
        watched = _gauge("lagwatch_broker_purgatory_watched",
                         "Kafka's PurgatorySize: watcher entries, completed operations "
                         "included until the next purge.", operation)  # fmt: skip
        expirations = _gauge("lagwatch_broker_purgatory_expirations_per_second",
                             "Delayed operations that expired per second, between the last "
                             "two scrapes.", operation)  # fmt: skip
        up = _gauge("lagwatch_broker_metrics_up",
                    "1 if the broker's metrics endpoint answered at the last cycle.",
                    broker)  # fmt: skip
        as_of = _gauge("lagwatch_broker_metrics_last_success_timestamp_seconds",
                       "When the broker's figures were read (Unix time).", broker)  # fmt: skip
        for b in BrokerPurgatory.objects.select_related("cluster").order_by(
            "cluster__name", "broker"
        ):
            labels = [b.cluster.name, b.broker]
            up.add_metric(labels, 0.0 if b.error else 1.0)
            if b.as_of is not None:
                as_of.add_metric(labels, b.as_of.timestamp())
            for op in ("fetch", "produce"):
                for family, value in (
                    (size, getattr(b, f"{op}_purgatory")),
                    (watched, getattr(b, f"{op}_watched")),
                    (expirations, getattr(b, f"{op}_expires_per_s")),
                ):
                    if value is not None:
                        family.add_metric([*labels, op], value)
        yield from (size, watched, expirations, up, as_of)

    def _spark_jobs(self, now) -> Iterator[Metric]:
        job = ["job"]
        duration = _gauge("lagwatch_spark_job_last_duration_seconds",
                          "Duration of the job's last finished run.", job)  # fmt: skip
        outcome = _gauge("lagwatch_spark_job_last_outcome",
                         "1 for the outcome of the job's last finished run, 0 for the others.",
                         ["job", "outcome"])  # fmt: skip
        input_rows = _gauge("lagwatch_spark_job_last_input_rows",
                            "Sample rows the job's last finished run read.", job)  # fmt: skip
        output_rows = _gauge("lagwatch_spark_job_last_output_rows",
                             "Rows the job's last finished run wrote.", job)  # fmt: skip
        finished = _gauge("lagwatch_spark_job_last_run_timestamp_seconds",
                          "When the job's last finished run started (Unix time).",
                          job)  # fmt: skip
        success = _gauge("lagwatch_spark_job_last_success_timestamp_seconds",
                         "When the job's last successful run started (Unix time).",
                         job)  # fmt: skip
        failed = _gauge("lagwatch_spark_job_failed_runs",
                        "Failed runs among those kept (LAGWATCH_SPARK_RUNS_KEEP_DAYS).",
                        job)  # fmt: skip
        failed_counts = dict(
            SparkJobRun.objects.filter(outcome=SparkJobOutcome.FAILED)
            .values_list("job")
            .annotate(n=Count("id"))
            .order_by()
        )
        runs = SparkJobRun.objects.exclude(outcome=SparkJobOutcome.RUNNING).order_by("-started_at")
        for name in JOBS:
            failed.add_metric([name], failed_counts.get(name, 0))
            run = runs.filter(job=name).first()
            if run is None:
                continue
            if run.duration_s is not None:
                duration.add_metric([name], run.duration_s)
            for kind in OUTCOMES:
                outcome.add_metric([name, kind], 1.0 if run.outcome == kind else 0.0)
            if run.input_rows is not None:
                input_rows.add_metric([name], run.input_rows)
            if run.output_rows is not None:
                output_rows.add_metric([name], run.output_rows)
            finished.add_metric([name], run.started_at.timestamp())
            ok = (
                runs.filter(job=name, outcome=SparkJobOutcome.OK)
                .values_list("started_at", flat=True)
                .first()
            )
            if ok is not None:
                success.add_metric([name], ok.timestamp())
        yield from (duration, outcome, input_rows, output_rows, finished, success, failed)

    def _heartbeats(self, now) -> Iterator[Metric]:
        age = _gauge("lagwatch_heartbeat_age_seconds",
                     "Seconds since a background process (Celery worker, beat) last reported.",
                     ["process"])  # fmt: skip
        for name, at in ServiceHeartbeat.objects.order_by("name").values_list("name", "at"):
            age.add_metric([name], max((now - at).total_seconds(), 0.0))
        yield age

    @staticmethod
    def _producers(now) -> Iterator[Metric]:
        """Per cluster, producer ``client.id`` and topic, summed over the instances sharing a
        client id (labels must be unique). Counters are the stored totals, kept across client
        restarts (``producer_deliveries.accumulate``), so they only drop when a long silent
        client's row is pruned; unknown figures (no delivery counts pushed) are left out."""
        stored = stored_producers()
        sums: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        reasons: dict[tuple[str, str, str, str], int] = defaultdict(int)
        for producer in stored:
            for t in producer.topics:
                key = (producer.cluster, t.client_id, t.topic)
                sums[key]  # noqa: B018 - a client with no figure yet still has its key
                for figure in ("queued", "in_flight", "delivered", "failed", "expired"):
                    value = getattr(t, figure)
                    if value is not None:
                        sums[key][figure] += value
                for reason, n in t.failed_by_reason.items():
                    reasons[(*key, reason)] += n
        labels = ["cluster", "client_id", "topic"]
        families = {
            "queued": _gauge("lagwatch_producer_records_queued",
                             "Records in the producer's queues, not yet sent.", labels),
            "in_flight": _gauge("lagwatch_producer_records_in_flight",
                                "Records sent, awaiting the broker's acknowledgement.", labels),
            "delivered": CounterMetricFamily("lagwatch_producer_records_delivered",
                                             "Records the broker acknowledged.", labels=labels),
            "failed": CounterMetricFamily(
                "lagwatch_producer_records_failed",
                "Records whose delivery failed for a reason other than expiry.", labels=labels),
            "expired": CounterMetricFamily(
                "lagwatch_producer_records_expired",
                "Records expired by delivery.timeout.ms (_MSG_TIMED_OUT) before the broker "
                "acknowledged them: no consumer will ever see them.", labels=labels),
        }  # fmt: skip
        for key, figures in sorted(sums.items()):
            for figure, value in figures.items():
                families[figure].add_metric(list(key), value)
        yield from families.values()
        by_reason = CounterMetricFamily(
            "lagwatch_producer_records_failed_by_reason",
            "Records whose delivery failed, by librdkafka error name (expiry included).",
            labels=[*labels, "reason"],
        )
        for key, n in sorted(reasons.items()):
            by_reason.add_metric(list(key), n)
        yield by_reason
        expiry = _gauge(
            "lagwatch_topic_producer_expiry",
            "1 while the topic's producers' expired count grew within the expiry window "
            "(diagnosis PRODUCER_EXPIRY).",
            ["cluster", "topic"],
        )
        for (cluster, topic), _n in sorted(topic_expiry(stored, now).items()):
            expiry.add_metric([cluster, topic], 1)
        yield expiry


def build_registry(partitions: bool = True) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LagwatchCollector(partitions))
    return registry
