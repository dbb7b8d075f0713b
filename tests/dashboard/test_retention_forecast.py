"""The retention forecast where it is computed: a status run applied with the stored topic
configs (dashboard/status/results.py), and the configs as the cycle store keeps them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import Source, TopicRetention
from dashboard.monitoring.models import Cluster, PartitionState, TopicConfig
from dashboard.status.results import apply_status_results
from dashboard.store.rows import store_cycle

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000_000


def figure(group: str, topic: str, lag: int, time_lag_s: float | None) -> PartitionFigure:
    return PartitionFigure(
        source=Source.KAFKA, group=group, topic=topic, partition=0, committed=100,
        earliest=0, latest=100 + lag, lag=lag, time_lag_s=time_lag_s,
        time_lag_kind="interpolated", out_of_range=None, commit_time_ms=None,
        commit_version=None, owner="", topology_id=None, where="",
    )  # fmt: skip


def retention(topic: str, ms: int, policy: str = "delete", at: int = NOW) -> TopicRetention:
    return TopicRetention(topic, ms, -1, policy, at)


def verdict(group: str, topic: str, diagnosis: list | None = None) -> dict:
    return {
        "cluster": "c1", "source": "kafka", "group": group, "topic": topic, "partition": 0,
        "status": "STALL", "complete": 1.0, "diagnosis": json.dumps(diagnosis or []),
        "reason": "r", "lag": 5, "evaluated_at_ms": NOW,
    }  # fmt: skip


def apply(tmp_path: Path, verdicts: list[dict]) -> None:
    run = tmp_path / "run"
    for name, rows in (("partitions", verdicts), ("groups", [])):
        (run / name).mkdir(parents=True)
        schema = None if rows else pa.schema([("cluster", pa.string())])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), run / name / "part-0.parquet")
    apply_status_results(str(run))


def stored(group: str) -> PartitionState:
    return PartitionState.objects.get(group__name=group)


def codes(p: PartitionState) -> list[str]:
    return [d["code"] for d in p.diagnosis]


@pytest.fixture
def cluster() -> Cluster:
    return Cluster.objects.create(name="c1", kafka_bootstrap_servers="k:9092", retention_risk_s=600)


def test_the_store_keeps_the_last_good_reading_of_each_topic(cluster: Cluster) -> None:
    store_cycle(cluster, CycleOutcome("c1", NOW, topic_configs=[retention("short", 300_000)]))
    # A later cycle that read nothing (a failed DescribeConfigs) leaves the row as it was.
    store_cycle(cluster, CycleOutcome("c1", NOW + 10_000))
    row = TopicConfig.objects.get(topic="short")
    assert (row.retention_ms, row.retention_bytes, row.cleanup_policy) == (300_000, -1, "delete")
    later = dataclasses.replace(retention("short", 600_000, "compact"), read_ms=NOW + 20_000)
    store_cycle(cluster, CycleOutcome("c1", NOW + 20_000, topic_configs=[later]))
    row = TopicConfig.objects.get(topic="short")
    assert (row.retention_ms, row.cleanup_policy) == (600_000, "compact")
    assert TopicConfig.objects.count() == 1


def test_a_status_run_gets_the_forecast_and_retention_risk(cluster: Cluster, tmp_path) -> None:
    figures = [
        figure("at-risk", "short", 50, 240.0),  # 300 s retention: 60 s left < 600 s
        figure("roomy", "week", 50, 240.0),  # a week's retention: no risk, a figure
        figure("forever", "infinite", 50, 10_000.0),
        figure("compacted", "compact", 50, 10_000.0),
        figure("unread", "unknown", 50, 10_000.0),  # config never read: no forecast
        figure("no-time-lag", "short2", 50, None),
        figure("source-down", "short3", 50, 290.0),
    ]
    configs = [
        retention("short", 300_000), retention("week", 604_800_000),
        retention("infinite", -1), retention("compact", 1000, "compact"),
        retention("short2", 300_000), retention("short3", 300_000),
    ]  # fmt: skip
    store_cycle(cluster, CycleOutcome("c1", NOW, figures=figures, topic_configs=configs))
    unreachable = [{"code": "SOURCE_UNREACHABLE", "evidence": {}}]
    apply(tmp_path, [
        verdict("at-risk", "short"), verdict("roomy", "week"), verdict("forever", "infinite"),
        verdict("compacted", "compact"), verdict("unread", "unknown"),
        verdict("no-time-lag", "short2"), verdict("source-down", "short3", unreachable),
    ])  # fmt: skip

    risky = stored("at-risk")
    assert risky.retention_left_s == 60.0
    assert codes(risky) == ["RETENTION_RISK"]
    assert risky.diagnosis[0]["evidence"] == {
        "seconds_left": 60.0, "retention_s": 300.0, "time_lag_s": 240.0, "threshold_s": 600,
        "expiring": False,
    }  # fmt: skip
    assert risky.status == "STALL"  # a finding, not a status of its own
    assert stored("roomy").retention_left_s == 604_800 - 240
    assert codes(stored("roomy")) == []
    for name in ("forever", "compacted", "unread", "no-time-lag"):
        assert stored(name).retention_left_s is None, name
        assert codes(stored(name)) == [], name
    down = stored("source-down")
    assert down.retention_left_s is None
    assert codes(down) == ["SOURCE_UNREACHABLE"]


def test_the_threshold_is_the_clusters_and_zero_turns_it_off(cluster, tmp_path) -> None:
    store_cycle(
        cluster,
        CycleOutcome("c1", NOW, figures=[figure("g", "short", 50, 240.0)],
                     topic_configs=[retention("short", 300_000)]),
    )  # fmt: skip
    cluster.retention_risk_s = 0
    cluster.save()
    apply(tmp_path, [verdict("g", "short")])
    assert stored("g").retention_left_s == 60.0  # the figure stays: only the finding is off
    assert codes(stored("g")) == []
