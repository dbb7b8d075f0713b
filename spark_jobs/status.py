"""Status and diagnosis of every partition and group, from the sample log (SPEC §4, §6).

The rules live in one place, ``spark_jobs.evaluator``; this module only turns samples into the
evaluator's input and runs it on Spark, one ``applyInArrow`` call per consumer group (its
partitions' samples, sorted and de-duplicated in the call), then one per group over the
partition verdicts. It never decides a status itself.

**Why per group, in Arrow.** A call per partition cost 10,000 pandas frames a run (building,
sorting and converting them was most of the job's Python time), and the group inputs
(spout-path topics, rebalances) were Spark joins of their own. One call per group gets the
group's samples as one Arrow table: sorted in Arrow, turned into Python lists once, and the
group's inputs computed from the same lists. Duplicate samples (an hour being compacted) sit
next to each other after the sort and are dropped there, so the read needs no shuffle of its
own for them.

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

Arrow hands the function Python ints, bools and None, so offsets are exact.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
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
    "evaluate_group_samples",
    "evaluate_status",
    "group_rebalances",
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
# What the per-group function reads: the key, the owner (rebalances), the window's columns.
_INPUT_COLUMNS = tuple(dict.fromkeys((*PARTITION_KEY, "owner", *_WINDOW_COLUMNS)))
_ARROW_TYPES = {"string": pa.string(), "integer": pa.int32(), "long": pa.int64(),
                "double": pa.float64()}  # fmt: skip
_VERDICT_ARROW_SCHEMA = pa.schema(
    [
        pa.field(f.name, _ARROW_TYPES[f.dataType.typeName()], f.nullable)
        for f in PARTITION_VERDICT_SCHEMA.fields
    ]
)
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


def _partition_runs(topic: Sequence[str], part: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, end)`` row ranges of each partition in rows sorted by (topic, partition)."""
    n = len(part)
    starts = [0, *(i for i in range(1, n) if part[i] != part[i - 1] or topic[i] != topic[i - 1])]
    return list(zip(starts, [*starts[1:], n], strict=True))


def _drop_duplicates(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Rows sorted by (topic, partition, ts_ms) without repeats of a key: a repeat is the same
    sample written twice (an hour being compacted), so which copy stays does not matter."""
    topic, part, ts = cols["topic"], cols["partition"], cols["ts_ms"]
    n = len(ts)
    keep = [
        i
        for i in range(n)
        if i == 0 or ts[i] != ts[i - 1] or part[i] != part[i - 1] or topic[i] != topic[i - 1]
    ]
    if len(keep) == n:
        return cols
    return {name: [values[i] for i in keep] for name, values in cols.items()}


def group_rebalances(
    ts: Sequence[int],
    owner: Sequence[str | None],
    stale: Sequence[bool],
    runs: Sequence[tuple[int, int]],
) -> tuple[tuple[int, ...], bool | None]:
    """A consumer group's ``rebalances_ms`` and ``rebalancing`` from its partitions' owners
    (module docstring): the polls at which some partition's owner differed from its previous
    non-stale poll, and whether its partitions were only partly owned at its last non-stale
    poll (None when it owned none then, or was never seen fresh)."""
    moved: set[int] = set()
    last: int | None = None
    for a, b in runs:
        seen = [i for i in range(a, b) if not stale[i]]
        moved.update(ts[j] for i, j in zip(seen, seen[1:], strict=False) if owner[j] != owner[i])
        if seen and (last is None or ts[seen[-1]] > last):
            last = ts[seen[-1]]
    if last is None:
        return (), None
    at_last = [owner[i] for a, b in runs for i in range(a, b) if ts[i] == last and not stale[i]]
    owned = sum(o is not None for o in at_last)
    return tuple(sorted(moved)), (None if owned == 0 else owned < len(at_last))


def evaluate_group_samples(
    cols: dict[str, list[Any]], config: EvaluatorConfig, now_ms: int
) -> dict[str, list[Any]]:
    """Verdict rows (``PARTITION_VERDICT_SCHEMA``'s columns) of every partition of one group,
    from the group's samples as column lists sorted by (topic, partition, ts_ms)."""
    cols = _drop_duplicates(cols)
    topic, part = cols["topic"], cols["partition"]
    cluster, source, group = cols["cluster"][0], cols["source"][0], cols["group"][0]
    runs = _partition_runs(topic, part)
    # Two topics under one spout path: two topologies sharing a spoutConfig.id (DOMAIN §1).
    spout_topics = sorted(set(topic)) if source == "storm" else []
    topics = spout_topics if len(spout_topics) > 1 else []
    rebalances: tuple[int, ...] = ()
    rebalancing = None
    if source in _GROUP_SOURCES:
        rebalances, rebalancing = group_rebalances(
            cols["ts_ms"], cols["owner"], cols["stale"], runs
        )
    rows: dict[str, list[Any]] = {name: [] for name in _VERDICT_ARROW_SCHEMA.names}
    for a, b in runs:
        samples = {name: cols[name][a:b] for name in _WINDOW_COLUMNS}
        pid = partition_id(cluster, source, group, topic[a], part[a])
        window = window_from_samples(pid, samples, config, topics, rebalances, rebalancing)
        verdict = evaluate_partition(window, config, now_ms)
        values = (cluster, source, group, topic[a], part[a], verdict.status,
                  float(verdict.complete), diagnosis_json(verdict), verdict.reason, verdict.lag,
                  now_ms)  # fmt: skip
        for name, value in zip(_VERDICT_ARROW_SCHEMA.names, values, strict=True):
            rows[name].append(value)
    return rows


def _group_evaluator(config: EvaluatorConfig, now_ms: int) -> Callable[[pa.Table], pa.Table]:
    order = [("topic", "ascending"), ("partition", "ascending"), ("ts_ms", "ascending")]

    def evaluate(table: pa.Table) -> pa.Table:
        table = table.sort_by(order)
        cols = {name: table.column(name).to_pylist() for name in _INPUT_COLUMNS}
        return pa.table(evaluate_group_samples(cols, config, now_ms), schema=_VERDICT_ARROW_SCHEMA)

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


def evaluate_status(
    samples: DataFrame, now_ms: int, config: EvaluatorConfig
) -> tuple[DataFrame, DataFrame]:
    """Partition verdicts and group verdicts (``PARTITION_VERDICT_SCHEMA``,
    ``GROUP_VERDICT_SCHEMA``) of every partition in ``samples`` as of ``now_ms``.

    ``samples`` is the window the caller read (``read_samples``; duplicates of a key may be
    left in, they are dropped per group); each partition is judged on its own samples only.
    Both frames are lazy and the group frame is built from the partition frame: persist the
    partition frame first when both are written, or the partitions are evaluated twice.
    """
    partitions = (
        samples.select(*_INPUT_COLUMNS)
        .groupBy(*GROUP_KEY)
        .applyInArrow(_group_evaluator(config, now_ms), PARTITION_VERDICT_SCHEMA)
    )
    groups = partitions.groupBy(*GROUP_KEY).applyInPandas(
        _evaluate_group_frame, GROUP_VERDICT_SCHEMA
    )
    return partitions, groups
