"""The status job's incremental state: what each partition carries from one run to the next, so
that a run reads only the sample log since the previous run's cut (docs/SPARK_JOBS.md,
"Incremental runs").

**Why.** A run of the whole look-back moves every sample of the hour to its group and through
Python each time, while a partition's window changes by one poll between two runs; a run every
poll could not afford it (benchmarks/RESULTS.md). So each run writes, beside its results, a
``state/`` table: for each partition, the samples its verdicts may still need at the next run
and a summary of the older ones. The next run reads that table and the log from the cut on.

**What a partition carries.** Its samples from the row before its window's first commit on
(the window, the poll before it, the stale run and the run holding the last commit's offset
reach no further), as one row of lists (``s_<column>``, ``STATE_COLUMNS``:
``PARTITION_STATE_SCHEMA``), and what the samples before them amount to (``older_rows``,
``older_max_ms``, the latest commit time they could carry, and ``older_last_ms``, the newest of
them): the ``Older`` summary of the slice (``spark_jobs.status.evaluate_recent``). The state
table (``STATE_SCHEMA``) holds a group per row, its partitions' rows as one compressed Arrow IPC
stream: what the next run ships to the executors as it is (``Judge``). A partition whose window
reaches back to its first sample in the look-back (a stuck consumer, an idle topic) carries all
its samples: its window's first commit moves as the look-back does. Only samples before the
run's *cut* (``now − settle``) are carried: the run after reads the log again from the cut, so
that a cycle written a little after its poll time (the cycle's ``ts_ms`` is its slot's start,
written when its sources answered) is never missed.

**Why it is exact.** The next run judges each group from its carried samples (those still in
the look-back) and the log since the cut, with the summaries as the slice's older samples:
``evaluate_group_samples`` gives the whole window's rows or sends the group back to its whole
window (the slice's checks, ``_slice_holds`` and the group's owner changes), exactly as for the
slice. A summary whose newest sample left the look-back is dropped (the carried samples are
then the partition's whole look-back); one partly gone is kept, which only makes the checks
stricter (its maximum and count can only be smaller). Which samples are carried decides only
how often a group is sent back, never a verdict: ``carry`` picks them so that the checks hold
at the next run whenever they can. A run that has no usable state (none, one older than the
look-back, another evaluator config, look-back or settle time) reads the whole window and says
so (``whole_reason``). Checked: chained incremental runs over random histories against the
whole window's verdicts (``tests/spark_jobs/test_status_state.py``, ``test_jobs.py``).

Longer than 400 lines on purpose: the state's schema, the choice of what is carried, the
per-group functions that read and write it and the run's plan are one contract; split, they
would be modules that always change together.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from spark_jobs.evaluator import EvaluatorConfig, PartitionWindow
from spark_jobs.status import (
    _GROUP_COLUMNS,
    _GROUP_SOURCES,
    _INPUT_COLUMNS,
    _SAMPLE_ORDER,
    _VERDICT_ARROW_SCHEMA,
    GROUP_KEY,
    GROUP_VERDICT_SCHEMA,
    PARTITION_KEY,
    PARTITION_VERDICT_SCHEMA,
    VERDICT_SCHEMA,
    Counters,
    Older,
    TopicRetention,
    _columns,
    _partition_runs,
    evaluate_group_samples,
)
from spark_jobs.windows import (
    SHARE_WINDOW_COLUMNS,
    WINDOW_COLUMNS,
    commit_rows,
    first_holding,
    raw_commit_time,
)

__all__ = [
    "DEFAULT_SETTLE_MS",
    "JUDGED_SCHEMA",
    "PARTITION_STATE_SCHEMA",
    "STATE_ARROW_SCHEMA",
    "STATE_COLUMNS",
    "STATE_SCHEMA",
    "Judge",
    "StatePlan",
    "Summary",
    "carried",
    "carry",
    "explode_state",
    "fingerprint",
    "judge_group",
    "partition_states",
    "plan",
    "result_tables",
    "sent_back",
    "state_note",
    "unpack",
]

# A cycle's samples carry its slot's start as ``ts_ms`` and land in the log once its sources
# answered (at most a poll interval, the source deadline) or after a retry under the cluster's
# lease: a minute covers both, and the log since the cut is read again by every run.
DEFAULT_SETTLE_MS = 60_000
# What a partition carries per sample: what its window and its group's inputs are made of.
STATE_COLUMNS = ("owner", *WINDOW_COLUMNS)
_SUMMARY_COLUMNS = ("older_rows", "older_max_ms", "older_last_ms")
# The state table: one row per group, its partitions' rows (``PARTITION_STATE_SCHEMA``) as one
# compressed Arrow IPC stream (``state``), with how many partitions and samples it holds.
STATE_SCHEMA = T.StructType(
    [
        *(T.StructField(k, T.StringType(), False) for k in GROUP_KEY),
        T.StructField("partitions", T.LongType(), False),
        T.StructField("samples", T.LongType(), False),
        T.StructField("state", T.BinaryType(), False),
    ]
)
STATE_ARROW_SCHEMA = pa.schema(
    [
        *(pa.field(k, pa.string(), False) for k in GROUP_KEY),
        pa.field("partitions", pa.int64(), False),
        pa.field("samples", pa.int64(), False),
        pa.field("state", pa.binary(), False),
    ]
)
# What the per-group functions return: a partition's verdict (``VERDICT_SCHEMA``), whether its
# group must be judged from its whole window instead (one row, ``whole``), and on the group's
# first row its state (``STATE_SCHEMA``'s last three columns).
JUDGED_SCHEMA = T.StructType(
    [
        *VERDICT_SCHEMA.fields,
        T.StructField("whole", T.BooleanType(), False),
        *(T.StructField(f.name, f.dataType, True) for f in STATE_SCHEMA.fields[3:]),
    ]
)
_ARROW_SAMPLE_TYPES = {
    "ts_ms": pa.int64(), "committed": pa.int64(), "earliest": pa.int64(), "latest": pa.int64(),
    "lag": pa.int64(), "time_lag_s": pa.float64(), "commit_time_ms": pa.int64(),
    "commit_version": pa.int64(), "owner": pa.string(), "topology_id": pa.string(),
    "alive": pa.bool_(), "pending": pa.int64(), "failed": pa.int64(), "acked": pa.int64(),
    "stale": pa.bool_(), "max_spout_pending": pa.int64(), "spout_pending": pa.int64(),
    "smallest_failed_offset": pa.int64(), "share": pa.bool_(), "lag_upper_bound": pa.bool_(),
    **dict.fromkeys(SHARE_WINDOW_COLUMNS, pa.int64()),
}  # fmt: skip
_KEY_TYPES = {k: pa.int32() if k == "partition" else pa.string() for k in PARTITION_KEY}
# The samples' columns as Spark hands them to the per-group functions.
_INPUT_TYPES = {**_KEY_TYPES, **_ARROW_SAMPLE_TYPES}
_EMPTY_SAMPLES = pa.schema(
    [pa.field(k, _KEY_TYPES[k]) for k in PARTITION_KEY]
    + [pa.field(n, _ARROW_SAMPLE_TYPES[n]) for n in STATE_COLUMNS]
).empty_table()
# A partition's state: its carried samples as lists, and the summary of the older ones.
PARTITION_STATE_SCHEMA = pa.schema(
    [pa.field(k, _KEY_TYPES[k]) for k in PARTITION_KEY]
    + [pa.field(f"s_{n}", pa.list_(_ARROW_SAMPLE_TYPES[n])) for n in STATE_COLUMNS]
    + [pa.field(n, pa.int64()) for n in _SUMMARY_COLUMNS]
)
# What ``judge_group`` returns: the verdicts and, on each partition's row, its state.
_JUDGED_ARROW_SCHEMA = pa.schema(
    [
        *_VERDICT_ARROW_SCHEMA,
        pa.field("whole", pa.bool_(), False),
        *list(PARTITION_STATE_SCHEMA)[5:],
    ]
)
# What the Spark functions return (``JUDGED_SCHEMA``).
_SHIPPED_ARROW_SCHEMA = pa.schema(
    [
        *_VERDICT_ARROW_SCHEMA,
        pa.field("whole", pa.bool_(), False),
        pa.field("partitions", pa.int64()),
        pa.field("samples", pa.int64()),
        pa.field("state", pa.binary()),
    ]
)


class Summary(NamedTuple):
    """What a partition's samples before its carried ones amount to: how many, the latest
    commit time any of them could carry (``Older``), and the newest one's poll time (once it
    leaves the look-back, so have all of them)."""

    rows: int
    max_time_ms: int
    last_ms: int


# ---------------------------------------------------------------------------------------------
# What a partition carries (plain Python)


def _needed_from(
    samples: Mapping[str, Sequence[Any]], window: PartitionWindow, config: EvaluatorConfig
) -> int:
    """The first sample the next run's checks need (``_slice_holds``), 0 for all of them: the
    one before the window's first commit, the stale run's and the lag's last fresh sample,
    and the one before the run of samples holding the last commit's offset. A window short
    of its commits may fill from older ones: all."""
    ts = samples["ts_ms"]
    since = len(ts) - (window.polls or len(ts))
    if since < 1 or len(window.commits) < config.window:
        return 0
    held = first_holding(samples["committed"], window.commits[-1].offset)
    fresh = _last(samples["stale"], lambda stale: not stale)
    known = _last(samples["lag"], lambda lag: lag is not None)
    if fresh is None or known is None:
        return 0
    return max(0, min(since - 1, held - 1, fresh, known))


def _last(values: Sequence[Any], wanted: Callable[[Any], bool]) -> int | None:
    return next((i for i in range(len(values) - 1, -1, -1) if wanted(values[i])), None)


def _before_group_window(
    stale: Sequence[bool], ts: Sequence[int], k: int, first_commit_ms: int
) -> int:
    """The largest start at or before ``k`` whose first fresh sample is older than every
    window of the group (an owner change the summary hides then counts for none of them);
    0 when there is none."""
    first = next((i for i in range(k, len(ts)) if not stale[i]), None)
    if first is not None and ts[first] < first_commit_ms:
        return k
    return next((i for i in range(k - 1, 0, -1) if not stale[i] and ts[i] < first_commit_ms), 0)


def _older_max(samples: Mapping[str, Sequence[Any]], k: int, older: Summary | None) -> int:
    """The latest commit time samples ``[0, k)`` and what precedes them could carry."""
    latest = max(raw_commit_time(samples, i) for i in range(k))
    return latest if older is None else max(latest, older.max_time_ms)


def _clamp_holds(samples: Mapping[str, Sequence[Any]], k: int, older: Summary | None) -> bool:
    """No older commit time would raise the first commit after sample ``k`` (the clamp)."""
    first = next(commit_rows(samples, k + 1), None)
    if first is None:
        return False
    bound = max(_older_max(samples, k, older), raw_commit_time(samples, k))
    return raw_commit_time(samples, first) >= bound


def carry(
    samples: Mapping[str, Sequence[Any]],
    window: PartitionWindow,
    older: Summary | None,
    cut_ms: int,
    config: EvaluatorConfig,
    first_commit_ms: int | None,
) -> tuple[int, int, Summary | None]:
    """What one partition carries to the next run: its samples ``[k, j)`` (``j``: the first
    at or after the cut, which the next run reads from the log again) and the summary of
    everything before ``k``.

    ``samples`` are all it has now (carried and read), ``window`` the one they made, ``older``
    the summary it came with, ``first_commit_ms`` the earliest first commit of its group's
    windows (Kafka and ZooKeeper groups, whose owner changes count; None otherwise). ``k`` is
    as late as the next run's checks allow; where they cannot hold (a window short of its
    commits, an older commit time the clamp would reach), everything is carried.
    """
    ts = samples["ts_ms"]
    j = bisect.bisect_left(ts, cut_ms)
    k = min(_needed_from(samples, window, config), j)
    if first_commit_ms is not None and (k > 0 or older is not None):
        k = _before_group_window(samples["stale"], ts, k, first_commit_ms)
    if k > 0 and not _clamp_holds(samples, k, older):
        k = 0
    if k == 0:
        return 0, j, older
    rows = k + (older.rows if older is not None else 0)
    return k, j, Summary(rows, _older_max(samples, k, older), ts[k - 1])


# ---------------------------------------------------------------------------------------------
# One group, from its samples and state (Arrow in, Arrow out; the Spark functions below)


def _sorted_unique(table: pa.Table) -> pa.Table:
    """Sorted by (topic, partition, ts_ms) without repeats of a key (the same sample twice:
    an hour being compacted), in Arrow, so that the rows are the lists' positions."""
    table = table.sort_by(_SAMPLE_ORDER)
    if table.num_rows < 2:
        return table
    same = None
    for name in ("ts_ms", "partition", "topic"):
        column = table.column(name)
        equal = pc.equal(column.slice(1), column.slice(0, table.num_rows - 1))
        same = equal if same is None else pc.and_(same, equal)
    keep = pa.concat_arrays([pa.array([True]), pc.invert(same).combine_chunks()])
    return table if pc.all(keep).as_py() else table.filter(keep)


def _state_arrays(
    table: pa.Table, ranges: Sequence[tuple[int, int]], summaries: Sequence[Summary | None]
) -> dict[str, pa.Array]:
    """Each partition's carried samples (rows ``[a, b)`` of ``table``) as one row of lists."""
    offsets = [0]
    index: list[int] = []
    for a, b in ranges:
        index.extend(range(a, b))
        offsets.append(len(index))
    carried = table.select(list(STATE_COLUMNS)).take(pa.array(index, pa.int64()))
    starts = pa.array(offsets, pa.int32())
    out = {
        f"s_{name}": pa.ListArray.from_arrays(
            starts, carried.column(name).combine_chunks().cast(_ARROW_SAMPLE_TYPES[name])
        )
        for name in STATE_COLUMNS
    }
    for position, name in enumerate(_SUMMARY_COLUMNS):
        out[name] = pa.array(
            [s[position] if s is not None else None for s in summaries], pa.int64()
        )
    return out


def judge_group(
    table: pa.Table,
    summaries: Mapping[tuple[str, int], Summary],
    start_ms: int,
    cut_ms: int,
    now_ms: int,
    config: EvaluatorConfig,
    per_cluster: Mapping[str, EvaluatorConfig] | None = None,
    retention: TopicRetention | None = None,
) -> pa.Table | None:
    """One group's verdict rows (``VERDICT_SCHEMA``'s columns, ``whole`` false), each with its
    partition's state (``PARTITION_STATE_SCHEMA``'s lists and summary), from its samples
    (``table``: carried and read, any order, duplicates allowed) and its partitions'
    summaries; None when its samples cannot tell the rows the whole look-back gives (the
    caller then judges its whole window). Samples before ``start_ms`` (the look-back's start)
    and summaries wholly before it are left out; no summaries: ``table``
    is the group's whole look-back.
    """
    if table.num_rows and per_cluster:
        # Nothing before the cluster's history started over is carried or read (a cluster
        # rebuilt under the same name): as if the look-back began there, so the group is
        # judged from its new samples, not sent back to a window that holds no more.
        cluster = table.column("cluster")[0].as_py()
        start_ms = max(start_ms, per_cluster.get(cluster, config).history_from_ms)
    table = _sorted_unique(table.filter(pc.greater_equal(table.column("ts_ms"), start_ms)))
    summaries = {key: s for key, s in summaries.items() if s.last_ms >= start_ms}
    if table.num_rows == 0:
        return None if summaries else _JUDGED_ARROW_SCHEMA.empty_table()
    cols = _columns(table)
    older = {key: Older(s.rows, s.max_time_ms) for key, s in summaries.items()}
    seen: list[tuple[Mapping[str, Sequence[Any]], PartitionWindow]] = []
    rows = evaluate_group_samples(
        cols, config, now_ms, per_cluster, older or None, retention, windows=seen
    )
    if rows is None:
        return None
    if per_cluster:
        config = per_cluster.get(cols["cluster"][0], config)
    first_commit_ms = None
    if cols["source"][0] in _GROUP_SOURCES:
        first_commit_ms = min(window.commits[0].timestamp_ms for _, window in seen)
    ranges, carried = [], []
    runs = _partition_runs(cols["topic"], cols["partition"])
    for (a, _), (samples, window) in zip(runs, seen, strict=True):
        before = summaries.get((cols["topic"][a], cols["partition"][a]))
        k, j, summary = carry(samples, window, before, cut_ms, config, first_commit_ms)
        ranges.append((a + k, a + j))
        carried.append(summary)
    rows["whole"] = [False] * len(rows["status"])
    columns: dict[str, Any] = dict(rows)
    columns.update(_state_arrays(table, ranges, carried))
    return pa.table(columns, schema=_JUDGED_ARROW_SCHEMA)


def explode_state(
    state: pa.Table | None,
) -> tuple[pa.Table, dict[tuple[str, int], Summary]]:
    """Partition states (``PARTITION_STATE_SCHEMA``) back into sample rows, and their
    summaries."""
    if state is None:
        return _EMPTY_SAMPLES, {}
    lists = state.column("s_ts_ms").combine_chunks()
    parents = pc.list_parent_indices(lists)
    columns = {key: state.column(key).combine_chunks().take(parents) for key in PARTITION_KEY}
    for name in STATE_COLUMNS:
        columns[name] = pc.list_flatten(state.column(f"s_{name}").combine_chunks())
    summaries = {
        (topic, part): Summary(rows, latest, last)
        for topic, part, rows, latest, last in zip(
            *(state.column(n).to_pylist() for n in ("topic", "partition", *_SUMMARY_COLUMNS)),
            strict=True,
        )
        if rows is not None
    }
    return pa.table(columns), summaries


def _whole_row(key: Sequence[Any], now_ms: int) -> pa.Table:
    """The one row of a group that must be judged from its whole window: its key, ``whole``."""
    row = dict.fromkeys(_SHIPPED_ARROW_SCHEMA.names)
    row.update(dict(zip(GROUP_KEY, key, strict=True)))
    row.update(topic="", partition=0, status="", complete=0.0, diagnosis="[]", reason="",
               evaluated_at_ms=now_ms, group_status="", group_complete=0.0, group_total_lag=0,
               group_partitions=0, group_head=False, whole=True)  # fmt: skip
    return pa.Table.from_pylist([row], schema=_SHIPPED_ARROW_SCHEMA)


def partition_states(judged: pa.Table) -> pa.Table:
    """The partitions' state rows (``PARTITION_STATE_SCHEMA``) of ``judge_group``'s rows:
    those carrying something."""
    carrying = pc.or_(
        pc.greater(pc.list_value_length(judged.column("s_ts_ms")), 0),
        pc.is_valid(judged.column("older_rows")),
    )
    return judged.filter(carrying).select(PARTITION_STATE_SCHEMA.names)


def _packed(judged: pa.Table) -> pa.Table:
    """``judge_group``'s rows as the Spark functions return them: the group's state as one
    compressed IPC stream on its first row (a group whose samples all left the look-back:
    no rows)."""
    if judged.num_rows == 0:
        return _SHIPPED_ARROW_SCHEMA.empty_table()
    states = partition_states(judged)
    columns = {name: judged.column(name) for name in (*_VERDICT_ARROW_SCHEMA.names, "whole")}
    pad = [None] * (judged.num_rows - 1)
    carried = pc.sum(pc.list_value_length(states.column("s_ts_ms"))).as_py() or 0
    columns["partitions"] = pa.array([states.num_rows, *pad], pa.int64())
    columns["samples"] = pa.array([carried, *pad], pa.int64())
    columns["state"] = pa.array([_ipc(states) if states.num_rows else None, *pad], pa.binary())
    return pa.table(columns, schema=_SHIPPED_ARROW_SCHEMA)


# ---------------------------------------------------------------------------------------------
# On Spark


@dataclasses.dataclass(frozen=True)
class Judge:
    """One run's judging of groups on Spark, its results collected on the driver (Arrow).

    **Why the state is broadcast and the results collected**, not shuffled and written by
    Spark: a run every poll is mostly fixed costs, and each Spark job is one (a stage, a
    commit protocol). The previous run's state goes to the executors as a broadcast (one
    Arrow table per group, a few MB) instead of through the shuffle with the samples, and the
    verdicts and the new state (10,000 partitions: a few MB) come back to the driver, which
    writes the run's tables itself (``spark_jobs.jobs``): one Spark job a run, which reads
    the log since the previous cut and moves only those samples.
    """

    start_ms: int
    cut_ms: int
    now_ms: int
    config: EvaluatorConfig
    per_cluster: Mapping[str, EvaluatorConfig]
    retention: TopicRetention
    counters: Counters | None = None

    def whole(self, samples: DataFrame) -> pa.Table:
        """Every group of ``samples`` (its whole look-back) judged, with the state its
        partitions carry to the next run (``JUDGED_SCHEMA``, ``whole`` false): a run without
        usable state, and the groups an incremental run sends back."""
        function = _whole_function(self)
        return (
            samples.select(*_INPUT_COLUMNS)
            .groupBy(*GROUP_KEY)
            .applyInArrow(function, JUDGED_SCHEMA)
            .toArrow()
        )

    def incremental(self, spark: SparkSession, samples: DataFrame, state: pa.Table) -> pa.Table:
        """Every group of ``samples`` (the log since the previous cut) or of ``state`` (the
        previous run's) judged from both, with the state to carry on; a group they cannot
        tell comes out as one row with ``whole`` true (:func:`sent_back`), to be judged by
        :meth:`whole` from its whole window.

        A group only in the state (its partitions no longer polled) has no sample for Spark
        to group: the driver judges it with the same function, from its state alone, rather
        than adding every state group's key to the samples (a union that cost a run a fifth
        of a second at 10,000 partitions; benchmarks/RESULTS.md). A group missing from
        Spark's rows had no sample since the cut, or none its cluster's history start kept;
        judged from its state alone, it gets the rows those samples would have given it."""
        by_group = _by_group(state)
        shipped = spark.sparkContext.broadcast(by_group)
        try:
            judged = (
                samples.select(*_INPUT_COLUMNS)
                .groupBy(*GROUP_KEY)
                .applyInArrow(_incremental_function(self, shipped), JUDGED_SCHEMA)
                .toArrow()
            )
        finally:
            shipped.destroy()
        seen = set(zip(*(judged.column(k).to_pylist() for k in GROUP_KEY), strict=True))
        only_state = [key for key in by_group if key not in seen]
        if not only_state:
            return judged
        function = _incremental_function(self, _Kept(by_group))
        rest = [function(_key_row(key)).cast(judged.schema) for key in only_state]
        return pa.concat_tables([judged, *rest])

    def counted(self, read: int, judged: pa.Table | None) -> None:
        if self.counters is not None:
            self.counters.read(read)
            if judged is not None:
                self.counters.judged(judged.num_rows)


class _Kept(NamedTuple):
    """The broadcast's stand-in on the driver: what the per-group function reads (``value``)."""

    value: Mapping[tuple[str, ...], bytes]


def _key_row(key: Sequence[str]) -> pa.Table:
    """What Spark would hand the per-group function for a group without samples: its key and
    nothing else (``ts_ms`` null), in the samples' columns."""
    schema = pa.schema([pa.field(n, _INPUT_TYPES[n]) for n in _INPUT_COLUMNS])
    return pa.Table.from_pylist([dict(zip(GROUP_KEY, key, strict=True))], schema=schema)


def _by_group(state: pa.Table) -> dict[tuple[str, ...], bytes]:
    """The state table's groups (``STATE_SCHEMA``) by key: what the broadcast ships."""
    columns = (state.column(name).to_pylist() for name in (*GROUP_KEY, "state"))
    return {(c, s, g): blob for c, s, g, blob in zip(*columns, strict=True)}


def _ipc(table: pa.Table) -> bytes:
    """A group's partition states as one Arrow IPC stream, compressed (LZ4: a tenth of the
    size, and decompressed faster than the lists are read)."""
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    with pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def unpack(data: bytes | None) -> pa.Table | None:
    """A group's partition states (``PARTITION_STATE_SCHEMA``) from its ``state`` blob."""
    return None if data is None else pa.ipc.open_stream(data).read_all()


def _incremental_function(judge: Judge, shipped: Any) -> Callable[[pa.Table], pa.Table]:
    def evaluate(table: pa.Table) -> pa.Table:
        key = tuple(table.column(k)[0].as_py() for k in GROUP_KEY)
        read = table.filter(pc.is_valid(table.column("ts_ms"))).select(list(_INPUT_COLUMNS))
        carried, summaries = explode_state(unpack(shipped.value.get(key)))
        samples = pa.concat_tables([read, carried.select(read.column_names).cast(read.schema)])
        judged = judge_group(samples, summaries, judge.start_ms, judge.cut_ms, judge.now_ms,
                             judge.config, judge.per_cluster, judge.retention)  # fmt: skip
        judge.counted(read.num_rows, judged)
        return _packed(judged) if judged is not None else _whole_row(key, judge.now_ms)

    return evaluate


def _whole_function(judge: Judge) -> Callable[[pa.Table], pa.Table]:
    def evaluate(table: pa.Table) -> pa.Table:
        judged = judge_group(table, {}, judge.start_ms, judge.cut_ms, judge.now_ms,
                             judge.config, judge.per_cluster, judge.retention)  # fmt: skip
        assert judged is not None  # without summaries every group is judged
        judge.counted(table.num_rows, judged)
        return _packed(judged)

    return evaluate


def sent_back(judged: pa.Table) -> list[tuple[str, ...]]:
    """The keys of the groups an incremental run could not tell (``whole``)."""
    whole = judged.filter(judged.column("whole"))
    return list(zip(*(whole.column(k).to_pylist() for k in GROUP_KEY), strict=True))


def result_tables(judged: pa.Table) -> dict[str, pa.Table]:
    """A run's tables from its judged rows (none ``whole``): the partitions' verdicts
    (``PARTITION_VERDICT_SCHEMA``), the groups' (``GROUP_VERDICT_SCHEMA``: the row of each
    group's first partition carries it) and the state (``STATE_SCHEMA``: the groups carrying
    something)."""
    groups = judged.filter(judged.column("group_head"))
    renamed = {_GROUP_COLUMNS.get(name, name): name for name in GROUP_VERDICT_SCHEMA.names}
    carrying = groups.filter(pc.is_valid(groups.column("state")))
    return {
        "partitions": judged.select(PARTITION_VERDICT_SCHEMA.names),
        "groups": pa.table({name: groups.column(column) for column, name in renamed.items()}),
        "state": carrying.select(STATE_SCHEMA.names).cast(STATE_ARROW_SCHEMA),
    }


def carried(state: pa.Table) -> dict[str, int]:
    """What a state table (``STATE_SCHEMA``) carries: groups, partitions, samples."""
    return {
        "groups": state.num_rows,
        "partitions": pc.sum(state.column("partitions")).as_py() or 0,
        "samples": pc.sum(state.column("samples")).as_py() or 0,
    }


# ---------------------------------------------------------------------------------------------
# Whether a run can go on from the previous one


def fingerprint(config: EvaluatorConfig, per_cluster: Mapping[str, EvaluatorConfig] | None) -> str:
    """The thresholds a state was made under: another one (a cluster's, the deployment's)
    and the next run reads the whole window, since what was carried was chosen for them."""
    doc = {
        # What a partition carries: a state written with other columns cannot be read on.
        "columns": STATE_COLUMNS,
        "config": _thresholds(config),
        "per_cluster": {k: _thresholds(v) for k, v in sorted((per_cluster or {}).items())},
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def _thresholds(config: EvaluatorConfig) -> dict[str, Any]:
    """A config's thresholds, without the history start: a cluster rebuilt under the same
    name keeps the state, whose samples before the start ``judge_group`` leaves out."""
    doc = dataclasses.asdict(config)
    doc.pop("history_from_ms")
    return doc


class StatePlan(NamedTuple):
    """How a status run reads: from the previous run's state and the log since its cut
    (``state_url`` set), or the whole window (``whole_reason`` says why)."""

    cut_ms: int  # this run's cut: what it carries is older
    state_url: str | None
    read_from_ms: int  # the log is read from here
    whole_reason: str | None

    def summary(self) -> dict[str, Any]:
        """What the run's ``_SUCCESS`` summary says of it."""
        return {"mode": "whole" if self.state_url is None else "incremental",
                "whole_reason": self.whole_reason, "read_from_ms": self.read_from_ms,
                "cut_ms": self.cut_ms}  # fmt: skip


def plan(
    previous: Mapping[str, Any] | None,
    previous_url: str | None,
    now_ms: int,
    window_ms: int,
    settle_ms: int,
    prints: str,
) -> StatePlan:
    """Whether this run goes on from the previous run's state (its ``_SUCCESS`` summary
    ``previous``, its directory ``previous_url``): only if that run wrote one under the same
    look-back, settle time and thresholds (``prints``: :func:`fingerprint`) and its cut lies
    within this run's look-back and not after its ``now``."""
    start_ms = now_ms - window_ms
    cut_ms = now_ms + 1 - settle_ms
    state = (previous or {}).get("state")

    def whole(reason: str) -> StatePlan:
        return StatePlan(cut_ms, None, start_ms, reason)

    if previous is None or previous_url is None:
        return whole("no previous run")
    if not isinstance(previous.get("now_ms"), int) or previous["now_ms"] >= now_ms:
        return whole("the previous run is not older than this one")
    if not isinstance(state, Mapping):
        return whole("the previous run carried no state")
    if (state.get("window_ms"), state.get("settle_ms")) != (window_ms, settle_ms):
        return whole("another look-back or settle time")
    if state.get("fingerprint") != prints:
        return whole("other evaluator thresholds")
    previous_cut = state.get("cut_ms")
    if not isinstance(previous_cut, int) or previous_cut < start_ms:
        return whole("the state is older than the look-back")
    if previous_cut > cut_ms:
        return whole("the previous run's cut is after this run's")
    return StatePlan(cut_ms, f"{previous_url}/state", previous_cut, None)


def state_note(plan_: StatePlan, window_ms: int, settle_ms: int, prints: str) -> dict[str, Any]:
    """The state's part of the run's ``_SUCCESS`` summary, which the next run's :func:`plan`
    reads."""
    return {"cut_ms": plan_.cut_ms, "window_ms": window_ms, "settle_ms": settle_ms,
            "fingerprint": prints}  # fmt: skip
