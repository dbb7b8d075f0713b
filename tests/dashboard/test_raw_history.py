"""The raw history packed a row per group and poll gives the figures the row-per-partition
history gave, on random cycles written by the product's store.

The reference below is what the old store kept, stated directly: one point per partition of
each stored cycle, its broker figures left out when the broker was down and the partition
blind, read back per partition, summed per group as SQL's ``SUM``/``MAX`` did (nulls left
out), and listed for Burrow before each partition's latest poll.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta

import pytest

from collectors.cycle.stale import Staleness
from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.records import Source
from dashboard.api import history as api_history
from dashboard.api.burrow import data as burrow_data
from dashboard.api.burrow.shapes import Offset
from dashboard.monitoring.models import Cluster, ConsumerGroup, GroupSample, PartitionState
from dashboard.store import raw_history
from dashboard.store.rows import store_cycle
from dashboard.times import ms_to_dt
from dashboard.ui.params import RANGES
from dashboard.ui.queries.series import group_series, partition_series

pytestmark = pytest.mark.django_db

GROUPS = [(Source.KAFKA, "orders-app"), (Source.KAFKA, "billing"), (Source.ZOOKEEPER, "legacy")]
TOPICS = ["orders", "clicks"]
POLL_MS = 10_000


def maybe(rnd: random.Random, value, p: float = 0.15):
    return None if rnd.random() < p else value


def random_figure(rnd: random.Random, source: Source, group: str, topic: str, n: int):
    committed = maybe(rnd, rnd.randrange(0, 10**12))
    latest = maybe(rnd, rnd.randrange(0, 10**12))
    lag = None if committed is None or latest is None else latest - committed  # may be < 0
    storm_like = source is Source.ZOOKEEPER and rnd.random() < 0.5
    return PartitionFigure(
        source=source, group=group, topic=topic, partition=n, committed=committed,
        earliest=maybe(rnd, 0), latest=latest, lag=lag,
        time_lag_s=maybe(rnd, rnd.random() * 100), time_lag_kind="interpolated",
        out_of_range=None, commit_time_ms=None, commit_version=None, owner="m",
        topology_id=None, where="",
        pending=rnd.randrange(0, 50) if storm_like else None,
        failed=maybe(rnd, rnd.randrange(0, 5)) if storm_like else None,
        acked=rnd.randrange(0, 10**6) if storm_like else None,
    )  # fmt: skip


def random_cycle(rnd: random.Random, cycle_ms: int) -> CycleOutcome:
    broker_up = rnd.random() > 0.2
    figures = []
    for source, group in GROUPS:
        if source is Source.KAFKA and not broker_up:
            continue  # the broker's groups are hidden, kept stale, not sampled
        for topic in TOPICS:
            for n in range(rnd.randrange(0, 5)):  # partitions come and go
                fig = random_figure(rnd, source, group, topic, n)
                if not broker_up:  # read from ZooKeeper alone: no broker offsets (blind)
                    fig = dataclasses.replace(fig, latest=None)
                figures.append(fig)
                if rnd.random() < 0.05:  # the same partition twice: the last one counts
                    figures.append(random_figure(rnd, source, group, topic, n))
    sources = [
        SourceOutcome("kafka", broker_up, cycle_ms, cycle_ms + 100, "" if broker_up else "down"),
        SourceOutcome("zookeeper", True, cycle_ms, cycle_ms + 100, ""),
    ]
    return CycleOutcome(cluster="c", cycle_ms=cycle_ms, figures=figures, sources=sources)


def reference_points(outcomes: list[CycleOutcome]) -> dict[tuple, list[raw_history.Point]]:
    """(source, group, topic, partition) -> the old history's points, oldest first."""
    points: dict[tuple, list[raw_history.Point]] = {}
    for out in outcomes:
        blind = Staleness.of(out).blind
        last = {(f.source, f.group, f.topic, f.partition): f for f in out.figures}
        for key, f in last.items():
            gone = blind(f)
            points.setdefault(key, []).append(raw_history.Point(
                ms_to_dt(out.cycle_ms), f.committed, None if gone else f.latest,
                None if gone else f.lag, None if gone else f.time_lag_s, f.pending, f.failed,
                f.acked, False,
            ))  # fmt: skip
    return points


def sums(points: list[raw_history.Point], field: str, how=sum):
    present = [getattr(x, field) for x in points if getattr(x, field) is not None]
    return how(present) if present else None


@pytest.mark.parametrize("seed", range(6))
def test_random_cycles_read_back_as_the_row_per_partition_history(seed: int) -> None:
    rnd = random.Random(seed)
    cluster = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    start = 1_800_000_000_000
    outcomes = []
    for i in range(rnd.randrange(15, 30)):
        out = random_cycle(rnd, start + i * POLL_MS)
        for _ in range(1 + (rnd.random() < 0.2)):  # some cycles retried
            store_cycle(cluster, out)
        outcomes.append(out)
    expected = reference_points(outcomes)
    since = ms_to_dt(start - 1)
    now = ms_to_dt(start + len(outcomes) * POLL_MS)

    groups = {(g.source, g.name): g for g in ConsumerGroup.objects.filter(cluster=cluster)}
    states = list(PartitionState.objects.select_related("group"))
    assert {(p.group.source, p.group.name, p.topic, p.partition) for p in states} == set(expected)
    for p in states:
        want = expected[(p.group.source, p.group.name, p.topic, p.partition)]
        assert raw_history.partition_points(p.group_id, p.topic, p.partition, since) == want
        # The API's raw points and the partition chart read the same.
        api = api_history.partition_points(p, "raw", since, now)
        assert [a["committed"] for a in api] == [x.committed for x in want]
        assert [a["lag"] for a in api] == [x.lag for x in want]
        chart = partition_series(p, RANGES["6h"], now)
        assert chart["x"] == [x.at for x in want] and chart["latest"] == [x.latest for x in want]

    for (source, name), g in groups.items():
        by_time: dict = {}
        for key, points in expected.items():
            if key[:2] == (source, name):
                for x in points:
                    by_time.setdefault(x.at, []).append(x)
        rows = list(GroupSample.objects.filter(group=g).order_by("at"))
        assert [r.at for r in rows] == sorted(by_time)
        for r in rows:
            pts = by_time[r.at]
            assert (r.partitions, r.lag, r.max_time_lag_s, r.pending, r.failed, r.acked) == (
                len(pts), sums(pts, "lag"), sums(pts, "time_lag_s", max),
                sums(pts, "pending"), sums(pts, "failed"), sums(pts, "acked"),
            )  # fmt: skip
        api = api_history.group_points(g, "raw", since, now)
        assert [a["lag"] for a in api] == [sums(by_time[t], "lag") for t in sorted(by_time)]
        chart = group_series(g, RANGES["1h"], now)
        assert chart["lag"] == [sums(by_time[t], "lag") for t in sorted(by_time)][-len(rows) :]

        # Burrow: each partition's polls within one window before its latest poll.
        found = burrow_data.FoundGroup(
            g.pk, g.source, "OK", 1.0, [], "", g.last_seen_at, POLL_MS // 1000, window=10
        )
        window_start = g.last_seen_at - timedelta(seconds=10 * POLL_MS // 1000)
        want_offsets = {}
        for key, points in expected.items():
            if key[:2] != (source, name):
                continue
            latest_poll = points[-1].at  # the partition's sampled_at
            offsets = [
                Offset(x.committed, burrow_data._ms(x.at), burrow_data._ms(x.at), x.lag)
                for x in points
                if window_start <= x.at < latest_poll and x.committed is not None
            ]
            if offsets:
                want_offsets[key[2:]] = offsets
        assert burrow_data.poll_offsets(found) == want_offsets
