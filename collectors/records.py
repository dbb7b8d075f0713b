"""Plain records that every source adapter yields, whatever it reads.

Adapters (ZooKeeper, Kafka, Storm UI, ingest) know nothing of Django or of each other; they
turn what a source says into these dataclasses (frozen, but for ``CommittedOffset``, of which
a large cycle makes 100,000). The sample store and the derivations downstream only ever see
these, so a new source is one new adapter.

Times are epoch milliseconds (``int``), as Kafka and ZooKeeper give them; ``None`` always
means "the source did not say", never zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Source(StrEnum):
    KAFKA = "kafka"
    ZOOKEEPER = "zookeeper"
    STORM = "storm"
    # A broker's Prometheus JMX exporter (purgatory figures, DOMAIN §5). Its outage hides no
    # consumer's figures: it is a warning about the brokers, never a stale partition.
    BROKER_METRICS = "broker_metrics"
    # The sample log's object store, as the collector writing to it sees it: its outage hides
    # no figure (the batches wait in a local spool, collectors.sample_log.spool).
    SAMPLE_LOG = "sample_log"


@dataclass(frozen=True, slots=True)
class ShareStateFigures:
    """What the state topic says of one share-partition, for one cycle.

    ``max_deliveries``: the highest delivery count of the records the state holds (at or
    above the start offset); None when it holds none. ``redelivered_offset`` and
    ``redelivered_count``: the available record (delivered, come back, not yet done) with the
    highest delivery count, the lowest offset among equals; None when none came back.
    ``archived``: records archived that the fold remembers (``state.MAX_ARCHIVED_KEPT`` batches at
    most); ``archived_offset``, ``archived_count`` and ``archived_ms``: the newest of them
    (first offset, delivery count, when first seen archived). ``delivery_limit``: the group's
    ``share.delivery.count.limit`` (DescribeConfigs on the group; None: not read). Whether any
    of it is a poison record is the evaluator's to say (spark_jobs/evaluator).
    (``collectors.share_state`` folds ``__share_group_state`` into these.)"""

    max_deliveries: int | None = None
    redelivered_offset: int | None = None
    redelivered_count: int | None = None
    archived: int = 0
    archived_offset: int | None = None
    archived_count: int | None = None
    archived_ms: int | None = None
    delivery_limit: int | None = None


# ``ShareStateFigures``' fields as the sample log, the store and the status job name them.
SHARE_STATE_COLUMNS: tuple[str, ...] = (
    "share_max_deliveries", "share_redelivered_offset", "share_redelivered_count",
    "share_archived", "share_archived_offset", "share_archived_count", "share_archived_ms",
    "share_delivery_limit",
)  # fmt: skip


def share_state_values(figures: ShareStateFigures | None) -> tuple[int | None, ...]:
    """``figures`` in ``SHARE_STATE_COLUMNS``' order; all None when not read."""
    if figures is None:
        return (None,) * len(SHARE_STATE_COLUMNS)
    return (
        figures.max_deliveries, figures.redelivered_offset, figures.redelivered_count,
        figures.archived, figures.archived_offset, figures.archived_count, figures.archived_ms,
        figures.delivery_limit,
    )  # fmt: skip


@dataclass(slots=True, unsafe_hash=True)
class CommittedOffset:
    """A consumer's committed position on one partition, as one source reported it.

    For a Storm spout ``group`` is the spout id and ``owner`` the topology name.

    Not declared frozen, unlike the other records, because a large cluster's cycle builds
    100,000 of them: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__`` (twice a plain one's cost), and ``dataclasses.replace``, which the
    Kafka adapter used to add each commit's time from ``__consumer_offsets``, cost ~1 s per
    100,000 (benchmarks/RESULTS.md, "The adapter's records made cheaply"). The adapter that
    builds one may still fill in what it learns before its result leaves it
    (``collectors.kafka.offsets_topic``); after that, nothing changes it. It hashes as the
    frozen class did.
    """

    source: Source
    group: str
    topic: str
    partition: int
    offset: int
    commit_time_ms: int | None = None  # znode mtime, __consumer_offsets timestamp, …
    commit_version: int | None = None  # znode data version: the number of commits
    owner: str | None = None  # member / consumer thread / topology name
    topology_id: str | None = None
    broker: str | None = None  # "host:port" a Storm spout recorded
    where: str = ""  # znode path or object, for error messages and evidence
    # A share group's partition (KIP-932): ``offset`` is its share-partition start offset
    # (every record below it delivered and acknowledged, or given up), and ``reported_lag``
    # the lag its coordinator counts itself (KIP-1226, Kafka 4.2+). Records above the start
    # offset may be acknowledged already, so without a reported lag the lag computed from the
    # log end is an upper bound, and said to be one (``PartitionFigure.lag_upper_bound``).
    share: bool = False
    reported_lag: int | None = None
    # A share-partition's topic id (Kafka's text form), by which ``__share_group_state``
    # names it, and what that topic says of its records' deliveries (None: not read).
    topic_id: str | None = None
    share_state: ShareStateFigures | None = None


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """The broker's log start and end offsets of one partition at one time."""

    topic: str
    partition: int
    earliest: int | None
    latest: int | None
    time_ms: int


@dataclass(frozen=True, slots=True)
class TopicRetention:
    """A topic's retention settings as DescribeConfigs gave them at ``read_ms``.

    ``retention_ms``/``retention_bytes`` -1 mean no limit (Kafka's own convention);
    ``cleanup_policy`` is Kafka's comma-separated list ("delete", "compact", both).
    """

    topic: str
    retention_ms: int | None
    retention_bytes: int | None
    cleanup_policy: str
    read_ms: int


@dataclass(frozen=True, slots=True)
class StreamsTasks:
    """A streams group member's tasks (KIP-1071), each a (subtopology id, partition) pair,
    sorted: active tasks process (and commit) that partition of the subtopology's source
    topics; standby tasks replicate its state stores; warm-up tasks are standbys catching up
    before they become active."""

    active: tuple[tuple[str, int], ...] = ()
    standby: tuple[tuple[str, int], ...] = ()
    warmup: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    """One subtopology of a streams group's topology as its coordinator initialised it: the
    topics its tasks read (repartition topics included) and write."""

    subtopology_id: str
    source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member of a group as its source describes it.

    ``target_assignment`` and ``member_epoch`` exist only for KIP-848 (``consumer``) groups,
    where the broker computes a target and each member converges on it: a member whose
    assignment differs from its target is still reconciling. None means "not said".
    """

    member_id: str
    client_id: str | None = None
    host: str | None = None
    assignment: tuple[tuple[str, int], ...] = ()  # (topic, partition) pairs; () = unknown
    instance_id: str | None = None  # static membership (group.instance.id)
    member_epoch: int | None = None
    target_assignment: tuple[tuple[str, int], ...] | None = None
    # The topics the member subscribes to: as the broker says (KIP-848 groups), or as the
    # classic member told its group's leader (its MemberMetadata, which DescribeGroups returns
    # as the bytes the leader's assignor read): the assignors' what-if reads it. None = not
    # said (a regex subscription, bytes that are not a subscription, another source).
    subscription: tuple[str, ...] | None = None
    # Streams groups (KIP-1071) only: the Kafka Streams instance the member belongs to (one
    # process may run several members), and its tasks now and as the coordinator targets them;
    # ``assignment``/``target_assignment`` are then the partitions of its active tasks.
    process_id: str | None = None
    tasks: StreamsTasks | None = None
    target_tasks: StreamsTasks | None = None


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """What a source says about a group's membership at one time."""

    source: Source
    group: str
    state: str | None  # Kafka's state name, or None when the source cannot tell
    # Kafka: the group epoch (KIP-848) or the classic generation from __consumer_offsets;
    # ZooKeeper consumers: the cversion of /ids; None: unknown.
    generation: int | None = None
    assignor: str | None = None
    coordinator: str | None = None
    # Kafka's group type: "classic", "consumer" (KIP-848), "share" (KIP-932: a queue; its
    # members share partitions, and its progress is a start offset, not a commit) or
    # "streams" (KIP-1071: Kafka Streams; tasks assigned from its topology, offsets committed).
    protocol_type: str | None = None
    assignment_epoch: int | None = None  # KIP-848: the epoch of the target assignment
    members: tuple[GroupMember, ...] = ()
    members_known: bool = True  # False when the broker did not report members (LAB.md)
    topics: tuple[str, ...] = ()
    # A Kafka group that is a Storm 2 spout (storm-kafka-client): the topology instance its
    # commits' metadata names (collectors/storm_commit_metadata.py). None for any other group.
    topology_id: str | None = None
    # A streams group's topology (KIP-1071): its epoch and subtopologies, as its coordinator
    # initialised them; None for other groups, and for a streams group not initialised yet.
    topology_epoch: int | None = None
    subtopologies: tuple[Subtopology, ...] | None = None


@dataclass(frozen=True, slots=True)
class SpoutFigures:
    """Pending / failed / acked counts of one Storm spout (partition=None: whole spout).

    ``pending`` is the partition's (storm-kafka's ``_pending`` set); ``spout_pending`` is the
    spout task's tuples in flight, the figure ``topology.max.spout.pending`` caps (DOMAIN §2).
    They differ: offsets a pending leak keeps in ``_pending`` are no longer in flight, and a
    task reading several partitions is capped on their sum.
    """

    topology_id: str
    spout_id: str
    emitted: int | None = None
    acked: int | None = None
    failed: int | None = None
    pending: int | None = None
    complete_latency_ms: float | None = None
    topic: str | None = None
    partition: int | None = None
    smallest_failed_offset: int | None = None
    max_offset_behind: int | None = None
    max_spout_pending: int | None = None
    spout_pending: int | None = None
    time_ms: int | None = None  # when the figures were true (ingest: pushed or received)
    # Storm UI's: the topology's name (unique in a Storm cluster, kept across resubmissions).
    topology_name: str | None = None


@dataclass(frozen=True, slots=True)
class GenerationChange:
    """A group's generation change as its source recorded it, not inferred between polls.

    Kafka's ``__consumer_offsets`` holds one group-metadata record per generation of a
    classic group, so every rebalance is there with its time and number, including those
    that began and ended between two polls. ``causes`` use ``collectors.rebalance``'s names,
    most telling first; ``detail`` is JSON-serialisable evidence (members joined and left,
    leader and protocol before and after).
    """

    group: str
    time_ms: int
    generation: int
    generation_before: int | None
    causes: tuple[str, ...]
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordedDeletion:
    """A group or some of its committed offsets removed, as the coordinator's own log records
    it (a tombstone in ``__consumer_offsets``). ``kind`` is ``group_deleted`` (the group's
    metadata removed: deleted by an admin, or expired empty) or ``offsets_deleted`` (commits
    removed: expired after ``offsets.retention.minutes``, or deleted; the tombstone does not
    say which). Polls see a deleted group only as one that is no longer listed.
    """

    group: str
    time_ms: int
    kind: str
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BrokerFigures:
    """One broker's delayed operations as its metrics endpoint said (DOMAIN §5).

    ``broker`` is the endpoint's ``host:port`` (the exporter does not name the broker id).
    ``*_purgatory``: operations parked now (Kafka's ``NumDelayedOperations``); ``*_watched``:
    Kafka's ``PurgatorySize`` (watcher entries, completed operations included until the next
    purge). ``*_expires_per_s``: expirations per second between this scrape and the previous
    one (None on the first scrape, after a counter reset, or when the broker has not created
    the meter yet). ``error`` set: the scrape failed and every figure is None.
    """

    broker: str
    url: str
    as_of_ms: int
    fetch_purgatory: int | None = None
    produce_purgatory: int | None = None
    fetch_watched: int | None = None
    produce_watched: int | None = None
    fetch_expires_per_s: float | None = None
    produce_expires_per_s: float | None = None
    error: str = ""


@dataclass(frozen=True, slots=True)
class SourceError:
    """A problem confined to one place of one source; the cycle goes on."""

    source: Source
    where: str
    error: str


@dataclass(slots=True)
class CollectionResult:
    """Everything one adapter read in one cycle.

    ``reachable`` False means the source itself could not be reached: downstream marks its
    figures stale and reports SOURCE_UNREACHABLE, never a stuck consumer.
    """

    source: Source
    started_ms: int
    finished_ms: int = 0
    reachable: bool = True
    commits: list[CommittedOffset] = field(default_factory=list)
    offsets: list[PartitionOffsets] = field(default_factory=list)
    groups: list[GroupSnapshot] = field(default_factory=list)
    spouts: list[SpoutFigures] = field(default_factory=list)
    errors: list[SourceError] = field(default_factory=list)
    partition_counts: dict[str, int] = field(default_factory=dict)
    # Rebalances the source itself recorded (``__consumer_offsets``), for the groups it names.
    generation_changes: list[GenerationChange] = field(default_factory=list)
    # Groups and commits the source recorded as removed (``__consumer_offsets`` tombstones).
    deletions: list[RecordedDeletion] = field(default_factory=list)
    # Brokers' purgatory figures (``Source.BROKER_METRICS`` only), one per endpoint.
    brokers: list[BrokerFigures] = field(default_factory=list)
    # Retention settings of the topics whose config was due for a re-read (Kafka only).
    topic_configs: list[TopicRetention] = field(default_factory=list)
    # Storm UI only: the topology instances its summary listed (id -> name), including those
    # whose page could not be read this cycle (listed: running, whatever their figures).
    topologies: dict[str, str] = field(default_factory=dict)
    # What identifies the system read, as marks that never change in its life (Kafka: the
    # cluster id; ZooKeeper: each watched root's creation, ``collectors.identity``).
    identity: dict[str, str] = field(default_factory=dict)
