"""The partition totals kept on each group's row (dashboard/monitoring/group_totals.py) are
what the partition rows add up to, after whichever writer wrote them, and the overview and
groups list read from them the figures they computed from every partition before.

The randomized worlds go through the real writers: cycles stored by ``store_cycle`` (groups
appearing and vanishing, lags unknown, a broker outage keeping last figures) and status runs
applied by ``apply_status_results`` (statuses, the run's retention forecasts).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome, SourceOutcome
from collectors.records import PartitionOffsets, Source, TopicRetention
from dashboard.monitoring import group_totals
from dashboard.monitoring.models import Cluster, ConsumerGroup, PartitionState, Status
from dashboard.status.results import apply_status_results
from dashboard.store.rows import store_cycle
from dashboard.ui.params import GroupFilter
from dashboard.ui.queries import groups as groups_query
from dashboard.ui.queries.overview import summary

pytestmark = pytest.mark.django_db

T0 = 1_800_000_000_000
STATUSES = [s.value for s in Status]
SEEN = datetime(2026, 1, 1, tzinfo=UTC)


def expected_totals(group_id: int) -> dict:
    """The totals as the readers computed them before: straight from the partition rows."""
    rows = list(PartitionState.objects.filter(group_id=group_id))
    lags = [p.lag for p in rows if p.lag is not None]
    time_lags = [p.time_lag_s for p in rows if p.time_lag_s is not None]
    lefts = [p.retention_left_s for p in rows if p.retention_left_s is not None]
    commits = [p.last_commit_at for p in rows if p.last_commit_at is not None]
    counts = {f: sum(p.status == s for p in rows) for s, f in group_totals.STATUS_FIELDS.items()}
    return {
        "partitions_total": len(rows),
        **counts,
        "lag_sum": sum(lags) if lags else None,
        "time_lag_max_s": max(time_lags) if time_lags else None,
        "retention_left_min_s": min(lefts) if lefts else None,
        "last_commit_max_at": max(commits) if commits else None,
    }


def stored_totals(group_id: int) -> dict:
    return ConsumerGroup.objects.filter(id=group_id).values(*group_totals.FIELDS).get()


def old_overview(groups: list[ConsumerGroup]) -> dict:
    """The overview's figures as its one scan of every partition row computed them."""
    by_status: dict[str, int] = defaultdict(int)
    lag: dict[int, int] = defaultdict(int)
    time_lag: dict[int, float] = {}
    for p in PartitionState.objects.all():
        by_status[p.status] += 1
        lag[p.group_id] += p.lag or 0
        if p.time_lag_s is not None:
            time_lag[p.group_id] = max(time_lag.get(p.group_id, 0.0), p.time_lag_s)

    def top(totals: dict[int, float]) -> list[tuple[int, float]]:
        ranked = sorted(((v, gid) for gid, v in totals.items() if v and v > 0),
                        key=lambda x: (-x[0], x[1]))  # fmt: skip
        return [(gid, v) for v, gid in ranked[:10]]

    per_cluster = defaultdict(int)
    for p in PartitionState.objects.select_related("group"):
        per_cluster[p.group.cluster_id] += 1
    return {
        "partitions_by_status": {s: by_status.get(s, 0) for s in STATUSES},
        "top_lag": top(lag),
        "top_time_lag": top(time_lag),
        "per_cluster": dict(per_cluster),
        "groups": len(groups),
    }


def figure(rng: random.Random, group: str, topic: str, partition: int) -> PartitionFigure:
    latest = rng.randint(0, 10_000)
    committed = None if rng.random() < 0.1 else rng.randint(0, latest + 5)  # some beyond the end
    lag = None if committed is None else latest - committed
    return PartitionFigure(
        source=rng.choice([Source.KAFKA, Source.ZOOKEEPER]), group=group, topic=topic,
        partition=partition, committed=committed, earliest=0, latest=latest, lag=lag,
        time_lag_s=None if rng.random() < 0.2 else round(rng.uniform(0, 900), 3),
        time_lag_kind="interpolated", out_of_range=None,
        commit_time_ms=None if rng.random() < 0.3 else T0 - rng.randint(0, 600_000),
        commit_version=None, owner="", topology_id=None, where="",
    )  # fmt: skip


def verdicts_file(tmp_path: Path, name: str, rows: list[dict]) -> str:
    run = tmp_path / name
    for table, data in (("partitions", rows), ("groups", [])):
        (run / table).mkdir(parents=True)
        schema = None if data else pa.schema([("cluster", pa.string())])
        pq.write_table(pa.Table.from_pylist(data, schema=schema), run / table / "part-0.parquet")
    return str(run)


@pytest.mark.parametrize("seed", range(6))
def test_the_writers_keep_each_groups_totals_equal_to_its_partitions(seed: int, tmp_path) -> None:
    rng = random.Random(seed)
    clusters = [Cluster.objects.create(name=f"c{n}", kafka_bootstrap_servers="k:9092",
                                       retention_risk_s=600) for n in range(2)]  # fmt: skip
    topics = ["orders", "short", "week"]
    configs = [TopicRetention("short", 300_000, -1, "delete", T0),
               TopicRetention("week", 604_800_000, -1, "delete", T0)]  # fmt: skip
    names = [f"g{n}" for n in range(rng.randint(3, 9))]
    for cycle in range(3):
        at = T0 + cycle * 10_000
        for c in clusters:
            present = [n for n in names if rng.random() < 0.8]  # the others vanished
            figs = {}
            for name in present:
                for topic in rng.sample(topics, rng.randint(1, 3)):
                    for part in range(rng.randint(1, 4)):
                        f = figure(rng, name, topic, part)
                        figs[(f.source, f.group, f.topic, f.partition)] = f
            broker_up = rng.random() < 0.85
            outcome = CycleOutcome(
                cluster=c.name, cycle_ms=at, figures=list(figs.values()),
                offsets=[PartitionOffsets(t, p, 0, 100, at) for t in topics for p in range(4)]
                if broker_up else [],
                sources=[SourceOutcome("kafka", broker_up, at, at + 50,
                                       "" if broker_up else "broker down")],
                topic_configs=configs,
            )  # fmt: skip
            store_cycle(c, outcome)
        rows = [
            {"cluster": p.group.cluster.name, "source": p.group.source, "group": p.group.name,
             "topic": p.topic, "partition": p.partition, "status": rng.choice(STATUSES),
             "complete": 1.0, "diagnosis": json.dumps([]), "reason": "r", "lag": p.lag,
             "retention_left_s": rng.choice([None, round(rng.uniform(0, 900), 1)]),
             "evaluated_at_ms": at + 5_000}
            for p in PartitionState.objects.select_related("group__cluster")
            if rng.random() < 0.9  # a run that did not judge every partition
        ]  # fmt: skip
        apply_status_results(verdicts_file(tmp_path, f"run-{cycle}", rows))
        for g in ConsumerGroup.objects.all():
            assert stored_totals(g.id) == expected_totals(g.id), (cycle, g.name)

    groups = list(ConsumerGroup.objects.all())
    old = old_overview(groups)
    new = summary()
    assert new["partitions_by_status"] == old["partitions_by_status"]
    assert [(r["group"].id, r["value"]) for r in new["top_lag"]] == old["top_lag"]
    assert [(r["group"].id, r["value"]) for r in new["top_time_lag"]] == old["top_time_lag"]
    assert {c["id"]: c["partitions"] for c in new["clusters"] if c["partitions"]} == old[
        "per_cluster"
    ]
    assert new["groups_total"] == old["groups"]
    page = groups_query.page(GroupFilter(sort="lag", per_page=200))
    for g in page.object_list:
        expected = expected_totals(g.id)
        assert (g.lag_total, g.time_lag, g.retention_left, g.n_partitions) == (
            expected["lag_sum"], expected["time_lag_max_s"], expected["retention_left_min_s"],
            expected["partitions_total"],
        )  # fmt: skip


def test_a_group_without_partitions_has_zeros_and_no_figures() -> None:
    c = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    g = ConsumerGroup.objects.create(cluster=c, source="kafka", name="empty", lag_sum=7,
                                     partitions_total=3, partitions_ok=3, first_seen_at=SEEN,
                                     last_seen_at=SEEN)  # fmt: skip
    assert group_totals.refresh([g.id]) == 1
    assert stored_totals(g.id) == expected_totals(g.id) == {
        **dict.fromkeys(group_totals.FIELDS, None),
        **dict.fromkeys(["partitions_total", *group_totals.STATUS_FIELDS.values()], 0),
    }


def test_groups_are_refreshed_in_chunks_of_ids(monkeypatch) -> None:
    monkeypatch.setattr(group_totals, "CHUNK", 2)
    c = Cluster.objects.create(name="c", kafka_bootstrap_servers="k:9092")
    ids = []
    for n in range(5):
        g = ConsumerGroup.objects.create(cluster=c, source="kafka", name=f"g{n}",
                                         first_seen_at=SEEN, last_seen_at=SEEN)  # fmt: skip
        PartitionState.objects.bulk_create(
            PartitionState(group=g, topic="t", partition=p, lag=n * 10 + p, status="WARN",
                           sampled_at=SEEN)
            for p in range(n + 1)
        )  # fmt: skip
        ids.append(g.id)
    assert group_totals.refresh(set(ids)) == 5
    for n, gid in enumerate(ids):
        assert stored_totals(gid)["partitions_warn"] == n + 1
        assert stored_totals(gid) == expected_totals(gid)
