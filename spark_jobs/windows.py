"""From a partition's samples to the evaluator's window (SPEC §4, §6): plain Python, no Spark.

Apart from ``status`` (which runs it on Spark) because this is where the sample log's polls
become the commits, broker offsets and evidence the rules read, and every choice below changes
a verdict; the benchmark's single-process baseline and the tests call it without a session.

**From samples to a window of commits.** The log holds polls, not commits. A new commit is seen
where, from one sample of a partition to the next:

- the committed offset changed, or
- the source's commit time (``commit_time_ms``: the ``__consumer_offsets`` record timestamp,
  the znode ``mtime``) changed, or its commit counter (``commit_version``: the znode version)
  moved, both only when known at both samples. A consumer re-committing the same offset is
  then a commit at the same offset, which is what Burrow's STALL (rule 6) looks at. Where
  neither is known (Kafka's AdminClient gives offsets only) an unchanged offset is invisible,
  and liveness (the owner) is what tells STALL from STOP; or
- the partition is a share group's (``share``, KIP-932) and a member holds it (``alive``):
  a queue commits nothing, its start offset is the broker's word at every poll, and while
  members work on the queue each poll is their re-commit of it, as an auto-committing
  consumer re-commits its position. A start offset held by a record delivered again and
  again is then commits at one offset (STALL), while a queue whose members are gone gets no
  re-commit, its next move overdue (STOP), as a dead consumer's commit.

The first sample of a partition is its first commit. A commit's time is the best known
(SPEC §4): ``commit_time_ms`` when the source gave it, else the ``ts_ms`` of the poll that first
saw it. Times never go backwards (a commit time older than the previous commit's is raised to
it): the rules measure spans between commits. A commit older than the cluster's history start
(``config.history_from_ms``, a cluster rebuilt under the same name) is no evidence, even when a
poll after the start still shows it (a spout's offset in ZooKeeper not yet corrected): the
evaluator leaves it out.
The lag and the log's start and end offsets at a commit are the sample's (a commit beyond the
end of a re-created log shows there).
``build_window`` then keeps the last ``config.window`` commits (``min_distance_s``
applied), and the rest of the evidence comes from the samples since the one that first saw the
window's first commit: the spout's pending/failed/acked series and the topology ids.

**The spout's settings and task figures** come from the same samples: ``max_spout_pending`` is
the latest value the window's samples give (a setting: the newest is the one in force, and a
push without it says nothing about it), ``spout_pending`` the task's tuples in flight at each
of them (what the cap counts, for BACKPRESSURE), and ``smallest_failed_offset`` the latest
the spout named: a failed tuple leaves the failed set each time it is re-emitted, so the last
sample alone would often miss the poison message POISON_MESSAGE must name.

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

**The retention forecast's figures** go with the window too: the last sample's time lag (the
age of the oldest unconsumed message) and the topic's retention settings, which the caller
reads from the database (``RetentionSettings``); the evaluator forecasts and decides
RETENTION_RISK.

**Whether the figures are current** is the evaluator's decision, not this module's: the
window carries the times it needs, the polls that watched it (and the one before:
``poll_times_ms``, whose spacing is the poll interval and whose last is the newest sample) and
the polls since the committed offset was last reached (or since its commit time, if earlier)
that found the source down (``down_polls_ms``). From them the evaluator tells a gap in
collection and the grace after an outage (docs/EVALUATOR.md, ``stale_gap`` and
``source_down_since_commit``).

The current figures (``latest``, ``earliest``, lag, owner, staleness) are the last sample's;
a stale last sample has no broker offsets, so its lag is the last one known (the evaluator
reports it as such), and a partition whose lag was never known in the samples is judged with
lag 0, since nothing shows messages waiting.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from spark_jobs.evaluator import Commit, EvaluatorConfig, PartitionWindow, SpoutSeries, build_window

__all__ = [
    "WINDOW_COLUMNS",
    "RetentionSettings",
    "commit_rows",
    "derive_commits",
    "first_holding",
    "group_rebalances",
    "partition_id",
    "raw_commit_time",
    "window_from_samples",
]

# The sample columns a window is built from (the key columns come along).
WINDOW_COLUMNS = (
    "ts_ms", "committed", "earliest", "latest", "lag", "commit_time_ms", "commit_version",
    "topology_id", "alive", "pending", "failed", "acked", "stale", "max_spout_pending",
    "spout_pending", "smallest_failed_offset", "time_lag_s", "share", "lag_upper_bound",
    # What __share_group_state says of a share-partition (the newest poll's, for its
    # POISON_MESSAGE): ``PartitionWindow``'s fields of the same names.
    "share_redelivered_offset", "share_redelivered_count", "share_archived_offset",
    "share_archived_count", "share_archived_ms", "share_delivery_limit",
)  # fmt: skip
SHARE_WINDOW_COLUMNS = WINDOW_COLUMNS[WINDOW_COLUMNS.index("share_redelivered_offset") :]


class RetentionSettings(NamedTuple):
    """A topic's retention settings as the store keeps them (``TopicConfig``: DescribeConfigs,
    re-read every few minutes), for the evaluator's retention forecast. Not in the sample log:
    three columns on every sample for values that change a few times a year; the caller reads
    them from the database and hands them to the job."""

    retention_ms: int | None
    cleanup_policy: str | None


def partition_id(cluster: str, source: str, group: str, topic: str, partition: int) -> str:
    """The verdict id of a partition: unique across clusters, sources and groups."""
    return f"{cluster}/{source}/{group}/{topic}/{partition}"


def _new_commit(previous: Any, current: Any) -> bool:
    """A source-given commit marker (time, version) moved; unknown on either side says nothing."""
    return previous is not None and current is not None and previous != current


def commit_rows(samples: Mapping[str, Sequence[Any]], start: int = 0) -> Iterator[int]:
    """Indices (from ``start``) of the samples that see a new commit: the first sample, and
    every one whose offset, commit time or commit version moved from the sample before
    (``_new_commit``, inlined: this runs over every sample of every window)."""
    offsets = samples["committed"]
    times = samples["commit_time_ms"]
    versions = samples["commit_version"]
    if start == 0 and len(offsets):
        yield 0
    lo = max(start, 1)
    share = samples.get("share")
    if share is not None and any(share[lo:]):
        alive = samples["alive"]
        for i in range(lo, len(offsets)):
            if (share[i] and alive[i]) or _moved(samples, i):
                yield i
        return
    pairs = zip(
        range(lo, len(offsets)),
        offsets[lo - 1 :], offsets[lo:], times[lo - 1 :], times[lo:],
        versions[lo - 1 :], versions[lo:], strict=False,
    )  # fmt: skip
    for i, o0, o1, t0, t1, v0, v1 in pairs:
        if (
            o1 != o0
            or (t0 is not None and t1 is not None and t0 != t1)
            or (v0 is not None and v1 is not None and v0 != v1)
        ):
            yield i


def _moved(samples: Mapping[str, Sequence[Any]], i: int) -> bool:
    """Sample ``i`` sees a new commit by offset, time or version (``commit_rows``' test)."""
    o0, o1 = samples["committed"][i - 1], samples["committed"][i]
    t0, t1 = samples["commit_time_ms"][i - 1], samples["commit_time_ms"][i]
    v0, v1 = samples["commit_version"][i - 1], samples["commit_version"][i]
    return o1 != o0 or _new_commit(t0, t1) or _new_commit(v0, v1)


def raw_commit_time(samples: Mapping[str, Sequence[Any]], i: int) -> int:
    """The time of the commit sample ``i`` sees, before the never-backwards clamp: the
    source's commit time, else the poll's."""
    at = samples["commit_time_ms"][i]
    return at if at is not None else samples["ts_ms"][i]


def _seen_commits(samples: Mapping[str, Sequence[Any]]) -> list[tuple[int, Commit]]:
    """The commits seen in one partition's samples, each with the index of the sample that
    first saw it."""
    offsets = samples["committed"]
    seen: list[tuple[int, Commit]] = []
    for i in commit_rows(samples):
        offset = offsets[i]
        at = raw_commit_time(samples, i)
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


def first_holding(committed: Sequence[int], offset: int) -> int:
    """The first of the trailing samples that hold ``offset`` as the committed offset: where
    the committed offset was last reached."""
    if committed and committed[0] == offset and committed.count(offset) == len(committed):
        return 0  # a stuck consumer's whole look-back: counted in C
    first = len(committed) - 1
    while first > 0 and committed[first - 1] == offset:
        first -= 1
    return first


_KNOWN = functools.partial(operator.is_not, None)


def _present(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(filter(_KNOWN, values))


def _last_known(values: Sequence[Any]) -> Any:
    for value in reversed(values):
        if value is not None:
            return value
    return None


def _trailing(values: Sequence[Any], value: bool) -> int:
    """How many of the newest values in a row are ``value`` (None is neither)."""
    count = 0
    for v in reversed(values):
        if v is None or bool(v) is not value:
            break
        count += 1
    return count


def window_from_samples(
    pid: str,
    samples: Mapping[str, Sequence[Any]],
    config: EvaluatorConfig,
    topics: Sequence[str] = (),
    rebalances_ms: Sequence[int] = (),
    rebalancing: bool | None = None,
    retention: RetentionSettings | None = None,
) -> PartitionWindow:
    """The evaluator's input for one partition, from its samples (oldest first, non-empty).

    ``topics`` are the topics seen under the partition's spout path (Storm only), for
    SPOUT_ID_COLLISION; ``rebalances_ms`` and ``rebalancing`` are its group's, as
    ``evaluate_status`` derives them from the owners (module docstring); ``retention`` is its
    topic's settings (None: unknown), which go with the last sample's time lag for the
    evaluator's retention forecast.
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
    # A cap of 0 is no cap Storm knows (null is "unbounded"): not evidence of back-pressure.
    cap = _last_known([c if c is not None and c > 0 else None for c in recent("max_spout_pending")])
    topology_ids: list[str] = []
    for topology in _present(recent("topology_id")):
        if not topology_ids or topology_ids[-1] != topology:
            topology_ids.append(topology)

    last = len(ts) - 1
    stale = bool(samples["stale"][last])
    # The first of the newest run of stale polls.
    stale_since = ts[len(ts) - _trailing(samples["stale"], True)] if stale else None
    lag = samples["lag"][last]
    if lag is None:  # no broker offsets at the last poll: the last known figure
        lag = _last_known(samples["lag"])
    polls = len(ts) - since
    # The polls since the committed offset was last reached that found the source down: since
    # the commit's own time where that is earlier than the poll that first read it (a commit
    # made just before the broker went down is read only once it is back, and its silence is
    # counted from its time, outage included).
    if commits:
        held = first_holding(samples["committed"], commits[-1].offset)
        held = min(held, bisect.bisect_left(ts, commits[-1].timestamp_ms))
    else:
        held = len(ts)
    down = tuple(itertools.compress(ts[held:], samples["stale"][held:]))
    return PartitionWindow(
        id=pid,
        commits=commits,
        # Burrow's ring of recent broker offsets, polled since the last commit (module doc).
        latest_offsets=_present(samples["latest"][last_commit_row:])[-config.window :],
        current_lag=lag if lag is not None else 0,
        earliest=samples["earliest"][last],
        latest=samples["latest"][last],
        alive=samples["alive"][last],
        owner_missing_polls=_trailing(samples["alive"], False),
        spout=spout,
        max_spout_pending=cap,
        spout_pending=_present(recent("spout_pending")),
        smallest_failed_offset=_last_known(recent("smallest_failed_offset")),
        stale=stale,
        stale_since_ms=stale_since,
        rebalances_ms=tuple(rebalances_ms),
        rebalancing=rebalancing,
        topology_ids=tuple(topology_ids),
        topics=tuple(topics),
        polls=polls,
        # The polls that watched the window and the one before: the interval it is polled at.
        poll_times_ms=tuple(ts[-(polls + 1) :]),
        down_polls_ms=down,
        time_lag_s=samples["time_lag_s"][last],
        share=bool(samples["share"][last]),
        lag_upper_bound=bool(samples["lag_upper_bound"][last]),
        **{name: samples[name][last] for name in SHARE_WINDOW_COLUMNS},
        retention_ms=retention.retention_ms if retention is not None else None,
        cleanup_policy=retention.cleanup_policy if retention is not None else None,
    )


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
    fresh: list[tuple[list[int], list[str | None]]] = []
    for a, b in runs:  # in C where it can: this runs over every sample of the group
        polled = list(map(operator.not_, stale[a:b]))
        times = list(itertools.compress(ts[a:b], polled))
        owners = list(itertools.compress(owner[a:b], polled))
        moved.update(itertools.compress(times[1:], map(operator.ne, owners[1:], owners[:-1])))
        if times and (last is None or times[-1] > last):
            last = times[-1]
        fresh.append((times, owners))
    if last is None:
        return (), None
    at_last = []  # a partition's polls have distinct times (duplicates dropped before)
    for times, owners in fresh:
        i = bisect.bisect_left(times, last)
        if i < len(times) and times[i] == last:
            at_last.append(owners[i])
    owned = sum(o is not None for o in at_last)
    return tuple(sorted(moved)), (None if owned == 0 else owned < len(at_last))
