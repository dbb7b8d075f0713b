"""Answers about consumer groups and their partitions: the group (list and detail), the
partition, and the pieces they share (statuses, diagnoses, trends, retention, members).

The schemas read the ORM rows directly (attributes, ``resolve_*`` for what is computed), so
each key is written in one place, here. What a view reads for a whole page at once
(``trend``, ``topic_config``, the group totals) it attaches to the rows first
(``dashboard/api/queries.py``); what it reads for one answer it attaches the same way.
Names from the monitored systems are returned as they are: JSON escapes them, and a client
that renders them into HTML must escape them itself.
"""

from typing import Annotated, Any

from pydantic import Field, WithJsonSchema

from dashboard.api.schemas.common import Closed, Number, Time, TimeText, one_of, page_of
from dashboard.api.schemas.documents import Balance, SpoutFigures, WhatIfEntry
from dashboard.monitoring.membership import (
    GROUP_TYPES,
    group_type,
    member_details,
    topology_detail,
)
from dashboard.monitoring.models import SourceKind, Status, seen_at
from dashboard.monitoring.share_state import share_state_document
from dashboard.monitoring.trends import retention_dict

StatusName = one_of(Status.values)
Source = one_of(SourceKind.values)


# Diagnoses and stored members are written as stored: nothing is dropped or added.
Diagnoses = Annotated[
    list[dict[str, Any]],
    WithJsonSchema({
        "type": "array",
        "items": {
            "type": "object",
            "description": "A finding of the status evaluator (docs/EVALUATOR.md) with its "
            "evidence.",
            "properties": {"code": {"type": "string"}, "evidence": {"type": "object"}},
            "required": ["code"],
        },
    }),
]  # fmt: skip
StoredMember = Annotated[
    dict[str, Any],
    WithJsonSchema({
        "type": "object",
        "properties": {"member_id": {}, "client_id": {}, "host": {}, "assignment": {}},
        "description": "Members as stored (kept for existing clients; member_details is the "
        "fuller form).",
    }),
]  # fmt: skip


def diagnosis_list(value: Any) -> list:
    """A stored diagnosis (null before the first evaluation) as the list the API writes."""
    return value or []


class StreamsTasks(Closed):
    """A streams group member's tasks (KIP-1071): partitions by subtopology id."""

    active: dict[str, list[int]]
    standby: dict[str, list[int]]
    warmup: dict[str, list[int]]


class MemberDetail(Closed):
    """A member; ``process_id``, ``tasks`` and ``target_tasks`` are a streams group's member's
    (its assignment is then the partitions of its active tasks), null for other members."""

    member_id: str | None
    client_id: str | None
    host: str | None
    instance_id: str | None
    member_epoch: int | None
    assignment: dict[str, list[int]]
    target_assignment: dict[str, list[int]] | None
    process_id: str | None
    tasks: StreamsTasks | None
    target_tasks: StreamsTasks | None


class Subtopology(Closed):
    id: str
    source_topics: list[str]
    repartition_sink_topics: list[str]
    state_changelog_topics: list[str]


class Topology(Closed):
    """A streams group's topology as its coordinator initialised it (subtopologies null until
    it is initialised)."""

    epoch: int | None
    subtopologies: list[Subtopology] | None


class Trend(Closed):
    """The newest Spark rollup (docs/SPARK_JOBS.md): rates per second, lag slope, seconds to
    drain (null: not draining, or unknown). A group's is its newest minute, a partition's its
    newest hour; null when there is none within 30 min (group) or 2 h (partition)."""

    produce_per_s: Number | None
    consume_per_s: Number | None
    lag_slope_per_s: Number | None
    direction: one_of(("rising", "falling", "flat")) | None
    eta_s: Number | None
    bucket_start: TimeText
    resolution: one_of(("1m", "1h"))


class Retention(Closed):
    """The retention forecast (docs/EVALUATOR.md): seconds before time-based retention may
    delete the oldest unconsumed message (null: no forecast: config unknown, infinite,
    compact-only, caught up, source down), and the topic settings it rests on (null: never
    read)."""

    seconds_left: Number | None
    retention_ms: int | None
    retention_bytes: int | None
    cleanup_policy: str | None
    config_read_at: TimeText | None


def _trend(row: Any) -> dict | None:
    trend = getattr(row, "trend", None)
    return None if trend is None else trend.as_dict()


class Group(Closed):
    """A group with its partitions' current totals (``queries.groups_with_figures``),
    fresher than the status job's copy on the group row. ``member_details`` is the same
    document as ``lagwatch_status --json``'s (null where the source does not report members),
    so a script can move between the two."""

    id: int
    cluster: str = Field(alias="cluster.name")
    source: Source
    name: str
    status: StatusName
    status_since: Time | None
    evaluated_at: Time | None
    complete: Number | None
    stale: bool
    partitions: int | None
    total_lag: int | None
    max_time_lag_s: Number | None
    type: one_of(GROUP_TYPES) | None
    state: str
    generation: int | None
    assignment_epoch: int | None
    members: int
    member_details: list[MemberDetail] | None
    topology: Topology | None
    owner: str
    topology_id: str
    first_seen_at: Time
    last_seen_at: Time
    last_commit_at: Time | None
    trend: Trend | None
    retention_left_s: Number | None

    @staticmethod
    def resolve_partitions(group: Any) -> int | None:
        return getattr(group, "partition_count", None)

    @staticmethod
    def resolve_total_lag(group: Any) -> int | None:
        return getattr(group, "lag_sum", None)

    @staticmethod
    def resolve_max_time_lag_s(group: Any) -> float | None:
        return getattr(group, "time_lag_max", None)

    @staticmethod
    def resolve_last_commit_at(group: Any) -> Any:
        return getattr(group, "last_commit_max", None)

    @staticmethod
    def resolve_type(group: Any) -> str | None:
        return group_type(group.source, group.group_type)

    @staticmethod
    def resolve_members(group: Any) -> int:
        return len(group.members or [])

    @staticmethod
    def resolve_member_details(group: Any) -> list | None:
        return member_details(group.members) if group.members_known else None

    @staticmethod
    def resolve_topology(group: Any) -> dict | None:
        return topology_detail(group.topology)

    @staticmethod
    def resolve_trend(group: Any) -> dict | None:
        return _trend(group)

    @staticmethod
    def resolve_retention_left_s(group: Any) -> float | None:
        # The soonest retention deadline of its partitions (spark_jobs/evaluator/retention.py).
        return getattr(group, "retention_left_min", None)


class GroupRow(Closed):
    """The first keys of every row about a group (a partition, a status change, a rebalance):
    its own id, and the group's id and names."""

    id: int
    group_id: int
    cluster: str = Field(alias="group.cluster.name")
    source: Source = Field(alias="group.source")
    group: str = Field(alias="group.name")


class PartitionRef(GroupRow):
    """Which partition: its ids and names (also the first keys of every partition answer)."""

    topic: str
    partition: int


class Redelivered(Closed):
    offset: int
    deliveries: int | None


class Archived(Closed):
    offset: int
    deliveries: int | None
    at: TimeText | None = Field(description="When the record was first seen archived.")


class ShareState(Closed):
    """What ``__share_group_state`` says of a share group's partition (KIP-932)."""

    max_deliveries: int | None = Field(
        description="The highest delivery count of the records the share-partition's state "
        "holds (at or above its start offset)."
    )
    redelivered: Redelivered | None = Field(
        description="The record delivered most often that came back (released, or its "
        "acquisition lock timed out) and waits to be delivered again."
    )
    archived: int = Field(description="Records archived (given up) the collector remembers.")
    last_archived: Archived | None = Field(description="The newest of them.")
    delivery_limit: int | None = Field(
        description="The group's share.delivery.count.limit (null: not read)."
    )


class Partition(PartitionRef):
    committed: int | None = Field(
        description="The committed offset; a share group's start offset (KIP-932)."
    )
    earliest: int | None
    latest: int | None
    lag: int | None
    lag_upper_bound: bool = Field(
        description="The lag is an upper bound (a share group on a broker before KIP-1226)."
    )
    time_lag_s: Number | None
    time_lag_kind: str
    owner: str
    alive: bool | None
    last_commit_at: Time | None
    pending: int | None
    failed: int | None
    acked: int | None
    status: StatusName
    status_since: Time | None
    diagnosis: Diagnoses
    reason: str
    complete: Number | None
    evaluated_at: Time | None
    stale: bool
    sampled_at: Time
    present: bool
    trend: Trend | None
    retention: Retention
    share_state: ShareState | None = Field(
        description="A share group's deliveries and archived records; null for other groups "
        "and where the state topic was not read."
    )

    @staticmethod
    def resolve_share_state(p: Any) -> dict | None:
        return share_state_document(p)

    @staticmethod
    def resolve_diagnosis(p: Any) -> list:
        return diagnosis_list(p.diagnosis)

    @staticmethod
    def resolve_sampled_at(p: Any) -> Any:
        return seen_at(p.present, p.sampled_at, p.group.last_seen_at)

    @staticmethod
    def resolve_trend(p: Any) -> dict | None:
        return _trend(p)

    @staticmethod
    def resolve_retention(p: Any) -> dict:
        return retention_dict(p.retention_left_s, getattr(p, "topic_config", None))


class GroupDetail(Group):
    """The view attaches ``partition_list`` (with trends), ``assignment`` (``balance``,
    ``what_if``, ``what_if_subscriptions``, computed from the rows already read) and
    ``spouts``."""

    assignor: str
    coordinator: str
    members_known: bool
    member_list: list[StoredMember]
    partition_list: list[Partition]
    balance: Balance
    what_if: list[WhatIfEntry] | None
    what_if_subscriptions: one_of(("reported", "inferred", "partly reported")) | None
    spouts: list[SpoutFigures] = Field(
        description="A Storm spout group: the latest figures of its topology's spouts (Storm "
        "UI and the spout's push); empty for other groups."
    )

    @staticmethod
    def resolve_member_list(group: Any) -> list[dict]:
        return [
            {key: m.get(key) for key in ("member_id", "client_id", "host", "assignment")}
            for m in (group.members or [])
            if isinstance(m, dict)
        ]

    @staticmethod
    def resolve_balance(group: Any) -> dict:
        return group.assignment["balance"]

    @staticmethod
    def resolve_what_if(group: Any) -> list | None:
        return group.assignment["what_if"]

    @staticmethod
    def resolve_what_if_subscriptions(group: Any) -> str | None:
        return group.assignment["what_if_subscriptions"]


GroupPage = page_of(Group, "GroupPage")
PartitionPage = page_of(Partition, "PartitionPage")
