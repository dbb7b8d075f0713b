"""The reason: one plain sentence per verdict, citing the figures that decided it.

Rendered after the decision, from its rule id and the figures, so the rules carry no text
and a reworded sentence cannot change a status. Each rule of ``decide.RULES`` has one base
sentence here (``_BASES``); the first diagnosis that adds something the base did not say ends
it with its main figure. The figures a sentence cites are derived again with the same named
functions the rules used (the rewind's offsets, the commit that was caught up, the jitter), once
per verdict.

Over 400 lines on purpose: one base sentence per row of the table and one clause per
diagnosis, which read best together, as the sentences a reader compares.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from spark_jobs.evaluator.decide import Decision
from spark_jobs.evaluator.rules import (
    MISSED_INTERVALS,
    find_unrecovered_rewind,
    had_lag_within_allowed,
    lag_rise_within_jitter,
    liveness,
    required_share,
    watched_share,
)
from spark_jobs.evaluator.types import (
    BACKPRESSURE,
    DEAD_CONSUMER,
    OUT_OF_RANGE,
    PENDING_LEAK,
    POISON_MESSAGE,
    REBALANCE_STORM,
    REBALANCING,
    RETENTION_RISK,
    SKIPPED_DATA,
    SLOW_CONSUMER,
    SOURCE_UNREACHABLE,
    SPOUT_ID_COLLISION,
    TOPOLOGY_RESTARTED,
    Commit,
    Diagnosis,
    EvaluatorConfig,
    PartitionWindow,
)

__all__ = ["reason"]


def reason(
    decision: Decision, window: PartitionWindow, config: EvaluatorConfig, now_ms: int
) -> str:
    """The verdict's sentence: the rule's base sentence, then the first telling diagnosis;
    a lag that is only an upper bound says so."""
    base = _BASES[decision.rule](decision, window, config, now_ms)
    if window.lag_upper_bound:
        base += " (the lag is an upper bound, start offset to log end: the broker reports none)"
    return _sentence(base, decision.diagnoses, _terms(window))


class _Terms(NamedTuple):
    """The words for a partition's progress: a consumer's commits, or a share group's start
    offset (KIP-932: a queue commits nothing; its start offset moves as records are
    acknowledged or archived)."""

    commits: str  # "the window's N {commits}"
    a_commit: str  # "at {a commit} 5 s ago"
    not_moved: str  # "{not moved} for 5 s"
    offset: str  # "{offset} 12 is below ..."
    consumer: str  # "{consumer} is dead"
    the_commit: str  # "{the commit} jumped from ..."


_COMMITS = _Terms("commits", "a commit", "No commit", "Committed offset", "the consumer",
                  "the commit")  # fmt: skip
_START = _Terms("moves of the start offset", "a move of the start offset",
                "The start offset has not moved", "Start offset", "the queue's consumer",
                "the start offset")  # fmt: skip


def _terms(window: PartitionWindow) -> _Terms:
    return _START if window.share else _COMMITS


def _secs(ms: float) -> str:
    seconds = ms / 1000.0
    if seconds == int(seconds):
        return f"{int(seconds)} s"
    return f"{seconds:.1f} s"


def _hint(diagnosis: Diagnosis, t: _Terms = _COMMITS) -> str:
    """A clause naming the diagnosis with its main figure, for the end of a reason."""
    e = diagnosis.evidence
    code = diagnosis.code
    if code == POISON_MESSAGE and "deliveries" in e:  # a share group's record (KIP-932)
        return _record_clause(e)
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
                f"{t.the_commit} at {e['from']} lay beyond the end of a re-created log and jumped "
                f"to {e['to']}, skipping {e['skipped']} messages"
            )
        if e["skipped"] == 0 and e.get("deleted_by_retention"):
            return (
                f"{t.the_commit} jumped from {e['from']} to the log start {e['earliest']}: "
                f"{e['deleted_by_retention']} messages were deleted before they were read"
            )
        return (
            f"{t.the_commit} jumped from {e['from']} to {e['to']} past the log start "
            f"{e['earliest']}, "
            f"skipping {e['skipped']} messages"
        )
    if code == TOPOLOGY_RESTARTED:
        return f"a new topology instance {e['to']} replaced {e['from']} on the spout path"
    if code == SPOUT_ID_COLLISION:
        return f"topics {', '.join(e['topics'])} are written under one spout path"
    return code


# Diagnoses that never end a sentence: the base already states the first three, and the
# retention forecast is a figure of its own (``retention_left_s``), shown beside the status on
# every page, not a reason for it.
_UNTOLD = (DEAD_CONSUMER, OUT_OF_RANGE, SOURCE_UNREACHABLE, RETENTION_RISK)


def _sentence(base: str, diagnoses: Sequence[Diagnosis], t: _Terms = _COMMITS) -> str:
    for diagnosis in diagnoses:
        if diagnosis.code not in _UNTOLD:
            return f"{base}; {_hint(diagnosis, t)}."
    return f"{base}."


def _alive_clause(d: Decision, w: PartitionWindow) -> str:
    _, evidence = liveness(w, d.facts.frozen)
    if evidence.get("source") == "spout":
        return (
            f"the spout is alive (acked +{evidence['acked_rise']}, "
            f"failed +{evidence['failed_rise']})"
        )
    if w.share:
        return "members hold the partition"
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


def _record_clause(e: Mapping[str, Any]) -> str:
    """A share group's poison record: its offset, deliveries against the limit, and whether it
    is still being redelivered or was archived (given up: at the limit, or rejected)."""
    limit = e.get("limit")
    times = f"{e['deliveries']} times" + ("" if limit is None else f" (limit {limit})")
    if not e["archived"]:
        return (
            f"offset {e['offset']} has been delivered {times} and keeps coming back: "
            "a poison message"
        )
    how = ""
    if limit is not None:
        how = " at the delivery count limit" if e["deliveries"] >= limit else ", rejected"
    return (
        f"offset {e['offset']} was delivered {times} and archived{how}: a poison message given up"
    )


def _evidence(decision: Decision, code: str) -> Mapping[str, Any]:
    return next(d.evidence for d in decision.diagnoses if d.code == code)


def _idle_and_span(commits: Sequence[Commit], now_ms: int) -> tuple[int, int]:
    """Time since the last commit, and the window's span from its first to its last commit."""
    last = commits[-1].timestamp_ms
    return now_ms - last, last - commits[0].timestamp_ms


# ---------------------------------------------------------------------------------------------
# Base sentences, one per rule id of ``decide.RULES``, in its order

_Base = Callable[[Decision, PartitionWindow, EvaluatorConfig, int], str]


def _source_unreachable(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    """The one sentence of the three UNKNOWN rows: the source down, a gap in collection, the
    grace after an outage. The reader needs to know the figures are old, and since when."""
    since = _evidence(d, SOURCE_UNREACHABLE)["stale_since_ms"]
    when = "" if since is None else f" for {_secs(now_ms - since)}"
    return (
        f"The source could not be reached{when}; these are the last known figures "
        f"(lag {d.lag}), marked stale"
    )


def _no_commits(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    if 0 < c.history_from_ms <= now_ms:
        return (
            f"No commit since the cluster was rebuilt {_secs(now_ms - c.history_from_ms)} ago "
            "(its offsets history started over): nothing to judge"
        )
    if w.share:
        return "No start offset in the window yet: nothing to judge"
    return "No commit in the window yet: nothing to judge"


def _out_of_range(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    outside = _evidence(d, OUT_OF_RANGE)
    committed, t = d.commits[-1].offset, _terms(w)
    if outside["side"] == "behind_earliest":
        return (
            f"{t.offset} {committed} is below the earliest available offset "
            f"{outside['earliest']}: the data was deleted by retention or the log was reset"
        )
    bound = outside.get("latest")
    where = f"the latest offset {bound}" if bound is not None else "the latest offset"
    return f"{t.offset} {committed} is beyond {where}: the log was reset or recreated"


def _not_enough_data(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    watched = watched_share(w, d.commits, c)
    needed = required_share(w, c)
    polls = "" if w.polls is None else f", seen by {w.polls} polls"
    since = " since the cluster was rebuilt" if needed > c.minimum_complete else ""
    return (
        f"Only {len(d.commits)} of {c.window} {_terms(w).commits} in the window{polls} "
        f"({watched:.0%} < {needed:.0%} required{since}): not enough data to judge"
    )


def _within_allowed_lag(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    if d.lag < 0:  # beyond the log end of its first poll only (rules.out_of_range)
        return (
            f"Committed offset {d.commits[-1].offset} is {-d.lag} beyond the latest offset "
            "read at this poll, before the commit was: caught up (a second poll that reads it "
            "beyond would make it OUT_OF_RANGE)"
        )
    idle_ms, span_ms = _idle_and_span(d.commits, now_ms)
    old = ""
    if idle_ms > span_ms:
        old = f", although the last commit is {_secs(idle_ms)} old"
        if w.share:
            old = f", although the start offset last moved {_secs(idle_ms)} ago"
    return f"Current lag {d.lag} is within the allowed lag of {c.allowed_lag}{old}"


def _dead_consumer(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    idle_ms, _ = _idle_and_span(d.commits, now_ms)
    if w.share:
        return (
            f"No member holds the partition, the start offset has not moved for "
            f"{_secs(idle_ms)} and {d.lag} records wait: the queue has no consumer"
        )
    if _evidence(d, DEAD_CONSUMER)["source"] == "owner":
        return (
            f"Nobody owns the partition, no commit for {_secs(idle_ms)} and {d.lag} messages "
            "wait: the consumer is dead"
        )
    return (
        f"The spout neither acked nor failed anything and its commit has not moved for "
        f"{_secs(idle_ms)}, with {d.lag} messages waiting: the consumer is dead"
    )


def _stopped(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    idle_ms, span_ms = _idle_and_span(d.commits, now_ms)
    return (
        f"{_terms(w).not_moved} for {_secs(idle_ms)}, longer than the window's "
        f"{_secs(span_ms)} span, "
        f"{_waiting_clause(d.lag, d.commits[-1])}"
    )


def _stopped_but_alive(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    return f"{_stopped(d, w, c, now_ms)}, but {_alive_clause(d, w)}: stalled, not stopped"


def _rewind(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    commits = d.commits
    at = find_unrecovered_rewind(commits)
    assert at is not None, "rule rewind without a rewind"
    t = _terms(w)
    last = "now" if w.share else "last commit"
    return (
        f"{t.offset} went back from {commits[at - 1].offset} to "
        f"{commits[at].offset} and never climbed back ({last} {commits[-1].offset})"
    )


def _overdue_but_alive(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    idle_ms, span_ms = _idle_and_span(d.commits, now_ms)
    every_ms = span_ms // (len(d.commits) - 1)
    return (
        f"No commit for {_secs(idle_ms)}, more than half the window's {_secs(span_ms)} span and "
        f"{MISSED_INTERVALS} of its ~{_secs(every_ms)} commit intervals, "
        f"{_waiting_clause(d.lag, d.commits[-1])}, but {_alive_clause(d, w)}: stalled"
    )


def _share_poison(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    """The queue's rows on a poison record (``redelivering``, ``record_archived``,
    ``archived_caught_up``): the queue moves, the record's clause ends the sentence."""
    if d.lag <= c.allowed_lag:
        return (
            f"Current lag {d.lag} is within the allowed lag of {c.allowed_lag}, "
            "but a record was given up"
        )
    if d.rule == "record_archived":
        return f"The start offset moves with lag {d.lag}, but a record was given up"
    return f"The start offset moves with lag {d.lag}, but one record keeps failing"


def _caught_up(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    commit = had_lag_within_allowed(d.commits, c.allowed_lag)
    assert commit is not None, "rule caught_up without a commit within the allowed lag"
    return (
        f"Lag was {commit.lag} (allowed {c.allowed_lag}) at {_terms(w).a_commit} "
        f"{_secs(now_ms - commit.timestamp_ms)} ago: {_terms(w).consumer} caught up recently"
    )


def _stalled(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    offset = d.commits[-1].offset
    if w.share:
        return f"The start offset stayed at {offset} across the window, with lag {d.lag}"
    return f"All {len(d.commits)} commits in the window are at offset {offset} with lag {d.lag}"


def _stalled_and_dead(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    return f"{_stalled(d, w, c, now_ms)}, and nobody works on it: {_terms(w).consumer} is dead"


def _stalled_but_alive(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    return f"{_stalled(d, w, c, now_ms)}; {_alive_clause(d, w)} but not moving"


def _keeps_pace(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    jitter = lag_rise_within_jitter(d.commits)
    assert jitter is not None, "rule keeps_pace without a rise within jitter"
    rise, batch = jitter
    return (
        f"Lag rose by {rise} across the window's {len(d.commits)} {_terms(w).commits}, no more "
        f"than the {batch} messages read between two polls: {_terms(w).consumer} keeps pace"
    )


def _lag_rising(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    known = [commit.lag for commit in d.commits if commit.lag is not None]
    trend = f" (from {known[0]} to {known[-1]})" if known else ""
    return f"Lag never decreased across the window's {len(d.commits)} {_terms(w).commits}{trend}"


def _backpressured(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    return (
        f"Lag {d.lag} while the spout's tuples in flight sat at its max.spout.pending "
        f"({w.max_spout_pending}) for most of the window: downstream sets the pace, not the spout"
    )


def _catching_up(d: Decision, w: PartitionWindow, c: EvaluatorConfig, now_ms: int) -> str:
    drop = _last_drop(d.commits)
    return (
        f"Lag went down from {drop[0]} to {drop[1]} within the window: "
        f"{_terms(w).consumer} catches up"
    )


_BASES: dict[str, _Base] = {
    "source_unreachable": _source_unreachable,
    "collection_gap": _source_unreachable,
    "outage_grace": _source_unreachable,
    "no_commits": _no_commits,
    "out_of_range": _out_of_range,
    "not_enough_data": _not_enough_data,
    "archived_caught_up": _share_poison,
    "within_allowed_lag": _within_allowed_lag,
    "dead_consumer": _dead_consumer,
    "stopped_but_alive": _stopped_but_alive,
    "stopped": _stopped,
    "rewind": _rewind,
    "overdue_but_alive": _overdue_but_alive,
    "redelivering": _share_poison,
    "record_archived": _share_poison,
    "caught_up": _caught_up,
    "stalled_and_dead": _stalled_and_dead,
    "stalled_but_alive": _stalled_but_alive,
    "stalled": _stalled,
    "keeps_pace": _keeps_pace,
    "lag_rising": _lag_rising,
    "backpressured": _backpressured,
    "catching_up": _catching_up,
}
