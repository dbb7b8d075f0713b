"""``/metrics``: a Prometheus collector that reads the database at each scrape (SPEC §9).

Nothing is kept in process memory: with several gunicorn workers, in-process gauges would
answer differently per worker. Per scrape: one query for groups, one for partitions (plain
tuples, ``values_list``), a few small ones for sources and Spark jobs, so 20,000 partitions
cost a few tens of milliseconds of database and most of the time goes to formatting.

Status values, as numbers (Burrow's ``StatusConstant`` order, 0 = no verdict):
UNKNOWN 0, OK 1, WARN 2, ERR 3, STOP 4, STALL 5, REWIND 6. Groups also get one-hot series
``lagwatch_group_status_is{status="…"}`` (1 for the current status, 0 for the others).
Label values (group, topic names) are escaped by ``prometheus_client``.

Membership: ``lagwatch_group_generation`` (labelled with Kafka's group type, ``""`` where not
Kafka or unknown), ``lagwatch_group_last_commit_timestamp_seconds`` and the counter
``lagwatch_group_rebalances_total``. The counter counts the group's stored rebalance events:
they are append-only (written idempotently per cycle, never pruned; deleted only with their
group), so the count never goes down while the group exists, and its ``_created`` is the
group's ``first_seen_at`` so that a group deleted and seen again reads as a new counter. Should
rebalance events ever get a retention, this count must come from a running total kept when
they are written instead: a count that drops reads as a counter reset, and ``increase()``
would then count every kept event again.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator

from django.db.models import Count, Max
from django.utils import timezone
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
)

from collectors.rebalance import LIFECYCLE_CAUSES
from dashboard.monitoring import trends
from dashboard.monitoring.membership import group_type
from dashboard.monitoring.models import (
    Cluster,
    CollectionError,
    ConsumerGroup,
    PartitionState,
    RebalanceEvent,
    ServiceHeartbeat,
    SourceHealth,
    SparkJobOutcome,
    SparkJobRun,
)
from dashboard.monitoring.spark_runs import JOBS
from spark_jobs.evaluator.retention import at_risk

STATUS_CODES = {"UNKNOWN": 0, "OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}
GROUP = ["cluster", "source", "group"]
PARTITION = [*GROUP, "topic", "partition"]
SOURCE = ["cluster", "source"]
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

    def __init__(self, partitions: bool = True) -> None:
        self.partitions = partitions

    def describe(self) -> list[Metric]:
        return []  # not probed at registration: no database access at import time

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        now = timezone.now()
        groups = self._groups()
        yield from self._lag(groups)
        yield from self._membership(groups)
        yield from self._trends(now)
        yield from self._sources(now)
        yield from self._spark_jobs(now)
        yield from self._heartbeats(now)
        took = _gauge(
            "lagwatch_metrics_collect_seconds",
            "Time this scrape spent reading the database and building the series.",
            [],
        )
        took.add_metric([], time.perf_counter() - started)
        yield took

    @staticmethod
    def _groups() -> dict[int, tuple]:
        """Every group in one query: id -> (labels, status, complete, stale, members,
        generation, group type, first seen)."""
        groups = {}
        for pk, cluster, source, name, *rest in (
            ConsumerGroup.objects.order_by().values_list(*GROUP_COLUMNS).iterator(chunk_size=5000)
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
        thresholds = dict(Cluster.objects.values_list("name", "retention_risk_s"))
        # lag, time lag, count, soonest retention deadline, partitions at risk
        totals: dict[int, list] = defaultdict(lambda: [0, None, 0, None, 0])
        each = self.partitions
        for group_id, topic, partition, lag, time_lag, status, left in (
            PartitionState.objects.order_by()
            .values_list(
                "group_id", "topic", "partition", "lag", "time_lag_s", "status", "retention_left_s"
            )
            .iterator(chunk_size=5000)
        ):
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
            yield from (p_lag, p_time, p_status, p_left)
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
            PartitionState.objects.filter(last_commit_at__isnull=False)
            .order_by()
            .values_list("group_id")
            .annotate(at=Max("last_commit_at"))
        )
        counts = dict(
            RebalanceEvent.objects.exclude(cause__in=LIFECYCLE_CAUSES)
            .order_by()
            .values_list("group_id")
            .annotate(n=Count("id"))
        )
        for group_id, (labels, *_, gen, gtype, first_seen) in groups.items():
            labels = list(labels)
            if gen is not None:
                generation.add_metric([*labels, group_type(labels[1], gtype) or ""], gen)
            if (at := commits.get(group_id)) is not None:
                last_commit.add_metric(labels, at.timestamp())
            if labels[1] in WITH_MEMBERS:
                rebalances.add_metric(
                    labels, counts.get(group_id, 0), created=first_seen.timestamp()
                )
        yield from (generation, last_commit, rebalances)

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


def build_registry(partitions: bool = True) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LagwatchCollector(partitions))
    return registry
