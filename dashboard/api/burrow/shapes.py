"""Burrow's HTTP response shapes (linkedin/Burrow ``core/internal/httpserver``,
``core/protocol``), built from Lagwatch's rows: pure functions, no database.

Field names, nesting and types follow Burrow's Go structs as its JSON encoder writes them:

- envelope: ``error`` (bool), ``message`` (str), the payload key, ``request`` {``url``,
  ``host``};
- ``ConsumerGroupStatus``: ``cluster``, ``group``, ``status``, ``complete`` (float),
  ``partitions`` (list), ``partition_count`` (int), ``maxlag`` (a partition or null),
  ``totallag`` (int);
- ``PartitionStatus``: ``topic``, ``partition``, ``owner``, ``client_id``, ``status``,
  ``start``, ``end`` (offsets or null), ``current_lag`` (int), ``complete`` (float);
- ``ConsumerOffset``: ``offset``, ``timestamp`` (ms), ``observedAt`` (ms), ``lag`` (int or
  null);
- consumer detail (``httpResponseConsumerDetail``): ``topics`` = ``ConsumerTopics``, a map of
  topic to a list indexed by partition id of ``ConsumerPartition``: ``offsets`` (a list of
  ``ConsumerOffset``, oldest first), ``owner``, ``client_id``, ``current-lag`` (int, with a
  hyphen: Burrow's tag).

Statuses map onto Burrow's (``NOTFOUND OK WARN ERR STOP STALL REWIND``): UNKNOWN, Lagwatch's
"no verdict yet" (not enough data, or the source unreachable), is Burrow's answer for an
incomplete window: OK with ``complete`` 0. At group level STOP, STALL and REWIND are ERR, as
Burrow's evaluator does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

STATUSES = ("NOTFOUND", "OK", "WARN", "ERR", "STOP", "STALL", "REWIND")
_GROUP_WORST = {"STOP", "STALL", "REWIND"}


@dataclass(frozen=True)
class Offset:
    offset: int
    timestamp_ms: int
    observed_ms: int
    lag: int | None


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    owner: str
    client_id: str
    status: str  # Lagwatch's
    current_lag: int | None
    complete: float | None
    start: Offset | None
    end: Offset | None


def partition_status(status: str) -> str:
    return status if status in STATUSES[1:] else "OK"


def group_status(status: str) -> str:
    mapped = partition_status(status)
    return "ERR" if mapped in _GROUP_WORST else mapped


def offset_doc(o: Offset | None) -> dict | None:
    if o is None:
        return None
    return {"offset": o.offset, "timestamp": o.timestamp_ms, "observedAt": o.observed_ms,
            "lag": o.lag}  # fmt: skip


def partition_doc(row: PartitionRow) -> dict:
    status = partition_status(row.status)
    complete = 0.0 if row.status not in STATUSES or row.complete is None else row.complete
    return {
        "topic": row.topic,
        "partition": row.partition,
        "owner": row.owner,
        "client_id": row.client_id,
        "status": status,
        "start": offset_doc(row.start),
        "end": offset_doc(row.end),
        "current_lag": max(row.current_lag or 0, 0),
        "complete": float(complete),
    }


def status_doc(
    cluster: str, group: str, status: str, complete: float | None,
    rows: Sequence[PartitionRow], show_all: bool,
) -> dict:  # fmt: skip
    """Burrow's ``ConsumerGroupStatus``: ``/lag`` (``show_all``) lists every partition,
    ``/status`` only those not OK; ``maxlag`` and ``totallag`` always cover them all."""
    docs = [partition_doc(r) for r in rows]
    maxlag = None
    for doc in docs:  # the first partition with the largest lag, as Burrow picks it
        if maxlag is None or doc["current_lag"] > maxlag["current_lag"]:
            maxlag = doc
    if complete is None:
        complete = sum(1 for d in docs if d["complete"] >= 1.0) / len(docs) if docs else 0.0
    return {
        "cluster": cluster,
        "group": group,
        "status": group_status(status),
        "complete": float(complete),
        "partitions": docs if show_all else [d for d in docs if d["status"] != "OK"],
        "partition_count": len(docs),
        "maxlag": maxlag,
        "totallag": sum(d["current_lag"] for d in docs),
    }


def partition_offsets(row: PartitionRow, polls: Sequence[Offset], window: int) -> list[Offset]:
    """The offsets Burrow's detail lists for one partition, oldest first, at most ``window``.

    Burrow keeps a ring of the last ``intervals`` commits; Lagwatch sees a partition once per
    poll, so its ring is the raw samples of the polls before the latest (``polls``, oldest
    first, each timestamped with its poll), ended by the partition's latest state (``end``:
    the commit's own time where known). Nothing before the first commit, as in Burrow.
    """
    if row.end is None:
        return []
    keep = list(polls[max(len(polls) - (window - 1), 0) :]) if window > 1 else []
    return [*keep, row.end]


def consumer_topics(
    rows: Sequence[PartitionRow],
    polls: Mapping[tuple[str, int], Sequence[Offset]],
    window: int,
) -> dict[str, list[dict]]:
    """Burrow's ``ConsumerTopics``: per topic, one entry per partition id from 0.

    Burrow indexes each topic's list by partition id, so a partition the group has no row for
    (it never committed there) is an entry with no offsets, no owner and no lag, as Burrow
    answers for one it holds no commits of. ``polls``: each partition's raw samples, oldest
    first (``partition_offsets``).
    """
    by_topic: dict[str, dict[int, PartitionRow]] = {}
    for row in rows:
        by_topic.setdefault(row.topic, {})[row.partition] = row
    topics: dict[str, list[dict]] = {}
    for topic in sorted(by_topic):
        partitions = by_topic[topic]
        entries = []
        for n in range(max(partitions) + 1):
            row = partitions.get(n)
            if row is None:
                entries.append({"offsets": [], "owner": "", "client_id": "", "current-lag": 0})
                continue
            offsets = partition_offsets(row, polls.get((topic, n), ()), window)
            entries.append(
                {
                    "offsets": [offset_doc(o) for o in offsets],
                    "owner": row.owner,
                    "client_id": row.client_id,
                    "current-lag": max(row.current_lag or 0, 0) if offsets else 0,
                }
            )
        topics[topic] = entries
    return topics


def not_found_status(cluster: str, group: str) -> dict:
    """What Burrow's evaluator answers for an unknown cluster or group (served with 404)."""
    return {
        "cluster": cluster, "group": group, "status": "NOTFOUND", "complete": 1.0,
        "partitions": [], "partition_count": 0, "maxlag": None, "totallag": 0,
    }  # fmt: skip


def envelope(message: str, request_info: dict, **payload) -> dict:
    return {"error": False, "message": message, **payload, "request": request_info}


def error_doc(message: str, request_info: dict) -> dict:
    return {"error": True, "message": message, "request": request_info}
