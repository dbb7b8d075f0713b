"""Status, diagnoses and reason of one partition, and its group's status (SPEC §4).

Burrow's predicates, the evidence Burrow lacks, the sentences and the combining function;
the package docstring says how they fit together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spark_jobs.evaluator.rates import Sample, rates
from spark_jobs.evaluator.types import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    ERR,
    OK,
    OUT_OF_RANGE,
    PENDING_LEAK,
    POISON_MESSAGE,
    REBALANCE_STORM,
    REBALANCING,
    REWIND,
    SKIPPED_DATA,
    SLOW_CONSUMER,
    SOURCE_UNREACHABLE,
    SPOUT_ID_COLLISION,
    STALL,
    STOP,
    TOPOLOGY_RESTARTED,
    UNKNOWN,
    WARN,
    Commit,
    Diagnosis,
    EvaluatorConfig,
    GroupVerdict,
    PartitionVerdict,
    PartitionWindow,
)

# Group status is the worst partition status; like Burrow, STOP, STALL and REWIND count as ERR
# at group level. UNKNOWN ranks above OK (the group cannot claim health it cannot see) and
# below WARN (an unreachable source is not a lagging consumer).
_GROUP_RANK = {OK: 0, UNKNOWN: 1, WARN: 2, ERR: 3}
_GROUP_STATUS = {OK: OK, UNKNOWN: UNKNOWN, WARN: WARN, ERR: ERR, STOP: ERR, STALL: ERR, REWIND: ERR}


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


def _rise(series: Sequence[int]) -> int:
    """Work counted by a cumulative counter; a drop (a restart) counts from zero again."""
    total = 0
    for a, b in zip(series, series[1:], strict=False):
        total += b - a if b >= a else b
    return total


def _liveness(window: PartitionWindow, frozen: bool) -> tuple[bool | None, dict[str, Any]]:
    """Is a consumer working on this partition? (value, evidence); None when nobody can tell.

    Moving acked/failed counts are the strongest evidence (a Storm spout rewrites its znode
    only on progress, so its commit times say nothing of liveness); then the owner as the
    collector saw it, unless the group is rebalancing, when owning nothing is expected; last, a
    spout whose counts did not move while its commit is frozen is dead.
    """
    spout = window.spout
    samples = 0
    if spout is not None:
        samples = max(len(spout.acked), len(spout.failed))
        if _moved(spout.acked) or _moved(spout.failed):
            return True, {
                "source": "spout",
                "acked_rise": _rise(spout.acked),
                "failed_rise": _rise(spout.failed),
            }
    if window.alive is not None and not (window.alive is False and window.rebalancing):
        return window.alive, {"source": "owner", "alive": window.alive}
    if samples >= 2 and frozen:
        return False, {"source": "spout", "acked_rise": 0, "failed_rise": 0, "samples": samples}
    return None, {}


def _out_of_range(window: PartitionWindow, committed: int, lag: int) -> dict[str, Any] | None:
    if window.latest is not None and committed > window.latest:
        return {"committed": committed, "latest": window.latest, "side": "ahead_of_latest"}
    if window.earliest is not None and committed < window.earliest:
        return {"committed": committed, "earliest": window.earliest, "side": "behind_earliest"}
    if window.latest is None and lag < 0:
        return {"committed": committed, "current_lag": lag, "side": "ahead_of_latest"}
    return None


def _state_diagnoses(
    window: PartitionWindow,
    commits: Sequence[Commit],
    config: EvaluatorConfig,
    frozen: bool,
) -> list[Diagnosis]:
    """What the spout figures say about a non-OK partition (POISON, PENDING_LEAK, BACKPRESSURE).

    A frozen commit with rising failures is a poison message or a pending leak, and Storm
    counts a timed-out tuple as failed, so failures alone do not tell them apart. A poison
    message is one offset failing over and over: many failures, pending flat. A leak is
    offsets entering ``_pending`` and never leaving: pending climbs, and each leaked tuple
    times out (one failure each) at most once. So pending that climbs at least half as much as
    the failures rise is a leak, its failures are the leaked tuples' timeouts, and no poison
    is claimed unless the spout names the offset it keeps retrying
    (``smallest_failed_offset``).
    """
    spout = window.spout
    if spout is None:
        return []
    found = []
    committed = commits[-1].offset
    failed_rise = _rise(spout.failed)
    pending = spout.pending
    climb = _pending_climb(pending) if frozen else None
    leak = climb is not None and 2 * (climb[1] - climb[0]) >= failed_rise
    offset = window.smallest_failed_offset
    if frozen and failed_rise > 0 and (offset is not None or not leak):
        found.append(
            Diagnosis(
                POISON_MESSAGE,
                {
                    "offset": committed if offset is None else offset,
                    "committed": committed,
                    "failed_rise": failed_rise,
                },
            )
        )
    if leak and climb is not None:
        found.append(
            Diagnosis(
                PENDING_LEAK,
                {"committed": committed, "pending_from": climb[0], "pending_to": climb[1]},
            )
        )
    cap = window.max_spout_pending
    if cap is not None and pending:
        at_cap = sum(1 for p in pending if p >= cap)
        share = at_cap / len(pending)
        if share >= config.backpressure_share:
            found.append(
                Diagnosis(
                    BACKPRESSURE,
                    {
                        "max_spout_pending": cap,
                        "share_at_cap": round(share, 3),
                        "samples": len(pending),
                    },
                )
            )
    return found


def _pending_climb(pending: Sequence[int]) -> tuple[int, int] | None:
    """Pending still climbing at the end of the series: (from, to) of its last stretch that
    never fell, when that stretch rose at two steps or more; None otherwise.

    Only the end counts: before the commit froze, pending came and went with the acks. One
    step up (a message in flight, then retried) is not growth without bound.
    """
    start = len(pending) - 1
    while start > 0 and pending[start - 1] <= pending[start]:
        start -= 1
    rises = sum(1 for a, b in zip(pending[start:], pending[start + 1 :], strict=False) if b > a)
    if rises < 2:
        return None
    return pending[start], pending[-1]


def _slow_consumer(commits: Sequence[Commit], lag: int) -> Diagnosis | None:
    """Progress, but no faster than production: rates from the commits' own lags (the latest
    offset at a commit is its offset plus its lag), the ETA at those rates."""
    if commits[-1].offset <= commits[0].offset:
        return None
    samples = [
        Sample(c.timestamp_ms, c.offset + c.lag, c.offset) for c in commits if c.lag is not None
    ]
    figures = rates(samples)
    if figures is None or figures.consume_per_s > figures.produce_per_s:
        return None
    return Diagnosis(
        SLOW_CONSUMER,
        {
            "consume_per_s": round(figures.consume_per_s, 3),
            "produce_per_s": round(figures.produce_per_s, 3),
            "lag": lag,
            "eta_s": None,  # consumption does not outpace production: never drains
        },
    )


def _skipped_data(commits: Sequence[Commit]) -> Diagnosis | None:
    """The out-of-range jump: a commit below the log start followed by one past it, or, where
    the topic was deleted and re-created, a commit that the new log does not reach (beyond
    the log end of the next commit) followed by one inside the new log, above its start.
    Either way the consumer jumped over what the log held from its start to the new commit.
    A poll need not catch the commit while it lies outside the log: the consumer may jump
    between two polls (the lab's ``retention``: 233 with the log ending at 237, then 14 with
    the new log ending at 16)."""
    for previous, commit in zip(commits, commits[1:], strict=False):
        start = commit.earliest
        if start is None:
            continue
        if previous.offset < start < commit.offset:
            deleted: int | None = start - previous.offset
        elif (
            commit.latest is not None
            and previous.offset > commit.latest
            and start < commit.offset < previous.offset
        ):
            deleted = None  # the whole old log went with the topic: no count to give
        else:
            continue
        return Diagnosis(
            SKIPPED_DATA,
            {
                "from": previous.offset,
                "to": commit.offset,
                "earliest": start,
                "skipped": commit.offset - start,
                "deleted_by_retention": deleted,
                "at_ms": commit.timestamp_ms,
            },
        )
    return None


def _distinct(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _event_diagnoses(
    window: PartitionWindow, commits: Sequence[Commit], config: EvaluatorConfig
) -> tuple[Diagnosis, ...]:
    found: list[Diagnosis] = []
    if window.rebalancing:
        found.append(Diagnosis(REBALANCING, {"rebalancing": True}))
    if window.rebalances_ms:
        since = commits[0].timestamp_ms if commits else None
        count = sum(1 for t in window.rebalances_ms if since is None or t >= since)
        if count > config.rebalance_storm_count:
            found.append(
                Diagnosis(
                    REBALANCE_STORM,
                    {
                        "rebalances": count,
                        "threshold": config.rebalance_storm_count,
                        "since_ms": since,
                    },
                )
            )
    if any(c.earliest is not None for c in commits):
        skipped = _skipped_data(commits)
        if skipped is not None:
            found.append(skipped)
    if window.topology_ids:
        ids = _distinct(window.topology_ids)
        if len(ids) > 1:
            found.append(
                Diagnosis(TOPOLOGY_RESTARTED, {"from": ids[-2], "to": ids[-1], "ids": ids})
            )
    if window.topics:
        topics = _distinct(window.topics)
        if len(topics) > 1:
            found.append(Diagnosis(SPOUT_ID_COLLISION, {"topics": topics}))
    return tuple(found)


# ---------------------------------------------------------------------------------------------
# Sentences


def _secs(ms: float) -> str:
    seconds = ms / 1000.0
    if seconds == int(seconds):
        return f"{int(seconds)} s"
    return f"{seconds:.1f} s"


def _hint(diagnosis: Diagnosis) -> str:
    """A clause naming the diagnosis with its main figure, for the end of a reason."""
    e = diagnosis.evidence
    code = diagnosis.code
    if code == POISON_MESSAGE:
        return (
            f"offset {e['offset']} keeps failing ({e['failed_rise']} more failures): "
            "a poison message"
        )
    if code == PENDING_LEAK:
        return (
            f"pending grew from {e['pending_from']} to {e['pending_to']} while the commit "
            "stayed put: a pending leak"
        )
    if code == BACKPRESSURE:
        share = round(e["share_at_cap"] * 100)
        return f"pending sat at max.spout.pending ({e['max_spout_pending']}) in {share}% of samples"
    if code == SLOW_CONSUMER:
        return (
            f"it consumes {e['consume_per_s']:g}/s against {e['produce_per_s']:g}/s produced, "
            "so the lag never drains"
        )
    if code == REBALANCING:
        return "the group is rebalancing"
    if code == REBALANCE_STORM:
        return f"{e['rebalances']} rebalances in the window (more than {e['threshold']})"
    if code == SKIPPED_DATA:
        if e["deleted_by_retention"] is None:
            return (
                f"the commit at {e['from']} lay beyond the end of a re-created log and jumped "
                f"to {e['to']}, skipping {e['skipped']} messages"
            )
        return (
            f"the commit jumped from {e['from']} to {e['to']} past the log start {e['earliest']}, "
            f"skipping {e['skipped']} messages"
        )
    if code == TOPOLOGY_RESTARTED:
        return f"a new topology instance {e['to']} replaced {e['from']} on the spout path"
    if code == SPOUT_ID_COLLISION:
        return f"topics {', '.join(e['topics'])} are written under one spout path"
    return code


def _sentence(base: str, diagnoses: Sequence[Diagnosis]) -> str:
    for diagnosis in diagnoses:
        if diagnosis.code not in (DEAD_CONSUMER, OUT_OF_RANGE, SOURCE_UNREACHABLE):
            return f"{base}; {_hint(diagnosis)}."
    return f"{base}."


def _alive_clause(evidence: Mapping[str, Any]) -> str:
    if evidence.get("source") == "spout":
        return (
            f"the spout is alive (acked +{evidence['acked_rise']}, "
            f"failed +{evidence['failed_rise']})"
        )
    return "the consumer is alive (it owns the partition)"


def _last_drop(commits: Sequence[Commit]) -> tuple[int, int]:
    """The most recent decrease of lag between two commits with known lags (rule 8's proof)."""
    known = [c.lag for c in commits if c.lag is not None]
    for i in range(len(known) - 1, 0, -1):
        if known[i] < known[i - 1]:
            return known[i - 1], known[i]
    return known[-1], known[-1]


def _waiting_clause(lag: int, last: Commit) -> str:
    if last.lag is not None and lag > last.lag:
        return f"while {lag - last.lag} new messages arrived"
    return f"with {lag} messages waiting"


# ---------------------------------------------------------------------------------------------
# The evaluator


def _verdict(
    window: PartitionWindow,
    status: str,
    complete: float,
    lag: int | None,
    base: str,
    diagnoses: Sequence[Diagnosis],
) -> PartitionVerdict:
    found = tuple(diagnoses)
    return PartitionVerdict(window.id, status, complete, found, _sentence(base, found), lag)


def evaluate_partition(
    window: PartitionWindow, config: EvaluatorConfig, now_ms: int
) -> PartitionVerdict:
    """Status, completeness, diagnoses and reason of one partition (SPEC §4), rules in order.

    With ``earliest``, ``latest``, ``alive``, ``spout`` and the optional extras unknown, this is
    Burrow's evaluation exactly. The steps that use more evidence are marked "improvement".
    """
    commits = window.commits
    if len(commits) > config.window or config.min_distance_s > 0:
        commits = build_window(commits, config)
    complete = min(len(commits), config.window) / config.window
    lag = current_lag(window, commits)
    events = _event_diagnoses(window, commits, config)

    # Improvement: an unreachable source says nothing about the consumer.
    if window.stale:
        since = window.stale_since_ms
        evidence = {
            "stale_since_ms": since,
            "last_known_lag": lag,
            "committed": commits[-1].offset if commits else None,
        }
        when = "" if since is None else f" for {_secs(now_ms - since)}"
        return _verdict(
            window,
            UNKNOWN,
            complete,
            lag,
            f"The source could not be reached{when}; these are the last known figures "
            f"(lag {lag}), marked stale",
            (Diagnosis(SOURCE_UNREACHABLE, evidence), *events),
        )

    if not commits:
        return _verdict(
            window, OK, complete, lag, "No commit in the window yet: nothing to judge", events
        )
    first, last = commits[0], commits[-1]

    # ERR (SPEC §3, §4): the committed offset lies outside the log.
    outside = _out_of_range(window, last.offset, lag)
    if outside is not None:
        if outside["side"] == "behind_earliest":
            base = (
                f"Committed offset {last.offset} is below the earliest available offset "
                f"{outside['earliest']}: the data was deleted by retention or the log was reset"
            )
        else:
            bound = outside.get("latest")
            where = f"the latest offset {bound}" if bound is not None else "the latest offset"
            base = (
                f"Committed offset {last.offset} is beyond {where}: the log was reset or recreated"
            )
        return _verdict(
            window,
            ERR,
            complete,
            lag if lag >= 0 else None,
            base,
            (Diagnosis(OUT_OF_RANGE, outside), *events),
        )

    # Rule 1: not enough data. Improvement: a window from a poller has enough data once the
    # partition was watched by enough polls, whether or not it committed at each (a consumer
    # stuck for longer than the status job's look-back has one commit and hundreds of polls).
    watched = complete
    if window.polls is not None:
        watched = max(complete, min(window.polls, config.window) / config.window)
    if watched < config.minimum_complete:
        polls = "" if window.polls is None else f", seen by {window.polls} polls"
        return _verdict(
            window,
            OK,
            complete,
            lag,
            f"Only {len(commits)} of {config.window} commits in the window{polls} "
            f"({watched:.0%} < {config.minimum_complete:.0%} required): not enough data to judge",
            events,
        )

    idle_ms = now_ms - last.timestamp_ms
    span_ms = last.timestamp_ms - first.timestamp_ms

    # Rule 2 (with the improvement that ``lag`` is fresh): nothing waits, however old the commit.
    if lag <= config.allowed_lag:
        old = f", although the last commit is {_secs(idle_ms)} old" if idle_ms > span_ms else ""
        return _verdict(
            window,
            OK,
            complete,
            lag,
            f"Current lag {lag} is within the allowed lag of {config.allowed_lag}{old}",
            events,
        )

    time_stopped = has_stopped_committing(commits, now_ms)
    stopped = time_stopped and not was_caught_up_recently(commits, window.latest_offsets)
    stalled = offsets_unchanged(commits)
    frozen = stalled or time_stopped
    alive, alive_evidence = _liveness(window, frozen)
    dead = None
    if alive is False:
        dead = Diagnosis(
            DEAD_CONSUMER,
            {**alive_evidence, "lag": lag, "committed": last.offset, "idle_s": idle_ms / 1000},
        )

    # Improvement: a consumer known dead is STOP once its next commit is overdue, however
    # recent its last zero-lag commit (Burrow waits for the whole window's span).
    if dead is not None and is_commit_overdue(commits, now_ms):
        if alive_evidence["source"] == "owner":
            base = (
                f"Nobody owns the partition, no commit for {_secs(idle_ms)} and {lag} messages "
                "wait: the consumer is dead"
            )
        else:
            base = (
                f"The spout neither acked nor failed anything and its commit has not moved for "
                f"{_secs(idle_ms)}, with {lag} messages waiting: the consumer is dead"
            )
        state = _state_diagnoses(window, commits, config, frozen)
        return _verdict(window, STOP, complete, lag, base, (dead, *state, *events))

    # Rule 3: STOP; improvement: a live consumer that stopped committing is STALL.
    if stopped:
        base = (
            f"No commit for {_secs(idle_ms)}, longer than the window's {_secs(span_ms)} span, "
            f"{_waiting_clause(lag, last)}"
        )
        state = _state_diagnoses(window, commits, config, frozen)
        if alive:
            base = f"{base}, but {_alive_clause(alive_evidence)}: stalled, not stopped"
            return _verdict(window, STALL, complete, lag, base, (*state, *events))
        return _verdict(window, STOP, complete, lag, base, (*state, *events))

    # Rule 4: REWIND.
    rewind = find_unrecovered_rewind(commits)
    if rewind is not None:
        base = (
            f"Committed offset went back from {commits[rewind - 1].offset} to "
            f"{commits[rewind].offset} and never climbed back (last commit {last.offset})"
        )
        state = _state_diagnoses(window, commits, config, frozen)
        return _verdict(window, REWIND, complete, lag, base, (*state, *events))

    # Rule 5: caught up at some commit of the window.
    caught_up = had_lag_within_allowed(commits, config.allowed_lag)
    if caught_up is not None:
        base = (
            f"Lag was {caught_up.lag} (allowed {config.allowed_lag}) at a commit "
            f"{_secs(now_ms - caught_up.timestamp_ms)} ago: the consumer caught up recently"
        )
        return _verdict(window, OK, complete, lag, base, events)

    # Rule 6: STALL; improvement: a dead consumer's frozen offset is STOP.
    if stalled:
        base = (
            f"All {len(commits)} commits in the window are at offset {last.offset} with lag {lag}"
        )
        state = _state_diagnoses(window, commits, config, frozen)
        if dead is not None:
            base = f"{base}, and nobody works on it: the consumer is dead"
            return _verdict(window, STOP, complete, lag, base, (dead, *state, *events))
        if alive:
            base = f"{base}; {_alive_clause(alive_evidence)} but not moving"
        return _verdict(window, STALL, complete, lag, base, (*state, *events))

    known = [c.lag for c in commits if c.lag is not None]
    # Rule 7: WARN; improvement: with lags measured at polls, a rise within one batch between
    # polls is the poll's phase in the commit cycle, not a consumer falling behind.
    jitter = lag_rise_within_jitter(commits) if window.polls is not None else None
    if jitter is not None and lag_never_decreased(commits):
        base = (
            f"Lag rose by {jitter[0]} across the window's {len(commits)} commits, no more than "
            f"the {jitter[1]} messages read between two polls: the consumer keeps pace"
        )
        return _verdict(window, OK, complete, lag, base, events)
    if lag_never_decreased(commits):
        trend = f" (from {known[0]} to {known[-1]})" if known else ""
        base = f"Lag never decreased across the window's {len(commits)} commits{trend}"
        state = _state_diagnoses(window, commits, config, frozen)
        slow = _slow_consumer(commits, lag)
        if slow is not None:
            state.insert(0, slow)
        return _verdict(window, WARN, complete, lag, base, (*state, *events))

    # Rule 8.
    drop = _last_drop(commits)
    base = f"Lag went down from {drop[0]} to {drop[1]} within the window: the consumer catches up"
    return _verdict(window, OK, complete, lag, base, events)


def evaluate_group(group_id: str, verdicts: Sequence[PartitionVerdict]) -> GroupVerdict:
    """Burrow's group rules: the worst partition (STOP, STALL, REWIND shown as ERR), completeness
    as the share of partitions whose window is full, and the sum of the partitions' lags.

    A partition with no statable lag (committed beyond latest) adds nothing to ``total_lag``;
    it is already ERR. A group without partitions is OK with completeness 0, as in Burrow.
    """
    status = OK
    full = 0
    total = 0
    for verdict in verdicts:
        mapped = _GROUP_STATUS[verdict.status]
        if _GROUP_RANK[mapped] > _GROUP_RANK[status]:
            status = mapped
        if verdict.complete >= 1.0:
            full += 1
        if verdict.lag is not None and verdict.lag > 0:
            total += verdict.lag
    complete = full / len(verdicts) if verdicts else 0.0
    return GroupVerdict(group_id, status, complete, total, tuple(verdicts))
