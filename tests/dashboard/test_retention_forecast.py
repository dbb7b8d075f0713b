"""The retention forecast end to end: the topic configs as the cycle store keeps them, read by
the status run's caller (``dashboard/status/runs.py``) with each cluster's horizon, decided by
the evaluator in the status job's per-group function, and carried into the database by the
load (``dashboard/status/results.py``), which decides nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from collectors.figures import PartitionFigure
from collectors.outcome import CycleOutcome
from collectors.records import Source, TopicRetention
from collectors.sample_log import COLUMNS
from dashboard.monitoring.models import Cluster, PartitionState, TopicConfig
from dashboard.status.results import apply_status_results
from dashboard.status.runs import cluster_evaluator_configs, evaluator_config, topic_retention
from dashboard.store.rows import store_cycle
from spark_jobs.status import PARTITION_VERDICT_SCHEMA, evaluate_group_samples

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000_000
MIN = 60_000


def figure(group: str, topic: str, lag: int, time_lag_s: float | None) -> PartitionFigure:
    return PartitionFigure(
        source=Source.KAFKA, group=group, topic=topic, partition=0, committed=100,
        earliest=0, latest=100 + lag, lag=lag, time_lag_s=time_lag_s,
        time_lag_kind="interpolated", out_of_range=None, commit_time_ms=None,
        commit_version=None, owner="", topology_id=None, where="",
    )  # fmt: skip


def retention(topic: str, ms: int, policy: str = "delete", at: int = NOW) -> TopicRetention:
    return TopicRetention(topic, ms, -1, policy, at)


def samples(group: str, topic: str, lag: int, time_lag_s: float | None, stale: bool = False):
    """Ten polls a minute apart up to NOW of a consumer held at 100 and alive (STALL), its
    time lag as the collector computed it; ``stale``: the source down at the last poll."""
    rows = []
    for i in range(10):
        down = stale and i == 9
        row = dict.fromkeys(COLUMNS)
        row.update(
            ts_ms=NOW - (9 - i) * MIN, cluster="c1", source="kafka", group=group, topic=topic,
            partition=0, committed=100, earliest=None if down else 0,
            latest=None if down else 100 + lag, lag=None if down else lag,
            time_lag_s=None if down else time_lag_s, owner="m-1", alive=True, stale=down,
        )  # fmt: skip
        rows.append(row)
    return rows


def run_status(tmp_path: Path, groups: list[list[dict]]) -> None:
    """The status job's per-group function with what ``runs`` hands it, its rows written as
    a run, and the run loaded."""
    configs, topics = cluster_evaluator_configs(), topic_retention()
    verdicts = []
    for rows in groups:
        cols = {name: [r[name] for r in rows] for name in rows[0]}
        out = evaluate_group_samples(cols, evaluator_config(), NOW + 1000, configs,
                                     retention=topics)  # fmt: skip
        names = PARTITION_VERDICT_SCHEMA.names
        verdicts += [dict(zip(names, values, strict=True))
                     for values in zip(*(out[n] for n in names), strict=True)]  # fmt: skip
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


CASES = [  # group, topic, lag, time lag, source down at the last poll
    ("at-risk", "short", 50, 240.0, False),  # 300 s retention: 60 s left < 600 s
    ("roomy", "week", 50, 240.0, False),  # a week's retention: no risk, a figure
    ("forever", "infinite", 50, 10_000.0, False),
    ("compacted", "compact", 50, 10_000.0, False),
    ("unread", "unknown", 50, 10_000.0, False),  # config never read: no forecast
    ("no-time-lag", "short2", 50, None, False),
    ("source-down", "short3", 50, 290.0, True),
]


def test_a_status_run_gets_the_forecast_and_retention_risk(cluster: Cluster, tmp_path) -> None:
    figures = [figure(g, t, lag, time_lag) for g, t, lag, time_lag, _ in CASES]
    configs = [
        retention("short", 300_000), retention("week", 604_800_000),
        retention("infinite", -1), retention("compact", 1000, "compact"),
        retention("short2", 300_000), retention("short3", 300_000),
    ]  # fmt: skip
    store_cycle(cluster, CycleOutcome("c1", NOW, figures=figures, topic_configs=configs))
    run_status(tmp_path, [samples(g, t, lag, time_lag, down) for g, t, lag, time_lag, down in CASES])

    risky = stored("at-risk")
    assert risky.retention_left_s == 60.0
    assert codes(risky) == ["RETENTION_RISK"]
    assert risky.diagnosis[0]["evidence"] == {
        "seconds_left": 60.0, "retention_s": 300.0, "time_lag_s": 240.0, "threshold_s": 600,
        "expiring": False,
    }  # fmt: skip
    assert risky.status == "STALL"  # a finding, not a status of its own
    assert "RETENTION" not in risky.reason and "retention" not in risky.reason
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
    run_status(tmp_path, [samples("g", "short", 50, 240.0)])
    assert stored("g").retention_left_s == 60.0  # the figure stays: only the finding is off
    assert codes(stored("g")) == []
