"""The predicates the rules read: Burrow's, and those of the evidence Burrow lacks.

Each is a small pure function named for the question it answers, as in Burrow's
``core/internal/evaluator/caching.go``, so a rule reads as a sentence and a test can pin one
predicate without building the whole verdict. None of them decides a status: ``decide`` does,
from their values.

Longer than 400 lines on purpose: it is the table's vocabulary, one short function per
predicate with the reason for its thresholds beside it; split by theme, a reader of
``decide``'s rows would look in several places for what one row reads.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from spark_jobs.evaluator.types import (
    COLLECTION_GAP_POLLS,
    Commit,
    EvaluatorConfig,
    PartitionWindow,
)

# ---------------------------------------------------------------------------------------------
# The window


def build_window(commits: Iterable[Commit], config: EvaluatorConfig) -> tuple[Commit, ...]:
    """The last ``config.window`` commits, a commit within ``min_distance_s`` replacing the one
    before it (SPEC §4, Burrow's ``min-distance``).

    Replacement compares with the commit kept last, as Burrow's ring does, so the function is
    idempotent: the Spark job may hand it raw commits or an already-built window. Commits are
    taken in the order given (oldest first); nothing is reordered.
    """
    min_ms = config.min_distance_s * 1000.0
    kept: list[Commit] = []
    for commit in commits:
        if kept and min_ms > 0 and commit.timestamp_ms - kept[-1].timestamp_ms < min_ms:
            kept[-1] = commit
        else:
            kept.append(commit)
    return tuple(kept[-config.window :])


def window_complete(commits: Sequence[Commit], config: EvaluatorConfig) -> float:
    """How full the window is: Burrow's ``complete``, the share of ``config.window`` commits."""
    return min(len(commits), config.window) / config.window


def watched_share(
    window: PartitionWindow, commits: Sequence[Commit], config: EvaluatorConfig
) -> float:
    """Rule 1's measure: how full the window is, or, for a window from a poller, how many
    polls watched it, whichever is more.

    A consumer stuck for longer than the status job's look-back has one commit and hundreds of
    polls: counting its commits alone would call it "not enough data" for ever.
    """
    complete = window_complete(commits, config)
    if window.polls is None:
        return complete
    return max(complete, min(window.polls, config.window) / config.window)


def young_history(window: PartitionWindow, config: EvaluatorConfig) -> bool:
    """Whether the window is watched from its cluster's history start
    (``config.history_from_ms``: a cluster rebuilt under the same name): the partition's first
    poll since the start is among the window's poll times, and it came within ``config.window``
    of its poll intervals of the start. Without poll times, any start at all; with one poll
    (its first, and no interval to measure), yes.

    The first poll since the start is the window's first when no poll before the window's was
    kept (``poll_times_ms`` holds no more than ``polls``: the poll before them was older than
    the start, ``since_history``, or than the look-back); else the poll before them is, when
    it follows the start by less than an interval. A partition need not be polled at the
    start: the cycle that first saw the new identity is the start, and a consumer that had not
    committed on the new cluster yet has no sample then (in the lab the brokers' groups were
    first polled a cycle later, and read as not watched from the start they went STALL).
    A partition first polled more than a window of polls after the start is a new one.

    Every partition of a rebuilt cluster is young at once, and its consumers take a while to
    find their new offsets (rejoin, reset, commit again: in the lab one committed offset 0 and
    then nothing for 30 s while its partition filled); Burrow's rule 3 reads a one-commit
    window that went quiet as stopped. So such a window needs to be full (rule 1 with a
    ``minimum_complete`` of 1, polls counting) before it is judged (``required_share``).
    """
    start_ms = config.history_from_ms
    if start_ms <= 0:
        return False
    polls = window.poll_times_ms
    if len(polls) < 2:
        return True
    step = polls[1] - polls[0]
    first_is_the_windows = window.polls is not None and len(polls) <= window.polls
    if not (first_is_the_windows or polls[0] - step < start_ms):
        return False
    return polls[0] - start_ms <= config.window * step


def required_share(window: PartitionWindow, config: EvaluatorConfig) -> float:
    """Rule 1's threshold for ``watched_share``: all of a window watched from its cluster's
    history start (``young_history``), ``config.minimum_complete`` otherwise."""
    return 1.0 if young_history(window, config) else config.minimum_complete


# ---------------------------------------------------------------------------------------------
# Burrow's predicates (SPEC §4 rules 3 to 7), one small function each


def has_stopped_committing(commits: Sequence[Commit], now_ms: int) -> bool:
    """Rule 3, first half: the time since the last commit exceeds the window's own span."""
    last = commits[-1].timestamp_ms
    return now_ms - last > last - commits[0].timestamp_ms


def was_caught_up_recently(commits: Sequence[Commit], latest_offsets: Sequence[int]) -> bool:
    """Rule 3, second half (Burrow #290): a recent broker offset was at or below the last
    commit, so the consumer had no lag lately and new data may simply not be consumed yet."""
    last = commits[-1].offset
    return any(latest <= last for latest in latest_offsets)


def find_unrecovered_rewind(commits: Sequence[Commit]) -> int | None:
    """Rule 4: index of a commit lower than the one before it that no later commit climbed
    back to (reached the offset it fell from); None when every rewind recovered."""
    offsets = [c.offset for c in commits]
    for i in range(1, len(offsets)):
        fell_from = offsets[i - 1]
        if offsets[i] < fell_from and not any(o >= fell_from for o in offsets[i + 1 :]):
            return i
    return None


def had_lag_within_allowed(commits: Sequence[Commit], allowed_lag: int) -> Commit | None:
    """Rule 5: the most recent commit whose lag was within ``allowed_lag`` (unknown lags do
    not count)."""
    for commit in reversed(commits):
        if commit.lag is not None and commit.lag <= allowed_lag:
            return commit
    return None


def offsets_unchanged(commits: Sequence[Commit]) -> bool:
    """Rule 6: every commit of the window is at the same offset."""
    first = commits[0].offset
    return all(c.offset == first for c in commits)


def lag_never_decreased(commits: Sequence[Commit]) -> bool:
    """Rule 7: from one commit to the next (skipping unknown lags), lag never went down."""
    previous: int | None = None
    for commit in commits:
        if commit.lag is None:
            continue
        if previous is not None and commit.lag < previous:
            return False
        previous = commit.lag
    return True


# ---------------------------------------------------------------------------------------------
# Whether the figures are current: a source or a collection that was down


def collection_gap(window: PartitionWindow, now_ms: int) -> int | None:
    """The newest poll's time when it is more than ``COLLECTION_GAP_POLLS`` of the
    partition's own poll intervals old at ``now_ms`` (the median spacing of
    ``poll_times_ms``: the polls that watched the window, and the one before); None when it
    is not, or when no poll times are given.

    Nothing was collected meanwhile (a collector down, Redis down under beat), so "no commit
    since" is unknown, not a stuck consumer: without this the first run after collection
    resumed read every group's silence up to now as STALL (benchmarks/soak.py: 46 of 50
    partitions after a 30 s Redis restart), and with a collector down for longer every
    partition would alert. The window's own polls give the interval, since a slice of the
    look-back sees those and no older ones (``spark_jobs/status.py``).
    """
    polls = window.poll_times_ms
    if len(polls) < 2:
        return None
    spacing = statistics.median(b - a for a, b in zip(polls, polls[1:], strict=False))
    if spacing <= 0 or now_ms - polls[-1] <= COLLECTION_GAP_POLLS * spacing:
        return None
    return polls[-1]


def down_since_commit(
    window: PartitionWindow, commits: Sequence[Commit], now_ms: int
) -> int | None:
    """When the source went down, if some poll since the committed offset was last reached
    found it unreachable (``down_polls_ms``) and the fresh polls since the outage do not yet
    span as long as the window from its first to its last commit; None otherwise.

    While the broker is down no consumer can commit; when it is back the consumers need a
    moment to fetch and commit again, but "no commit since" counts the whole outage, and the
    first run read it as STALL (benchmarks/soak.py: every partition of the clicks groups STALL
    12 s after a 30 s broker restart, committing 10 s later). So the consumer gets the grace
    its last commit had (the window's span), counted from the outage's end; one still silent
    after it is judged as before.
    """
    down = window.down_polls_ms
    if not down or not commits:
        return None
    span = commits[-1].timestamp_ms - commits[0].timestamp_ms
    if now_ms - down[-1] > span:
        return None
    return down[0]


# ---------------------------------------------------------------------------------------------
# Evidence Burrow lacks


def lag_rise_within_jitter(commits: Sequence[Commit]) -> tuple[int, int] | None:
    """For lags measured at polls: (rise, batch) when the lag rose across the window by no
    more than the largest offset advance between two consecutive commits (one batch between
    polls); None when it rose more, or when there is no progress or no two known lags.

    Burrow measures a commit's lag when the commit arrives. A poller measures it at the poll
    that first saw the commit, somewhere in the consumer's commit cycle: the messages produced
    since the commit are in it. Where that phase drifts, a consumer keeping pace shows a lag
    that steps up by up to a batch and may never step down within the window (the lab's
    ``audit-spout``: lags 1, 1, 1, 1, 1, 4, 4, 4, 4, 4 while it read 8 to 12 messages between
    polls). A consumer falling behind gains more than a batch over a window.
    """
    known = [c.lag for c in commits if c.lag is not None]
    if len(known) < 2:
        return None
    batch = max(
        (b.offset - a.offset for a, b in zip(commits, commits[1:], strict=False)), default=0
    )
    rise = known[-1] - known[0]
    if batch <= 0 or rise > batch:
        return None
    return rise, batch


def is_commit_overdue(commits: Sequence[Commit], now_ms: int) -> bool:
    """The next commit is late: more time passed since the last one than the window's mean
    interval between commits. Guards the dead-consumer rule against an owner missing for a
    moment while commits still arrive on time."""
    idle = now_ms - commits[-1].timestamp_ms
    if len(commits) < 2:
        return idle > 0
    return idle * (len(commits) - 1) > commits[-1].timestamp_ms - commits[0].timestamp_ms


# How long a consumer known alive may stay silent, messages waiting, before it reads as stalled
# (``overdue_but_alive``): half the window's span, and at least this many of its own commit
# intervals. Burrow's rule 3 waits for the whole span, and its exception for a consumer caught
# up lately for as long as its ring of broker offsets lasts (10 offsets at 10 s: 100 s).
MISSED_INTERVALS = 3


def missed_commits(commits: Sequence[Commit], latest_offsets: Sequence[int], now_ms: int) -> bool:
    """The partition missed its commits while messages waited: the time since its last commit
    is more than half the window's span and more than ``MISSED_INTERVALS`` of the window's mean
    intervals between commits, and the broker offsets polled since the poll that saw the commit
    (``latest_offsets`` after its first) are all beyond the committed offset, at least
    ``MISSED_INTERVALS`` of them.

    Read for a consumer known alive only: it holds the partition, yet the messages it should
    read wait past its own cadence. With 10 commits a poll apart that is 4.5 polls; a batch
    consumer committing once a minute gets 4.5 minutes. Fewer than two commits: no cadence yet.
    """
    if len(commits) < 2:
        return False
    last = commits[-1]
    idle = now_ms - last.timestamp_ms
    span = last.timestamp_ms - commits[0].timestamp_ms
    if 2 * idle <= span or idle * (len(commits) - 1) <= MISSED_INTERVALS * span:
        return False
    since = latest_offsets[1:]
    return len(since) >= MISSED_INTERVALS and all(latest > last.offset for latest in since)


def current_lag(window: PartitionWindow, commits: Sequence[Commit]) -> int:
    """The lag now: from the fresh broker ``latest`` when known, else the collector's figure.

    Burrow computes lag when a commit arrives and keeps it until the next one; a consumer that
    stopped committing therefore keeps the lag of its last commit forever. Recomputing from the
    latest offset of this poll is the first improvement of SPEC §4. The result may be negative
    (committed beyond latest): the caller turns that into ERR, never into a clamped lag.
    """
    if window.latest is not None and commits:
        return window.latest - commits[-1].offset
    return window.current_lag


def _moved(series: Sequence[int]) -> bool:
    return any(b != a for a, b in zip(series, series[1:], strict=False))


def counter_rise(series: Sequence[int]) -> int:
    """Work counted by a cumulative counter; a drop (a restart) counts from zero again."""
    total = 0
    for a, b in zip(series, series[1:], strict=False):
        total += b - a if b >= a else b
    return total


# How many polls in a row must find nobody holding a partition before that alone says its
# consumer is dead. One is a restart's moment: consumers that leave their group and join it again
# leave it Empty for a few seconds, which a poll may see (the lab's workload restarted under its
# groups was STOP for one poll, then OK); a consumer really gone is missing at the next poll too.
OWNER_MISSING_POLLS = 2


def owner_missing(window: PartitionWindow) -> bool:
    """Nobody holds the partition, outside a rebalance, at ``OWNER_MISSING_POLLS`` polls in a
    row (at the newest only when the window does not count its polls: a document's)."""
    if window.alive is not False or window.rebalancing:
        return False
    return window.owner_missing_polls is None or window.owner_missing_polls >= OWNER_MISSING_POLLS


def liveness(window: PartitionWindow, frozen: bool) -> tuple[bool | None, dict[str, Any]]:
    """Is a consumer working on this partition? (value, evidence); None when nobody can tell.

    First, the collector saying nobody holds the partition (``alive`` false) at the newest poll
    and the one before (``owner_missing``), unless the group is rebalancing, when owning
    nothing is expected; missing at one poll only, the other evidence decides. For a spout it
    says so only when a reachable Storm UI does not list its topology and nothing was pushed: a
    poll that brings no counts, so counts that moved in the window moved before it (a killed
    topology's last work, which every partition of a real Storm spout shows, its counts being
    the whole spout's). Then moving acked/failed counts (a Storm spout rewrites its znode only
    on progress, so its commit times say nothing of liveness); then the owner holding it; last,
    a spout whose counts did not move while its commit is frozen is dead.
    """
    if owner_missing(window):
        return False, {"source": "owner", "alive": False}
    spout = window.spout
    samples = 0
    if spout is not None:
        samples = max(len(spout.acked), len(spout.failed))
        if _moved(spout.acked) or _moved(spout.failed):
            return True, {
                "source": "spout",
                "acked_rise": counter_rise(spout.acked),
                "failed_rise": counter_rise(spout.failed),
            }
    if window.alive is True:
        return True, {"source": "owner", "alive": True}
    if samples >= 2 and frozen:
        return False, {"source": "spout", "acked_rise": 0, "failed_rise": 0, "samples": samples}
    return None, {}


def out_of_range(window: PartitionWindow, committed: int, lag: int) -> dict[str, Any] | None:
    """The bound the committed offset crossed (the evidence of ``OUT_OF_RANGE``), or None.

    Without a broker ``latest`` a negative collector lag is the only sign of a commit beyond
    the log's end; a lag is never clamped to hide it.

    In a window measured at polls (``polls`` given), a commit beyond the log end is out of
    range only once it is beyond the log end of two polls (``latest_offsets``, read since the
    commit was first seen): a poll reads the commit and the log end by different requests
    (ZooKeeper and the broker, or OffsetFetch after ListOffsets), and a commit read later than
    the log end passes it by what was produced in between. Over a slow ZooKeeper link a live
    spout's partition read ERR for one poll so; a log truly reset stays below the commit.
    """
    if window.latest is not None and committed > window.latest:
        if window.polls is not None and len(window.latest_offsets) < 2:
            return None  # beyond the log end of its first poll only: a read skew, so far
        return {"committed": committed, "latest": window.latest, "side": "ahead_of_latest"}
    if window.earliest is not None and committed < window.earliest:
        return {"committed": committed, "earliest": window.earliest, "side": "behind_earliest"}
    if window.latest is None and lag < 0:
        return {"committed": committed, "current_lag": lag, "side": "ahead_of_latest"}
    return None


# ---------------------------------------------------------------------------------------------
# A share group's records (KIP-932, ``__share_group_state``)

# Deliveries from which a record that keeps coming back is being redelivered: its first
# delivery failed, and so did at least one more.
REDELIVERED_AT = 2


def record_redelivering(window: PartitionWindow) -> dict[str, Any] | None:
    """A share-partition's record delivered ``REDELIVERED_AT`` times or more that came back
    again (released, or its acquisition lock timed out) at the newest poll: a record its
    consumers keep failing on, not yet given up. Its offset, deliveries and the limit."""
    count = window.share_redelivered_count
    if not window.share or count is None or count < REDELIVERED_AT:
        return None
    return {
        "offset": window.share_redelivered_offset,
        "deliveries": count,
        "limit": window.share_delivery_limit,
        "archived": False,
    }


def record_archived(window: PartitionWindow, commits: Sequence[Commit]) -> dict[str, Any] | None:
    """A share-partition's record archived after ``REDELIVERED_AT`` deliveries or more, first
    seen archived within the window (since its first commit): redelivered until its consumers
    or the delivery count limit gave it up. A record rejected at its first delivery was
    handled by its consumer (a rejection is a decision), so it is not one."""
    count, at = window.share_archived_count, window.share_archived_ms
    if not window.share or count is None or count < REDELIVERED_AT or at is None or not commits:
        return None
    if at < commits[0].timestamp_ms:
        return None
    return {
        "offset": window.share_archived_offset,
        "deliveries": count,
        "limit": window.share_delivery_limit,
        "archived": True,
        "archived_at_ms": at,
    }


def spout_at_cap(window: PartitionWindow, config: EvaluatorConfig) -> dict[str, Any] | None:
    """BACKPRESSURE's evidence when the spout's tuples in flight sat at its cap
    (``max_spout_pending``) in at least ``backpressure_share`` of the samples, else None.

    What the cap counts: the task's tuples in flight when the spout (or Storm UI) says so, else
    the partition's pending (a task reading one partition: the same figure).
    """
    cap = window.max_spout_pending
    spout = window.spout
    capped = window.spout_pending or (spout.pending if spout is not None else ())
    if cap is None or not capped:
        return None
    share = sum(1 for p in capped if p >= cap) / len(capped)
    if share < config.backpressure_share:
        return None
    return {"max_spout_pending": cap, "share_at_cap": round(share, 3), "samples": len(capped)}
