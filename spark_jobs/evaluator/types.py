"""The evaluator's vocabulary: statuses, diagnosis codes, and the values that go in and out.

Kept apart from the rules so that every other module of the package (rules, the decide table,
the reasons, the ``evaluate_window`` document) and every caller can share one definition
without importing the logic; nothing here decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Statuses: Burrow's names, plus UNKNOWN for a partition whose source could not be reached.
OK = "OK"
WARN = "WARN"
ERR = "ERR"
STOP = "STOP"
STALL = "STALL"
REWIND = "REWIND"
UNKNOWN = "UNKNOWN"
STATUSES = (OK, UNKNOWN, WARN, ERR, STOP, STALL, REWIND)

# Diagnoses. State diagnoses explain a non-OK verdict; event diagnoses report something that
# happened in the window and are attached whatever the status.
SOURCE_UNREACHABLE = "SOURCE_UNREACHABLE"
OUT_OF_RANGE = "OUT_OF_RANGE"
DEAD_CONSUMER = "DEAD_CONSUMER"
POISON_MESSAGE = "POISON_MESSAGE"
PENDING_LEAK = "PENDING_LEAK"
BACKPRESSURE = "BACKPRESSURE"
SLOW_CONSUMER = "SLOW_CONSUMER"
REBALANCING = "REBALANCING"
REBALANCE_STORM = "REBALANCE_STORM"
SKIPPED_DATA = "SKIPPED_DATA"
TOPOLOGY_RESTARTED = "TOPOLOGY_RESTARTED"
SPOUT_ID_COLLISION = "SPOUT_ID_COLLISION"
# A forecast on any status (spark_jobs/evaluator/retention.py, decided in decide).
RETENTION_RISK = "RETENTION_RISK"
# A topic's, never a partition's (spark_jobs/evaluator/producer_expiry.py).
PRODUCER_EXPIRY = "PRODUCER_EXPIRY"

# ---------------------------------------------------------------------------------------------
# Inputs and outputs


@dataclass(frozen=True, slots=True)
class EvaluatorConfig:
    """Thresholds of the rules; the defaults are Burrow's (window of 10, no allowed lag).

    ``rebalance_storm_count`` is K of REBALANCE_STORM (more than K rebalances in the window);
    ``backpressure_share`` is the share of spout samples at ``max.spout.pending`` that makes
    "most of the window" for BACKPRESSURE; ``retention_risk_s`` is RETENTION_RISK's horizon
    (0 turns it off), the cluster's ``retention_risk_s`` in the status job.
    ``history_from_ms`` is when the partition's cluster's offsets history started over (a
    cluster rebuilt under the same name; 0: never): commits and polls before it belong to
    another cluster's life and are no evidence (``decide.since_history``).
    """

    allowed_lag: int = 0
    minimum_complete: float = 0.0
    window: int = 10
    min_distance_s: float = 0.0
    rebalance_storm_count: int = 3
    backpressure_share: float = 0.8
    retention_risk_s: int = 3600
    history_from_ms: int = 0

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError("window must be at least 1 commit")
        if self.allowed_lag < 0 or self.min_distance_s < 0 or self.rebalance_storm_count < 0:
            raise ValueError("allowed_lag, min_distance_s and rebalance_storm_count must be >= 0")
        if not 0.0 <= self.minimum_complete <= 1.0:
            raise ValueError("minimum_complete must be between 0 and 1")
        if not 0.0 < self.backpressure_share <= 1.0:
            raise ValueError("backpressure_share must be in (0, 1]")
        if self.retention_risk_s < 0:
            raise ValueError("retention_risk_s must be >= 0")
        if self.history_from_ms < 0:
            raise ValueError("history_from_ms must be >= 0")


@dataclass(frozen=True, slots=True)
class Commit:
    """One committed offset of the window.

    ``lag`` is the lag when the commit was seen (None: unknown). ``earliest`` and ``latest``
    are the broker's log start and end offsets at that time, when known: they are what reveals
    an out-of-range jump (SKIPPED_DATA), below the log start or beyond the end of a log that
    was deleted and re-created.
    """

    offset: int
    timestamp_ms: int
    lag: int | None = None
    earliest: int | None = None
    latest: int | None = None


@dataclass(frozen=True, slots=True)
class SpoutSeries:
    """A Storm spout's figures for the partition, one value per sample, oldest first.

    ``acked`` and ``failed`` are cumulative counters (a decrease is a restart, not negative
    work); ``pending`` is a gauge. They are the partition's own when the spout pushes them;
    from Storm UI alone, the whole spout's counters (the same on each of its partitions, since
    Storm counts per spout), and no ``pending``.
    """

    pending: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()
    acked: tuple[int, ...] = ()


# How many poll intervals may pass after the newest sample before its figures are taken for
# the last known ones, not the current ones: the window is stale (``rules.collection_gap``:
# UNKNOWN, SOURCE_UNREACHABLE) and the sources page says collection stopped.
COLLECTION_GAP_POLLS = 3


@dataclass(frozen=True, slots=True)
class PartitionWindow:
    """Everything known about one partition: its window of commits and current figures.

    The first eight fields are the issue's JSON; Burrow has exactly those with ``earliest``,
    ``latest``, ``alive`` and ``spout`` unknown. The rest are optional evidence (None or empty:
    unknown) that the collectors can supply:

    - ``stale``/``stale_since_ms``: the source was unreachable; the figures are the last known;
    - ``max_spout_pending``: ``topology.max.spout.pending``, for BACKPRESSURE;
    - ``spout_pending``: the spout task's tuples in flight at each sample, oldest first: what
      ``max_spout_pending`` caps (the task's partitions together, DOMAIN §2). BACKPRESSURE
      reads it, or the partition's own ``spout.pending`` when it is not given;
    - ``smallest_failed_offset``: the offset a spout keeps retrying, for POISON_MESSAGE;
    - ``rebalances_ms``: times of the group's rebalances (generation changes) seen lately;
    - ``rebalancing``: the group is rebalancing now (nobody owning the partition is expected);
    - ``owner_missing_polls``: how many of the newest polls in a row found nobody holding the
      partition (``alive`` false at each), among the samples the window was made from (a run
      from the incremental state has at least the newest two: exact up to the rule's
      threshold of two); None: not counted, ``alive`` alone is the word;
    - ``topology_ids``: topology instance ids seen on the spout path, oldest first;
    - ``topics``: topics seen written under the spout path;
    - ``polls``: how many polls of the partition the window spans (the status job: samples
      since the one that first saw the window's first commit). Its presence says the lags
      were measured at polls, not when the commits arrived (see ``lag_rise_within_jitter``);
    - ``poll_times_ms``: the times of those polls and of the one before them, oldest first
      (the status job): their spacing is the partition's poll interval and the last is the
      newest sample, for ``stale_gap`` (nothing collected for a while);
    - ``down_polls_ms``: the times of the polls, since the committed offset was last reached,
      at which the source could not be reached, oldest first, for
      ``source_down_since_commit`` (the grace after an outage);
    - ``time_lag_s``: the age of the oldest unconsumed message at the newest poll
      (collectors/timelag.py), and the topic's ``retention_ms`` and ``cleanup_policy``
      (DescribeConfigs, stored per topic; None: never read or unreadable): the retention
      forecast and RETENTION_RISK (``retention.time_to_retention``);
    - ``share``: a share group's partition (KIP-932, a queue): its "commits" are the moves of
      its start offset, which the reasons say; ``lag_upper_bound``: its lag is start offset to
      log end (a broker before KIP-1226), at most the real one, which the reasons say too;
    - ``share_redelivered_offset``/``_count``: at the newest poll, the share-partition's
      record delivered most often that came back to be delivered again, and its delivery
      count; ``share_archived_offset``/``_count``/``_ms``: the newest record it archived
      (given up), its delivery count and when it was first seen archived;
      ``share_delivery_limit``: the group's ``share.delivery.count.limit``. All from
      ``__share_group_state`` (collectors/share_state), for the queue's POISON_MESSAGE.

    ``stale`` is the source's own word at the newest poll; whether older figures or an older
    outage make the window stale is the evaluator's decision (``decide``), from the times.
    """

    id: str
    commits: tuple[Commit, ...]
    latest_offsets: tuple[int, ...]
    current_lag: int
    earliest: int | None = None
    latest: int | None = None
    alive: bool | None = None
    spout: SpoutSeries | None = None
    stale: bool = False
    stale_since_ms: int | None = None
    max_spout_pending: int | None = None
    smallest_failed_offset: int | None = None
    spout_pending: tuple[int, ...] = ()
    rebalances_ms: tuple[int, ...] = ()
    rebalancing: bool | None = None
    owner_missing_polls: int | None = None
    topology_ids: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    polls: int | None = None
    poll_times_ms: tuple[int, ...] = ()
    down_polls_ms: tuple[int, ...] = ()
    time_lag_s: float | None = None
    retention_ms: int | None = None
    cleanup_policy: str | None = None
    share: bool = False
    lag_upper_bound: bool = False
    share_redelivered_offset: int | None = None
    share_redelivered_count: int | None = None
    share_archived_offset: int | None = None
    share_archived_count: int | None = None
    share_archived_ms: int | None = None
    share_delivery_limit: int | None = None


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """A named finding and the figures that support it (JSON-ready values only)."""

    code: str
    evidence: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PartitionVerdict:
    """Status, completeness and explanation of one partition.

    ``lag`` is the current lag the rules used (recomputed from ``latest`` when known); it is
    None only when no lag can be stated (committed beyond the latest offset).
    ``retention_left_s`` is the retention forecast's figure: seconds before time-based
    retention may delete the oldest unconsumed message (0: already past it), None when there
    is no such forecast; stored whatever the RETENTION_RISK threshold.
    """

    id: str
    status: str
    complete: float
    diagnosis: tuple[Diagnosis, ...]
    reason: str
    lag: int | None
    retention_left_s: float | None = None


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    id: str
    status: str
    complete: float
    total_lag: int
    partitions: tuple[PartitionVerdict, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupWindows:
    id: str
    partitions: tuple[PartitionWindow, ...]


@dataclass(frozen=True, slots=True)
class EvaluationRequest:
    """A parsed ``evaluate_window`` document."""

    config: EvaluatorConfig
    now_ms: int
    partitions: tuple[PartitionWindow, ...]
    groups: tuple[GroupWindows, ...]


class WindowInputError(ValueError):
    """Bad input; the message starts with the path of the offending field."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")
