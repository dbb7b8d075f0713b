"""The diagnoses: what the evidence says about a partition, with the figures that show it.

Apart from the predicates because they do not decide the status, they explain it: *state*
diagnoses (the spout's figures, a slow consumer) are attached to the non-OK verdicts the table
names, *event* diagnoses to every verdict. Their evidence is JSON-ready, since it is stored and
shown as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from spark_jobs.evaluator.rates import Sample, rates
from spark_jobs.evaluator.rules import (
    counter_rise,
    record_archived,
    record_redelivering,
    spout_at_cap,
)
from spark_jobs.evaluator.types import (
    BACKPRESSURE,
    PENDING_LEAK,
    POISON_MESSAGE,
    REBALANCE_STORM,
    REBALANCING,
    SKIPPED_DATA,
    SLOW_CONSUMER,
    SPOUT_ID_COLLISION,
    TOPOLOGY_RESTARTED,
    Commit,
    Diagnosis,
    EvaluatorConfig,
    PartitionWindow,
)


def share_diagnoses(window: PartitionWindow, commits: Sequence[Commit]) -> list[Diagnosis]:
    """What a share-partition's state says (KIP-932): POISON_MESSAGE for a record being
    redelivered now, and for one redelivered until it was archived within the window, each
    naming its offset, deliveries and the group's limit (``archived`` tells them apart)."""
    found = []
    again = record_redelivering(window)
    if again is not None:
        found.append(Diagnosis(POISON_MESSAGE, again))
    gone = record_archived(window, commits)
    if gone is not None:
        found.append(Diagnosis(POISON_MESSAGE, gone))
    return found


def state_diagnoses(
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
    failed_rise = counter_rise(spout.failed)
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
    at_cap = spout_at_cap(window, config)
    if at_cap is not None:
        found.append(Diagnosis(BACKPRESSURE, at_cap))
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


def slow_consumer(commits: Sequence[Commit], lag: int) -> Diagnosis | None:
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
    """The out-of-range jump: a commit below the log start followed by one at or past it, or, where
    the topic was deleted and re-created, a commit that the new log does not reach (beyond
    the log end of the next commit) followed by one inside the new log, above its start.
    Either way the consumer jumped over what the log held from its start to the new commit.
    A poll need not catch the commit while it lies outside the log: the consumer may jump
    between two polls (the lab's ``retention``: 233 with the log ending at 237, then 14 with
    the new log ending at 16). "At" counts: real storm-kafka resumes at the log start and,
    with nothing in flight, commits exactly that offset (docs/DOMAIN.md §1): the deleted
    records were skipped all the same."""
    for previous, commit in zip(commits, commits[1:], strict=False):
        start = commit.earliest
        if start is None:
            continue
        if previous.offset < start <= commit.offset:
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


def event_diagnoses(
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
