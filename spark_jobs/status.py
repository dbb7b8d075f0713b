"""Status and diagnosis of every partition and group, from the sample log (SPEC §4, §6).

The rules live in one place, ``spark_jobs.evaluator``; this module only turns samples into the
evaluator's input and runs it on Spark, one ``applyInArrow`` call per consumer group (its
partitions' samples, sorted and de-duplicated in the call), which judges the partitions and
then the group from their verdicts. It never decides a status itself, not even whether a
partition's figures are current: the window carries the poll times (and which polls found the
source down) from which the evaluator decides that (``stale_gap``, ``source_down_since_commit``).

**Why per group, in Arrow.** A call per partition cost 10,000 pandas frames a run (building,
sorting and converting them was most of the job's Python time), and the group inputs
(spout-path topics, rebalances) were Spark joins of their own. One call per group gets the
group's samples as one Arrow table: sorted in Arrow, turned into Python lists once, and the
group's inputs computed from the same lists. The group's own verdict is made in the same
call and rides on its partitions' rows (``VERDICT_SCHEMA``), so the group table is a
projection of the partitions' rows rather than a second shuffle and a second Python function
per group (a fifth of a small window's run). Duplicate samples (an hour being compacted) sit
next to each other after the sort and are dropped there, so the read needs no shuffle of its
own for them.

The samples become windows in ``spark_jobs.windows`` (what counts as a commit, which broker
offsets are recent, the group's rebalances), plain Python that the tests and the benchmark's
baseline call without Spark; this module is the Spark side: the schemas, the per-group Arrow
function and the transformation.

Arrow hands the function Python ints, bools and None, so offsets are exact.

Longer than 400 lines on purpose: the verdict schemas, the per-group functions (whole and
sliced) and the slice's checks are one contract, the columns the functions return being the
schemas' and the checks being what makes a slice's rows the whole window's; split, they
would be modules that always change together.
"""

from __future__ import annotations

import itertools
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import Accumulator
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_jobs.evaluator import (
    EvaluatorConfig,
    PartitionVerdict,
    PartitionWindow,
    evaluate_group,
    evaluate_partition,
)
from spark_jobs.windows import (
    WINDOW_COLUMNS,
    RetentionSettings,
    commit_rows,
    first_holding,
    group_rebalances,
    partition_id,
    raw_commit_time,
    window_from_samples,
)

__all__ = [
    "GROUP_KEY",
    "GROUP_VERDICT_SCHEMA",
    "Counters",
    "PARTITION_KEY",
    "Older",
    "PARTITION_VERDICT_SCHEMA",
    "SLICE_VERDICT_SCHEMA",
    "TopicRetention",
    "VERDICT_SCHEMA",
    "diagnosis_json",
    "evaluate_group_samples",
    "evaluate_recent",
    "evaluate_status",
    "evaluate_verdicts",
    "group_verdicts",
    "partition_verdicts",
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
        # The retention forecast: seconds before retention may delete unread messages.
        T.StructField("retention_left_s", T.DoubleType(), True),
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

# What the per-group function returns: a partition's verdict, and its group's, which the first
# row of each group (``group_head``) stands for in the group table.
_GROUP_COLUMNS = {"status": "group_status", "complete": "group_complete",
                  "total_lag": "group_total_lag", "partitions": "group_partitions"}  # fmt: skip
VERDICT_SCHEMA = T.StructType(
    [
        *PARTITION_VERDICT_SCHEMA.fields,
        *(
            T.StructField(_GROUP_COLUMNS[f.name], f.dataType, f.nullable)
            for f in GROUP_VERDICT_SCHEMA.fields
            if f.name in _GROUP_COLUMNS
        ),
        T.StructField("group_head", T.BooleanType(), False),
    ]
)

# What the slice's per-group function returns: the rows above, or one row marking a group
# the slice could not tell (``whole``), to be judged from its whole window.
SLICE_VERDICT_SCHEMA = T.StructType(
    [*VERDICT_SCHEMA.fields, T.StructField("whole", T.BooleanType(), False)]
)

# What the per-group function reads: the key, the owner (rebalances), the window's columns.
_INPUT_COLUMNS = tuple(dict.fromkeys((*PARTITION_KEY, "owner", *WINDOW_COLUMNS)))
_ARROW_TYPES = {"string": pa.string(), "integer": pa.int32(), "long": pa.int64(),
                "double": pa.float64(), "boolean": pa.bool_()}  # fmt: skip
_VERDICT_ARROW_SCHEMA = pa.schema(
    [pa.field(f.name, _ARROW_TYPES[f.dataType.typeName()], f.nullable) for f in VERDICT_SCHEMA]
)
_SLICE_ARROW_SCHEMA = _VERDICT_ARROW_SCHEMA.append(pa.field("whole", pa.bool_(), False))
# What a partition's samples before the slice amount to (``Older``), one row per partition.
_OLDER_COLUMNS = ("older_rows", "older_max_ms")
# Each topic's retention settings by (cluster, topic), as the caller read them from the
# database: they go with every partition of the topic to the evaluator (the forecast).
TopicRetention = Mapping[tuple[str, str], RetentionSettings]
# Sources whose partitions belong to a consumer group that rebalances (not Storm spouts).
_GROUP_SOURCES = ("kafka", "zookeeper")


# ---------------------------------------------------------------------------------------------
# Verdict rows (plain Python: the Spark function below and the tests share it)


def diagnosis_json(verdict: PartitionVerdict) -> str:
    """The verdict's diagnoses as compact JSON, the way the results table stores them."""
    found = [{"code": d.code, "evidence": d.evidence} for d in verdict.diagnosis]
    return json.dumps(found, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# The per-group evaluation (runs on the executors)


def _partition_runs(topic: Sequence[str], part: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, end)`` row ranges of each partition in rows sorted by (topic, partition)."""
    runs = itertools.groupby(zip(topic, part, strict=True))
    ends = list(itertools.accumulate(len(list(rows)) for _, rows in runs)) or [0]
    return list(zip([0, *ends[:-1]], ends, strict=True))


def _drop_duplicates(cols: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Rows sorted by (topic, partition, ts_ms) without repeats of a key: a repeat is the same
    sample written twice (an hour being compacted), so which copy stays does not matter."""
    topic, part, ts = cols["topic"], cols["partition"], cols["ts_ms"]
    n = len(ts)
    # The common case, found in C: no poll time repeats the one before (a partition's first
    # poll can only repeat its predecessor's last when both were polled together).
    if not any(map(operator.eq, ts[1:], ts[:-1])):
        return cols
    keys = list(zip(topic, part, ts, strict=True))
    if not any(map(operator.eq, keys[1:], keys[:-1])):
        return cols
    keep = [
        i
        for i in range(n)
        if i == 0 or ts[i] != ts[i - 1] or part[i] != part[i - 1] or topic[i] != topic[i - 1]
    ]
    if len(keep) == n:
        return cols
    return {name: [values[i] for i in keep] for name, values in cols.items()}


def since_history_start(cols: dict[str, list[Any]], start_ms: int) -> dict[str, list[Any]] | None:
    """A group's samples polled since its cluster's history started over (a cluster rebuilt
    under the same name: ``EvaluatorConfig.history_from_ms``), ``cols`` itself when all are;
    None when none is. The old cluster's samples are never read: its offsets, compared with
    the new cluster's, would read as rewinds and skipped data, and its topology ids as a
    restart."""
    ts = cols["ts_ms"]
    keep = [i for i, t in enumerate(ts) if t >= start_ms]
    if len(keep) == len(ts):
        return cols
    if not keep:
        return None
    return {name: [values[i] for i in keep] for name, values in cols.items()}


def _empty_rows() -> dict[str, list[Any]]:
    return {name: [] for name in VERDICT_SCHEMA.names}


class Older(NamedTuple):
    """What a partition's samples before the slice amount to (``evaluate_recent``): how many
    (duplicates included), and the latest commit time any of them could carry (the source's
    commit time, else the poll's: the never-backwards clamp of the commit times reaches no
    further)."""

    rows: int
    max_time_ms: int


def _slice_holds(
    samples: Mapping[str, Sequence[Any]],
    window: PartitionWindow,
    older: Older,
    config: EvaluatorConfig,
) -> bool:
    """Whether ``window``, made from the slice of a partition that also has older samples,
    is the window all its samples make, so that the verdict is the same.

    Every look back past the slice's first sample is checked, and each one that reaches it
    says no: the window's first commit (its first sample is a commit to the slice, whether or
    not it is one; the evaluator's polls, their times (with the poll before the first) and
    the spout series count from there), and a window
    short of ``config.window`` commits (min-distance can drop the slice's first commit from
    it, and older commits would fill it); the commit-time
    clamp (an older commit time above the slice's first commit would raise the window's);
    the stale run and the last known lag (both walk back to the first sample that ends
    them); the run of samples holding the last commit (``down_polls_ms``). (The group's owner
    changes are checked by the caller, for every partition of the group.)
    ``build_window``'s min-distance choice looks only at the next commit, so a suffix of the
    commits keeps the same ones.
    """
    ts = samples["ts_ms"]
    since = len(ts) - (window.polls or len(ts))
    if since < 1 or len(window.commits) < config.window:
        return False
    first = next(commit_rows(samples, 1))  # there is one: the window's first commit
    if raw_commit_time(samples, first) < max(older.max_time_ms, raw_commit_time(samples, 0)):
        return False
    if all(samples["stale"]) or all(lag is None for lag in samples["lag"]):
        return False
    return first_holding(samples["committed"], window.commits[-1].offset) > 0


def _first_fresh(stale: Sequence[bool], a: int, b: int) -> int | None:
    return next((i for i in range(a, b) if not stale[i]), None)


def evaluate_group_samples(
    cols: dict[str, list[Any]],
    config: EvaluatorConfig,
    now_ms: int,
    per_cluster: Mapping[str, EvaluatorConfig] | None = None,
    older: Mapping[tuple[str, int], Older] | None = None,
    retention: TopicRetention | None = None,
    windows: list[tuple[Mapping[str, Sequence[Any]], PartitionWindow]] | None = None,
) -> dict[str, list[Any]] | None:
    """Verdict rows (``PARTITION_VERDICT_SCHEMA``'s columns) of every partition of one group,
    from the group's samples as column lists sorted by (topic, partition, ts_ms).

    ``per_cluster`` holds the thresholds of clusters that set their own (SPEC §2.4); the
    others are judged with ``config``. ``retention`` holds the topics' retention settings
    (a topic absent from it: unknown, no forecast).

    ``older``, if given, says that ``cols`` are only the window's recent slice, and what each
    partition's samples before it amount to (a partition absent from it has none). The rows
    are then those the whole window gives, or None where the slice cannot tell them
    (``_slice_holds``): the caller then evaluates the group's whole window.

    ``windows``, if given, gets each partition's samples and window appended, in the rows'
    order: what the incremental state carries to the next run is chosen from them
    (``spark_jobs.state``), without building the windows twice.
    """
    cols = _drop_duplicates(cols)
    cluster = cols["cluster"][0]
    if per_cluster:
        config = per_cluster.get(cluster, config)
    if config.history_from_ms:
        kept = since_history_start(cols, config.history_from_ms)
        if kept is None:
            return None if older else _empty_rows()
        if kept is not cols:
            cols, older = kept, None  # every sample before the slice is older still
    topic, part = cols["topic"], cols["partition"]
    source, group = cols["source"][0], cols["group"][0]
    runs = _partition_runs(topic, part)
    older = older or {}
    if older and not older.keys() <= {(topic[a], part[a]) for a, _ in runs}:
        return None  # a partition seen only before the slice
    # Two topics under one spout path: two topologies sharing a spoutConfig.id (DOMAIN §1).
    spout_topics = sorted(set(topic)) if source == "storm" else []
    topics = spout_topics if len(spout_topics) > 1 else []
    rebalances: tuple[int, ...] = ()
    rebalancing = None
    moved_before = None
    if source in _GROUP_SOURCES:
        rebalances, rebalancing = group_rebalances(
            cols["ts_ms"], cols["owner"], cols["stale"], runs
        )
        # An owner change at a partition's first fresh poll of the slice may be one from its
        # last fresh poll before it: the slice does not see those.
        firsts = [
            cols["ts_ms"][i]
            for a, b in runs
            if (topic[a], part[a]) in older and (i := _first_fresh(cols["stale"], a, b)) is not None
        ]
        moved_before = max(firsts, default=None)
    rows: dict[str, list[Any]] = {name: [] for name in PARTITION_VERDICT_SCHEMA.names}
    verdicts = []
    retention = retention or {}
    for a, b in runs:
        samples = {name: cols[name][a:b] for name in WINDOW_COLUMNS}
        pid = partition_id(cluster, source, group, topic[a], part[a])
        settings = retention.get((cluster, topic[a]))
        window = window_from_samples(
            pid, samples, config, topics, rebalances, rebalancing, settings
        )
        if older:
            before = older.get((topic[a], part[a]))
            if before is not None and not _slice_holds(samples, window, before, config):
                return None
            # REBALANCE_STORM counts the group's owner changes since the window's first
            # commit: none may be one the slice missed.
            if moved_before is not None and window.commits[0].timestamp_ms <= moved_before:
                return None
        if windows is not None:
            windows.append((samples, window))
        verdict = evaluate_partition(window, config, now_ms)
        verdicts.append(verdict)
        values = (cluster, source, group, topic[a], part[a], verdict.status,
                  float(verdict.complete), diagnosis_json(verdict), verdict.reason, verdict.lag,
                  verdict.retention_left_s, now_ms)  # fmt: skip
        for name, value in zip(PARTITION_VERDICT_SCHEMA.names, values, strict=True):
            rows[name].append(value)
    judged = evaluate_group(group, verdicts)
    n = len(verdicts)
    rows["group_status"] = [judged.status] * n
    rows["group_complete"] = [float(judged.complete)] * n
    rows["group_total_lag"] = [int(judged.total_lag)] * n
    rows["group_partitions"] = [n] * n
    rows["group_head"] = [True] + [False] * (n - 1)
    return rows


@dataclass(frozen=True)
class Counters:
    """What a status run counts as it evaluates, so that it needs no Spark job of its own to
    count its input or its results (each a job planned and run every period: a third of a
    small run; benchmarks/RESULTS.md). Accumulators: exact as long as no stage is run twice,
    which the status job ensures by caching the partition verdicts it writes and groups.
    ``rows_read`` is None in a pass that counts its verdicts only."""

    rows_read: Accumulator[int] | None
    partitions: Accumulator[int]
    groups: Accumulator[int]

    @classmethod
    def of(cls, spark: SparkSession) -> Counters:
        context = spark.sparkContext
        return cls(context.accumulator(0), context.accumulator(0), context.accumulator(0))

    def read(self, rows: int) -> None:
        """``rows`` samples read."""
        if self.rows_read is not None:
            self.rows_read.add(rows)

    def judged(self, partitions: int) -> None:
        """One group judged, with its ``partitions`` verdicts."""
        self.partitions.add(partitions)
        self.groups.add(1)

    def release(self) -> None:
        """Forget these accumulators once their run is over (their values read). Why: pyspark's
        driver keeps every accumulator ever made in a registry of its own, and the worker
        keeps its Spark session for days, making three a status run; nothing else removes
        them. The executors' updates all reach the driver before a job returns, so none can
        arrive for them afterwards."""
        from pyspark import accumulators  # the registry is module state, not public API

        for accumulator in (self.rows_read, self.partitions, self.groups):
            if accumulator is not None:
                accumulators._accumulatorRegistry.pop(accumulator.aid, None)


# The order the per-group functions sort a group's samples in (``evaluate_group_samples``).
_SAMPLE_ORDER = [("topic", "ascending"), ("partition", "ascending"), ("ts_ms", "ascending")]


def _columns(table: pa.Table) -> dict[str, list[Any]]:
    """A group's sorted samples as the column lists ``evaluate_group_samples`` reads."""
    return {name: table.column(name).to_pylist() for name in _INPUT_COLUMNS}


def _group_evaluator(
    config: EvaluatorConfig,
    now_ms: int,
    per_cluster: Mapping[str, EvaluatorConfig] | None,
    counters: Counters | None,
    retention: TopicRetention | None,
) -> Callable[[pa.Table], pa.Table]:
    # Shipped to the executors with the function.
    per_cluster, retention = dict(per_cluster or {}), dict(retention or {})

    def evaluate(table: pa.Table) -> pa.Table:
        table = table.sort_by(_SAMPLE_ORDER)
        rows = evaluate_group_samples(
            _columns(table), config, now_ms, per_cluster, retention=retention
        )
        if counters is not None:
            counters.read(table.num_rows)
            counters.judged(len(rows["status"]))
        return pa.table(rows, schema=_VERDICT_ARROW_SCHEMA)

    return evaluate


def _whole_window_row(cluster: str, source: str, group: str, now_ms: int) -> pa.Table:
    """The one row of a group its slice could not tell: its key and ``whole``."""
    values = {"cluster": cluster, "source": source, "group": group, "topic": "", "partition": 0,
              "status": "", "complete": 0.0, "diagnosis": "[]", "reason": "", "lag": None,
              "retention_left_s": None, "evaluated_at_ms": now_ms, "group_status": "",
              "group_complete": 0.0, "group_total_lag": 0, "group_partitions": 0,
              "group_head": False,
              "whole": True}  # fmt: skip
    return pa.table({k: [v] for k, v in values.items()}, schema=_SLICE_ARROW_SCHEMA)


def _slice_evaluator(
    config: EvaluatorConfig,
    now_ms: int,
    per_cluster: Mapping[str, EvaluatorConfig] | None,
    counters: Counters | None,
    retention: TopicRetention | None,
) -> Callable[[pa.Table], pa.Table]:
    # Shipped to the executors with the function.
    per_cluster, retention = dict(per_cluster or {}), dict(retention or {})

    def evaluate(table: pa.Table) -> pa.Table:
        is_older = pc.is_valid(table.column("older_rows"))
        summary = table.filter(is_older)
        table = table.filter(pc.invert(is_older)).sort_by(_SAMPLE_ORDER)
        older = {
            (topic, part): Older(rows, latest)
            for topic, part, rows, latest in zip(
                *(summary.column(n).to_pylist() for n in ("topic", "partition", *_OLDER_COLUMNS)),
                strict=True,
            )
        }
        if counters is not None:
            counters.read(table.num_rows + sum(o.rows for o in older.values()))
        rows = None
        if table.num_rows:
            rows = evaluate_group_samples(
                _columns(table), config, now_ms, per_cluster, older, retention
            )
        if rows is None:
            key = table if table.num_rows else summary
            cluster, source, group = (key.column(n)[0].as_py() for n in GROUP_KEY)
            return _whole_window_row(cluster, source, group, now_ms)
        if counters is not None:
            counters.judged(len(rows["status"]))
        rows["whole"] = [False] * len(rows["status"])
        return pa.table(rows, schema=_SLICE_ARROW_SCHEMA)

    return evaluate


# ---------------------------------------------------------------------------------------------
# The transformation


def evaluate_verdicts(
    samples: DataFrame,
    now_ms: int,
    config: EvaluatorConfig,
    per_cluster: Mapping[str, EvaluatorConfig] | None = None,
    counters: Counters | None = None,
    retention: TopicRetention | None = None,
) -> DataFrame:
    """Every partition's verdict with its group's (``VERDICT_SCHEMA``) as of ``now_ms``: one
    lazy frame, which :func:`partition_verdicts` and :func:`group_verdicts` project. Persist
    it when both are written, or the groups are evaluated twice.

    ``counters``, if given, count the samples the evaluation reads (duplicates included) and
    the verdicts it makes, so the caller needs no Spark job of its own to count them.
    ``retention``: the topics' retention settings, for the evaluator's forecast.

    ``samples`` is the window the caller read (``read_samples``; duplicates of a key may be
    left in, they are dropped per group); each partition is judged on its own samples only.
    """
    return (
        samples.select(*_INPUT_COLUMNS)
        .groupBy(*GROUP_KEY)
        .applyInArrow(
            _group_evaluator(config, now_ms, per_cluster, counters, retention), VERDICT_SCHEMA
        )
    )


def evaluate_recent(
    samples: DataFrame,
    cut_ms: int,
    now_ms: int,
    config: EvaluatorConfig,
    per_cluster: Mapping[str, EvaluatorConfig] | None = None,
    counters: Counters | None = None,
    retention: TopicRetention | None = None,
) -> DataFrame:
    """:func:`evaluate_verdicts` from the window's recent slice (samples at or after
    ``cut_ms``), for every group whose rows the slice can tell (``SLICE_VERDICT_SCHEMA``,
    ``whole`` false); a group it cannot tell comes out as one row with ``whole`` true, to be
    judged from its whole window.

    Why: most partitions commit every poll, so their window (the last N commits) lies in the
    last minutes of an hour's look-back, and moving every sample of the hour to its group and
    through Python was most of the job (benchmarks/RESULTS.md). Only the slice moves whole;
    the older samples are summed up per partition where they are read (``Older``: a count and
    a maximum, aggregated before the shuffle), which is all the slice needs to know whether
    they could change a verdict (``evaluate_group_samples``). ``counters`` count every sample
    read, older ones included.
    """
    recent = samples.where(F.col("ts_ms") >= F.lit(cut_ms)).select(*_INPUT_COLUMNS)
    older = (
        samples.where(F.col("ts_ms") < F.lit(cut_ms))
        .groupBy(*PARTITION_KEY)
        .agg(
            F.count(F.lit(1)).alias("older_rows"),
            F.max(F.coalesce(F.col("commit_time_ms"), F.col("ts_ms"))).alias("older_max_ms"),
        )
    )
    return (
        recent.unionByName(older, allowMissingColumns=True)
        .groupBy(*GROUP_KEY)
        .applyInArrow(
            _slice_evaluator(config, now_ms, per_cluster, counters, retention),
            SLICE_VERDICT_SCHEMA,
        )
    )


def partition_verdicts(verdicts: DataFrame) -> DataFrame:
    """The partitions' table (``PARTITION_VERDICT_SCHEMA``) of :func:`evaluate_verdicts`."""
    return verdicts.select(*PARTITION_VERDICT_SCHEMA.names)


def group_verdicts(verdicts: DataFrame) -> DataFrame:
    """The groups' table (``GROUP_VERDICT_SCHEMA``) of :func:`evaluate_verdicts`: the row of
    each group's first partition carries it, so no shuffle is needed."""
    names = {_GROUP_COLUMNS.get(name, name): name for name in GROUP_VERDICT_SCHEMA.names}
    return verdicts.where(F.col("group_head")).select(
        *(F.col(column).alias(name) for column, name in names.items())
    )


def evaluate_status(
    samples: DataFrame,
    now_ms: int,
    config: EvaluatorConfig,
    per_cluster: Mapping[str, EvaluatorConfig] | None = None,
    counters: Counters | None = None,
    retention: TopicRetention | None = None,
) -> tuple[DataFrame, DataFrame]:
    """Partition verdicts and group verdicts (``PARTITION_VERDICT_SCHEMA``,
    ``GROUP_VERDICT_SCHEMA``) of every partition in ``samples`` as of ``now_ms``: the two
    projections of :func:`evaluate_verdicts`, each evaluating it when computed."""
    verdicts = evaluate_verdicts(samples, now_ms, config, per_cluster, counters, retention)
    return partition_verdicts(verdicts), group_verdicts(verdicts)
