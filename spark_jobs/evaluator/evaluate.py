"""Status, diagnoses and reason of one partition, and its group's status (SPEC §4).

The sentences and the function that combines the predicates (``rules``) and the diagnoses
(``diagnoses``); the package docstring says how they fit together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spark_jobs.evaluator.diagnoses import event_diagnoses, slow_consumer, state_diagnoses
from spark_jobs.evaluator.rules import (
    build_window,
    current_lag,
    find_unrecovered_rewind,
    had_lag_within_allowed,
    has_stopped_committing,
    is_commit_overdue,
    lag_never_decreased,
    lag_rise_within_jitter,
    liveness,
    offsets_unchanged,
    out_of_range,
    was_caught_up_recently,
)
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
    events = event_diagnoses(window, commits, config)

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
    outside = out_of_range(window, last.offset, lag)
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
    alive, alive_evidence = liveness(window, frozen)
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
        state = state_diagnoses(window, commits, config, frozen)
        return _verdict(window, STOP, complete, lag, base, (dead, *state, *events))

    # Rule 3: STOP; improvement: a live consumer that stopped committing is STALL.
    if stopped:
        base = (
            f"No commit for {_secs(idle_ms)}, longer than the window's {_secs(span_ms)} span, "
            f"{_waiting_clause(lag, last)}"
        )
        state = state_diagnoses(window, commits, config, frozen)
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
        state = state_diagnoses(window, commits, config, frozen)
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
        state = state_diagnoses(window, commits, config, frozen)
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
        state = state_diagnoses(window, commits, config, frozen)
        slow = slow_consumer(commits, lag)
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
