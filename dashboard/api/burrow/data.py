"""Reads what the Burrow-compatible endpoints serve: a few queries per request.

**Which groups are Burrow "consumers".** Burrow lists Kafka-committed and ZooKeeper-committed
consumers of a cluster in one namespace, by group name; Lagwatch does the same for its Kafka
and ZooKeeper groups (a Kafka group wins if both sources have one name). Storm spouts are
listed as ``storm:<spout id>``: they commit to ZooKeeper under their own paths, which Burrow
would not read, and a spout id may equal a Kafka group's name.

**start and end.** Burrow keeps a window of commits per partition and reports its first and
last. Lagwatch's window lives in the Spark status job; here ``end`` is the partition's latest
state (committed offset, time of that commit, the poll that last saw it, its current lag) and
``start`` the oldest raw sample within one window's span before it (``window`` commits at one
per poll: ``LAGWATCH_EVALUATOR["window"]`` × the cluster's poll interval). A partition with
no committed offset has ``start`` and ``end`` null, as in Burrow before the first commit.

**Consumer detail.** Burrow lists the commits it keeps per partition (its ring of
``intervals``); Lagwatch lists the raw samples of that same span, one per poll, ended by
``end`` (``poll_offsets``, ``burrow.partition_offsets``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache

from django.conf import settings
from django.db import connection

from dashboard.api.burrow.shapes import Offset, PartitionRow
from dashboard.monitoring.models import (
    Cluster,
    ConsumerGroup,
    PartitionState,
    SourceKind,
)
from dashboard.store import raw_history

STORM_PREFIX = "storm:"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAMED = (SourceKind.KAFKA, SourceKind.ZOOKEEPER)


def cluster_names() -> list[str]:
    return list(Cluster.objects.order_by("name").values_list("name", flat=True))


def consumer_names(cluster: str) -> list[str] | None:
    """Burrow's consumer list of ``cluster``; None if there is no such cluster."""
    cluster_id = Cluster.objects.filter(name=cluster).values_list("id", flat=True).first()
    if cluster_id is None:
        return None
    names: set[str] = set()
    for source, name in ConsumerGroup.objects.filter(cluster_id=cluster_id).values_list(
        "source", "name"
    ):
        names.add(f"{STORM_PREFIX}{name}" if source == SourceKind.STORM else name)
    return sorted(names)


@dataclass(frozen=True)
class FoundGroup:
    """What a status document needs of a group (read with raw SQL: see ``find_group``)."""

    pk: int
    source: str
    status: str
    complete: float | None
    members: list
    topology_id: str
    last_seen_at: datetime
    poll_interval_s: int
    window: int = 10  # the cluster's evaluator window (its own threshold, else the deployment's)


def _epoch_ms(column: str) -> str:
    """SQL for a datetime column as Unix milliseconds: the database does the conversion, not
    a Python datetime per value (150 of them per 50-partition status)."""
    if connection.vendor == "postgresql":
        return f"CAST(EXTRACT(EPOCH FROM {column}) * 1000 AS BIGINT)"
    # SQLite stores UTC text; julianday() reads it. 2440587.5 is the Unix epoch's Julian day.
    return f"CAST(ROUND((julianday({column}) - 2440587.5) * 86400000.0) AS INTEGER)"


@cache
def _sql() -> tuple[str, str]:
    """The two queries, with the tables' names as the models give them."""
    q = connection.ops.quote_name
    groups, clusters = q(ConsumerGroup._meta.db_table), q(Cluster._meta.db_table)
    partitions = q(PartitionState._meta.db_table)
    group = (
        "SELECT g.id, g.source, g.name, g.status, g.complete, g.members, g.topology_id,"
        " g.last_seen_at, c.poll_interval_s, c.evaluator"
        f" FROM {groups} g JOIN {clusters} c ON c.id = g.cluster_id"
        " WHERE c.name = %s AND g.name IN (%s, %s)"
    )
    # "partition" is a keyword in some databases' grammars: quoted wherever it appears.
    part = q("partition")
    rows = (
        f"SELECT p.topic, p.{part}, p.owner, p.status, p.committed, p.lag, p.complete,"
        f" {_epoch_ms('p.last_commit_at')}, {_epoch_ms('p.sampled_at')}, p.present"
        f" FROM {partitions} p WHERE p.group_id = %s ORDER BY p.topic, p.{part}"
    )
    return group, rows


def _aware(at) -> datetime | None:
    """A datetime from a raw query: SQLite gives naive UTC (or text), PostgreSQL aware."""
    if at is None:
        return None
    if isinstance(at, str):
        at = datetime.fromisoformat(at)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def find_group(cluster: str, name: str) -> FoundGroup | None:
    """The group Burrow's ``cluster``/``name`` means, or None.

    This and ``partition_rows`` are the hot path of the Burrow-compatible status (scraped by
    Burrow clients every few seconds, per group): two raw queries instead of the ORM's, whose
    query building cost more than the queries themselves (docs/API.md, benchmark).
    """
    plain = name[len(STORM_PREFIX) :] if name.startswith(STORM_PREFIX) else name
    with connection.cursor() as cursor:
        cursor.execute(_sql()[0], [cluster, name, plain])
        found = cursor.fetchall()
    ranked = []
    for pk, source, gname, status, complete, members, topology_id, seen, poll, evaluator in found:
        if gname == name and source in _NAMED:
            rank = _NAMED.index(source)
        elif source == SourceKind.STORM and STORM_PREFIX + gname == name:
            rank = len(_NAMED)
        else:
            continue
        if isinstance(members, str | bytes):
            members = json.loads(members)
        if isinstance(evaluator, str | bytes):
            evaluator = json.loads(evaluator)
        ranked.append((rank, FoundGroup(pk, source, status, complete, members or [],
                                        topology_id, _aware(seen), poll,
                                        window(evaluator))))  # fmt: skip
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


def _client_ids(group: FoundGroup) -> dict[str, tuple[str, str]]:
    """member id -> (host, client id), for a Kafka group's partition owners."""
    found = {}
    for m in group.members:
        if isinstance(m, dict) and m.get("member_id"):
            found[str(m["member_id"])] = (str(m.get("host") or ""), str(m.get("client_id") or ""))
    return found


def window(cluster_evaluator: dict | None = None) -> int:
    """Commits in a status window: Burrow's ``intervals``, the length of its offset ring; a
    cluster's own evaluator window (``Cluster.evaluator``) wins over the deployment's."""
    own = (cluster_evaluator or {}).get("window")
    return int(own if own is not None else settings.LAGWATCH_EVALUATOR["window"])


def _window_start(group: FoundGroup) -> datetime:
    """One window's span before the group's last poll, at one commit per poll."""
    return group.last_seen_at - timedelta(seconds=group.window * max(group.poll_interval_s, 1))


def _ms(at: datetime) -> int:
    # Rounded as the SQL of ``_epoch_ms`` does, so both kinds of offsets agree.
    return round((at - _EPOCH) / timedelta(milliseconds=1))


Points = dict[tuple[str, int], list[raw_history.Point]]


def window_points(group: FoundGroup) -> Points:
    """Each partition's raw samples over one window's span before the group's last poll (one
    query): what both ``partition_rows`` and ``poll_offsets`` read, so a consumer detail
    reads and unpacks them once."""
    return raw_history.group_points(group.pk, _window_start(group))


def _start_offsets(points: Points) -> dict[tuple[str, int], Offset]:
    """Each partition's oldest raw sample with a committed offset within one window's span."""
    found: dict[tuple[str, int], Offset] = {}
    for key, partition in points.items():
        first = next((x for x in partition if x.committed is not None), None)
        if first is not None:
            found[key] = Offset(first.committed, _ms(first.at), _ms(first.at), first.lag)
    return found


def partition_rows(group: FoundGroup, points: Points | None = None) -> list[PartitionRow]:
    """``points``: ``window_points(group)``, when the caller has read them already."""
    with connection.cursor() as cursor:
        cursor.execute(_sql()[1], [group.pk])
        rows = cursor.fetchall()
    starts = _start_offsets(window_points(group) if points is None else points)
    members = _client_ids(group) if group.source == SourceKind.KAFKA else {}
    group_seen_ms = _ms(group.last_seen_at)
    found = []
    for (topic, partition, owner, status, committed, lag, complete, commit_ms,
         sampled_ms, present) in rows:  # fmt: skip
        # A row is rewritten only when its figures change: one still in the group was
        # sampled at the group's last poll (``PartitionState.present``).
        seen_ms = group_seen_ms if present and group_seen_ms > (sampled_ms or 0) else sampled_ms
        client_id = ""
        if group.source == SourceKind.KAFKA and owner in members:
            owner, client_id = members[owner]
        elif group.source == SourceKind.STORM:
            client_id = group.topology_id
        end = start = None
        if committed is not None:
            end = Offset(committed, commit_ms or seen_ms or 0, seen_ms or 0, lag)
            start = starts.get((topic, partition), end)
        found.append(
            PartitionRow(
                topic, partition, owner or "", client_id, status, lag, complete, start, end
            )  # fmt: skip
        )
    return found


def poll_offsets(
    group: FoundGroup, points: Points | None = None
) -> dict[tuple[str, int], list[Offset]]:
    """Each partition's raw samples with a committed offset over one window's span, before
    its latest poll (which ``end`` stands for), oldest first, as offsets timestamped with
    their poll: the history Burrow's consumer detail lists (``burrow.partition_offsets``).
    One query of about ``window`` rows of the group. A partition's newest point is its latest
    poll: the store writes a partition's state and its sample in one transaction, at one
    time."""
    found: dict[tuple[str, int], list[Offset]] = {}
    for key, partition in (window_points(group) if points is None else points).items():
        offsets = [
            Offset(x.committed, _ms(x.at), _ms(x.at), x.lag)
            for x in partition[:-1]
            if x.committed is not None
        ]
        if offsets:
            found[key] = offsets
    return found
