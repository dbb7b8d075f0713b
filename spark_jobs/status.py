"""Status and diagnosis of every partition and group, from the sample log (SPEC §4, §6).

The rules live in one place, ``spark_jobs.evaluator``; this module only turns samples into the
evaluator's input and runs it on Spark, one ``applyInPandas`` call per partition, then one per
group over the partition verdicts. It never decides a status itself.

**From samples to a window of commits.** The log holds polls, not commits. A new commit is seen
where, from one sample of a partition to the next:

- the committed offset changed, or
- the source's commit time (``commit_time_ms``: the ``__consumer_offsets`` record timestamp,
  the znode ``mtime``) changed, or its commit counter (``commit_version``: the znode version)
  moved, both only when known at both samples. A consumer re-committing the same offset is
  then a commit at the same offset, which is what Burrow's STALL (rule 6) looks at. Where
  neither is known (Kafka's AdminClient gives offsets only) an unchanged offset is invisible,
  and liveness (the owner) is what tells STALL from STOP.

The first sample of a partition is its first commit. A commit's time is the best known
(SPEC §4): ``commit_time_ms`` when the source gave it, else the ``ts_ms`` of the poll that first
saw it. Times never go backwards (a commit time older than the previous commit's is raised to
it): the rules measure spans between commits. The lag and the log's start and end offsets at
a commit are the sample's (a commit beyond the end of a re-created log shows there).
``build_window`` then keeps the last ``config.window`` commits (``min_distance_s``
applied), and the rest of the evidence comes from the samples since the one that first saw the
window's first commit: the spout's pending/failed/acked series and the topology ids.

**Broker offsets for rule 3** are Burrow's ring of *recent* broker offsets: the latest offsets
polled since the sample that first saw the window's *last* commit, at most ``config.window`` of
them (Burrow keeps ``intervals`` broker offsets). Rule 3 reads a broker offset at or below the
last committed offset as "the consumer was caught up lately, new data just arrived". A poll
taken before the last commit is no such evidence: it is at or below the committed offset simply
because the consumer later committed past it. Handing those polls over kept a partition whose
commit froze after a few quick commits out of STOP/STALL for as long as they stayed in the
look-back (the lab's poison message: polls with latest 38 and 78 before the commit at 103 kept
it OK with lag 978 and rising). The ``window`` bound lets a consumer that was caught up at its
last commit and then died reach STOP, as Burrow's ring turning over does. Samples are matched
by position, not by time: a source's commit time can be later than the ``ts_ms`` of the poll
that saw it (clocks differ).

**How long the partition was watched** goes with the window as ``polls``: the samples since
the one that first saw the window's first commit. The evaluator's rule 1 counts them (a young
partition is "not enough data" until ``minimum_complete`` of a window's worth of polls have
seen it, while one stuck for longer than the look-back, one commit and hundreds of polls, is
judged), and their presence tells it that lags were measured at polls (EVALUATOR.md).

**Rebalances** are not in the sample log: the collectors derive rebalance events (generation,
membership, assignment) and store them in the database only. What the log does hold is each
partition's ``owner`` at every poll, so for consumer groups (Kafka, ZooKeeper) the job derives
the two rebalance inputs from it: ``rebalances_ms``, the polls at which the ownership of some
partition of the group changed from the poll before (another owner, or an owner appearing or
vanishing: the same snapshot differences from which the collectors derive their member_left,
member_joined and assignment_changed events), and ``rebalancing``, the group's partitions only
partly owned at its last poll (a group with members leaves a partition unowned only while it
is being handed over; a dead group owns none). Stale samples are no observation of ownership.
A rebalance that moves nothing and ends between two polls is not seen; the collectors' events
would be the authoritative source once the sample log carries them.

The current figures (``latest``, ``earliest``, lag, owner, staleness) are the last sample's;
a stale last sample has no broker offsets, so its lag is the last one known (the evaluator
reports it as such), and a partition whose lag was never known in the samples is judged with
lag 0, since nothing shows messages waiting.

Null integers reach pandas as floats (Arrow's conversion), so offsets are exact up to 2**53,
some nine quadrillion messages per partition.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.evaluator import (
    Commit,
    EvaluatorConfig,
    PartitionVerdict,
    PartitionWindow,
    SpoutSeries,
    build_window,
    evaluate_group,
    evaluate_partition,
)

__all__ = [
    "GROUP_KEY",
    "GROUP_VERDICT_SCHEMA",
    "PARTITION_KEY",
    "PARTITION_VERDICT_SCHEMA",
    "derive_commits",
    "diagnosis_json",
    "evaluate_status",
    "partition_id",
    "window_from_samples",
]

PARTITION_KEY = ("cluster", "source", "group", "topic", "partition")
GROUP_KEY = ("cluster", "source", "group")

PARTITION_VERDICT_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("source", T.StringType(), False),
        T.StructField("group", T.StringType(), False),
        T.StructField("topic", T.StringType(), False),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("status", T.StringType(), False),
        T.StructField("complete", T.DoubleType(), False),
        T.StructField("diagnosis", T.StringType(), False),  # JSON: [{"code", "evidence"}]
        T.StructField("reason", T.StringType(), False),
        T.StructField("lag", T.LongType(), True),  # None: committed beyond latest (ERR)
        T.StructField("evaluated_at_ms", T.LongType(), False),
    ]
)
GROUP_VERDICT_SCHEMA = T.StructType(
    [
        T.StructField("cluster", T.StringType(), False),
        T.StructField("source", T.StringType(), False),
        T.StructField("group", T.StringType(), False),
        T.StructField("status", T.StringType(), False),
        T.StructField("complete", T.DoubleType(), False),
        T.StructField("total_lag", T.LongType(), False),
        T.StructField("partitions", T.IntegerType(), False),
        T.StructField("evaluated_at_ms", T.LongType(), False),
    ]
)

# The sample columns a window is built from (the key columns come along).
_WINDOW_COLUMNS = (
    "ts_ms", "committed", "earliest", "latest", "lag", "commit_time_ms", "commit_version",
    "topology_id", "alive", "pending", "failed", "acked", "stale",
)  # fmt: skip
_TOPICS = "_spout_path_topics"
_REBALANCES = "_group_rebalances_ms"
_REBALANCING = "_group_rebalancing"
# Sources whose partitions belong to a consumer group that rebalances (not Storm spouts).
_GROUP_SOURCES = ("kafka", "zookeeper")


# ---------------------------------------------------------------------------------------------
# Samples to a window (plain Python: the Spark function below and the tests share it)


def partition_id(cluster: str, source: str, group: str, topic: str, partition: int) -> str:
    """The verdict id of a partition: unique across clusters, sources and groups."""
    return f"{cluster}/{source}/{group}/{topic}/{partition}"


def _new_commit(previous: Any, current: Any) -> bool:
    """A source-given commit marker (time, version) moved; unknown on either side says nothing."""
    return previous is not None and current is not None and previous != current


def _seen_commits(samples: Mapping[str, Sequence[Any]]) -> list[tuple[int, Commit]]:
    """The commits seen in one partition's samples, each with the index of the sample that
    first saw it."""
    offsets = samples["committed"]
    times = samples["commit_time_ms"]
    versions = samples["commit_version"]
    seen: list[tuple[int, Commit]] = []
    for i, offset in enumerate(offsets):
        if i and not (
            offset != offsets[i - 1]
            or _new_commit(times[i - 1], times[i])
            or _new_commit(versions[i - 1], versions[i])
        ):
            continue
        at = times[i] if times[i] is not None else samples["ts_ms"][i]
        if seen and at < seen[-1][1].timestamp_ms:
            at = seen[-1][1].timestamp_ms
        lag, earliest, latest = samples["lag"][i], samples["earliest"][i], samples["latest"][i]
        seen.append((i, Commit(offset, at, lag, earliest, latest)))
    return seen


def derive_commits(samples: Mapping[str, Sequence[Any]]) -> list[Commit]:
    """The commits seen in one partition's samples (columns as lists, oldest sample first).

    See the module docstring for what counts as a commit and which time it gets.
    """
    return [commit for _, commit in _seen_commits(samples)]


def _present(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(v for v in values if v is not None)


def _last_known(values: Sequence[Any]) -> Any:
    for value in reversed(values):
        if value is not None:
            return value
    return None


def window_from_samples(
    pid: str,
    samples: Mapping[str, Sequence[Any]],
    config: EvaluatorConfig,
    topics: Sequence[str] = (),
    rebalances_ms: Sequence[int] = (),
    rebalancing: bool | None = None,
) -> PartitionWindow:
    """The evaluator's input for one partition, from its samples (oldest first, non-empty).

    ``topics`` are the topics seen under the partition's spout path (Storm only), for
    SPOUT_ID_COLLISION; ``rebalances_ms`` and ``rebalancing`` are its group's, as
    ``evaluate_status`` derives them from the owners (module docstring).
    """
    ts = samples["ts_ms"]
    seen = _seen_commits(samples)
    commits = build_window([commit for _, commit in seen], config)
    # build_window keeps commit objects as they are: find the samples that first saw them.
    row = {id(commit): i for i, commit in seen}
    since = row[id(commits[0])] if commits else 0
    last_commit_row = row[id(commits[-1])] if commits else 0

    def recent(name: str) -> Sequence[Any]:
        return samples[name][since:]

    pending = _present(recent("pending"))
    failed = _present(recent("failed"))
    acked = _present(recent("acked"))
    spout = SpoutSeries(pending, failed, acked) if pending or failed or acked else None
    topology_ids: list[str] = []
    for topology in _present(recent("topology_id")):
        if not topology_ids or topology_ids[-1] != topology:
            topology_ids.append(topology)

    last = len(ts) - 1
    stale = bool(samples["stale"][last])
    stale_since = None
    if stale:
        first_stale = last
        while first_stale > 0 and samples["stale"][first_stale - 1]:
            first_stale -= 1
        stale_since = ts[first_stale]
    lag = samples["lag"][last]
    if lag is None:  # no broker offsets at the last poll: the last known figure
        lag = _last_known(samples["lag"])
    return PartitionWindow(
        id=pid,
        commits=commits,
        # Burrow's ring of recent broker offsets, polled since the last commit (module doc).
        latest_offsets=_present(samples["latest"][last_commit_row:])[-config.window :],
        current_lag=lag if lag is not None else 0,
        earliest=samples["earliest"][last],
        latest=samples["latest"][last],
        alive=samples["alive"][last],
        spout=spout,
        stale=stale,
        stale_since_ms=stale_since,
        rebalances_ms=tuple(rebalances_ms),
        rebalancing=rebalancing,
        topology_ids=tuple(topology_ids),
        topics=tuple(topics),
        polls=len(ts) - since,
    )


def diagnosis_json(verdict: PartitionVerdict) -> str:
    """The verdict's diagnoses as compact JSON, the way the results table stores them."""
    found = [{"code": d.code, "evidence": d.evidence} for d in verdict.diagnosis]
    return json.dumps(found, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# pandas adapters (run on the executors)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _ints(series: pd.Series) -> list[int | None]:
    return [None if _missing(v) else int(v) for v in series.tolist()]


def _bools(series: pd.Series) -> list[bool | None]:
    return [None if _missing(v) else bool(v) for v in series.tolist()]


def _strings(series: pd.Series) -> list[str | None]:
    return [None if _missing(v) else str(v) for v in series.tolist()]


def _columns(pdf: pd.DataFrame) -> dict[str, list[Any]]:
    """Plain Python lists (ints, bools, None): the evaluator compares with ``is False`` and its
    evidence must serialise as JSON, so no numpy scalars or NaN may reach it."""
    columns: dict[str, list[Any]] = {}
    for name in _WINDOW_COLUMNS:
        if name == "topology_id":
            columns[name] = _strings(pdf[name])
        elif name in ("alive", "stale"):
            columns[name] = _bools(pdf[name])
        else:
            columns[name] = _ints(pdf[name])
    return columns


def _partition_evaluator(
    config: EvaluatorConfig, now_ms: int
) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def evaluate(pdf: pd.DataFrame) -> pd.DataFrame:
        pdf = pdf.sort_values("ts_ms", kind="stable")
        first = pdf.iloc[0]
        key = [str(first[k]) for k in PARTITION_KEY[:4]]
        partition = int(first["partition"])
        found = first[_TOPICS]
        topics = [] if _missing(found) else [str(t) for t in found]
        moved = first[_REBALANCES]
        rebalances = [] if _missing(moved) else [int(t) for t in moved]
        rebalancing = None if _missing(first[_REBALANCING]) else bool(first[_REBALANCING])
        window = window_from_samples(
            partition_id(*key, partition), _columns(pdf), config, topics, rebalances, rebalancing
        )
        verdict = evaluate_partition(window, config, now_ms)
        return pd.DataFrame(
            {
                "cluster": [key[0]],
                "source": [key[1]],
                "group": [key[2]],
                "topic": [key[3]],
                "partition": [partition],
                "status": [verdict.status],
                "complete": [float(verdict.complete)],
                "diagnosis": [diagnosis_json(verdict)],
                "reason": [verdict.reason],
                "lag": pd.array([verdict.lag], dtype="Int64"),
                "evaluated_at_ms": [now_ms],
            }
        )

    return evaluate


def _evaluate_group_frame(pdf: pd.DataFrame) -> pd.DataFrame:
    first = pdf.iloc[0]
    lags = _ints(pdf["lag"])
    verdicts = [
        PartitionVerdict(str(i), status, float(complete), (), "", lag)
        for i, (status, complete, lag) in enumerate(
            zip(pdf["status"].tolist(), pdf["complete"].tolist(), lags, strict=True)
        )
    ]
    group = evaluate_group(str(first["group"]), verdicts)
    return pd.DataFrame(
        {
            "cluster": [str(first["cluster"])],
            "source": [str(first["source"])],
            "group": [group.id],
            "status": [group.status],
            "complete": [float(group.complete)],
            "total_lag": [int(group.total_lag)],
            "partitions": [len(verdicts)],
            "evaluated_at_ms": [int(first["evaluated_at_ms"])],
        }
    )


# ---------------------------------------------------------------------------------------------
# The transformation


def _spout_path_topics(samples: DataFrame) -> DataFrame:
    """Per Storm spout path (cluster, spout id), the topics written under it when there are
    several: two topologies sharing a ``spoutConfig.id`` (DOMAIN §1, SPOUT_ID_COLLISION)."""
    return (
        samples.where(F.col("source") == F.lit("storm"))
        .groupBy(*GROUP_KEY)
        .agg(F.array_sort(F.collect_set("topic")).alias(_TOPICS))
        .where(F.size(_TOPICS) > 1)
    )


def _group_rebalances(samples: DataFrame) -> DataFrame:
    """Per consumer group (Kafka, ZooKeeper): the polls at which its ownership changed, and
    whether its partitions were only partly owned at its last poll (module docstring).

    Stale samples (the source was unreachable) are no observation of ownership and are left out.
    """
    consumers = samples.where(F.col("source").isin(*_GROUP_SOURCES) & ~F.col("stale")).select(
        *PARTITION_KEY, "ts_ms", "owner"
    )
    order = Window.partitionBy(*PARTITION_KEY).orderBy("ts_ms")
    changed = F.lag("ts_ms").over(order).isNotNull() & ~F.col("owner").eqNullSafe(
        F.lag("owner").over(order)
    )
    moved = (
        consumers.withColumn("_owner_changed", changed)
        .where(F.col("_owner_changed"))
        .groupBy(*GROUP_KEY)
        .agg(F.array_sort(F.collect_set("ts_ms")).alias(_REBALANCES))
    )
    last = consumers.groupBy(*GROUP_KEY).agg(F.max("ts_ms").alias("_last_ts"))
    owned = F.count("owner")
    partly = F.when(owned == 0, F.lit(None)).otherwise(owned < F.count(F.lit(1)))
    handing_over = (
        consumers.join(last, list(GROUP_KEY))
        .where(F.col("ts_ms") == F.col("_last_ts"))
        .groupBy(*GROUP_KEY)
        .agg(partly.alias(_REBALANCING))
    )
    return handing_over.join(moved, list(GROUP_KEY), "left")


def evaluate_status(
    samples: DataFrame, now_ms: int, config: EvaluatorConfig
) -> tuple[DataFrame, DataFrame]:
    """Partition verdicts and group verdicts (``PARTITION_VERDICT_SCHEMA``,
    ``GROUP_VERDICT_SCHEMA``) of every partition in ``samples`` as of ``now_ms``.

    ``samples`` is the window the caller read (``read_samples``: one row per key); each
    partition is judged on its own samples only. Both frames are lazy and the group frame is
    built from the partition frame: persist the partition frame first when both are written,
    or the partitions are evaluated twice.
    """
    columns = [*PARTITION_KEY, *(c for c in _WINDOW_COLUMNS if c not in PARTITION_KEY)]
    topics = _spout_path_topics(samples)
    rebalances = _group_rebalances(samples)
    rows = (
        samples.select(*columns)
        .join(F.broadcast(topics), list(GROUP_KEY), "left")
        .join(F.broadcast(rebalances), list(GROUP_KEY), "left")
    )
    partitions = rows.groupBy(*PARTITION_KEY).applyInPandas(
        _partition_evaluator(config, now_ms), PARTITION_VERDICT_SCHEMA
    )
    groups = partitions.groupBy(*GROUP_KEY).applyInPandas(
        _evaluate_group_frame, GROUP_VERDICT_SCHEMA
    )
    return partitions, groups
